//! `tpsbench leaderboard`: result files in, `LEADERBOARD.md` and a self-contained
//! `index.html` out. `load` reads them into a board; `table`, `grid`, `answer` and `tunes`
//! lay out what it says; `sections` writes each section once to both files, `page` frames
//! the HTML one; `charts` chooses what each chart draws and `charts::svg` draws it.

pub(crate) mod answer;
pub mod answer_run;
pub(crate) mod charts;
pub(crate) mod grid;
pub(crate) mod load;
pub(crate) mod options;
pub(crate) mod page;
pub(crate) mod sections;
pub(crate) mod table;
pub(crate) mod tunes;

use std::path::{Path, PathBuf};

pub use load::entry::Entry;
pub use load::{Board, Machine};
pub use options::{DEFAULT_KLD_BUDGET, Exclude, Options};

pub struct Outcome {
    pub board: Board,
    pub markdown: PathBuf,
    pub html: PathBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub invalid: Vec<String>,
    pub error: String,
}

/// Reads every file (invalid ones skipped and listed) into the board; fails when a path is
/// missing or no valid, kept file remains (no file at all: an empty board).
pub fn load(paths: &[PathBuf], exclude: &Exclude) -> Result<Board, Failure> {
    let files = load::collect_paths(paths).map_err(|error| Failure {
        invalid: vec![],
        error,
    })?;
    if files.is_empty() {
        return Ok(Board::default());
    }
    let mut read = Vec::new();
    let mut invalid = Vec::new();
    for p in &files {
        // Relative to its input: the page shows no absolute path.
        let name = relative_name(paths, p);
        match crate::record::verify::read_shown(p).map_err(|e| e.to_string()) {
            Ok(rec) => read.push((name, rec)),
            Err(e) => {
                invalid.push(e.replace(&p.display().to_string(), &name.display().to_string()))
            }
        }
    }
    let mut board = load::board(read, exclude);
    board.invalid = invalid;
    let error = if board.files_read == 0 {
        format!(
            "no valid result file among {} in {}",
            sections::count(files.len(), "file"),
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else if board.files_read == board.files_excluded {
        format!(
            "all {} valid result files were excluded by --exclude-build / --exclude-tool-version / --strict",
            board.files_read
        )
    } else {
        return Ok(board);
    };
    Err(Failure {
        invalid: board.invalid,
        error,
    })
}

pub(crate) fn relative_name(inputs: &[PathBuf], file: &Path) -> PathBuf {
    inputs
        .iter()
        .filter(|i| i.is_dir())
        .find_map(|i| file.strip_prefix(i).ok())
        .map(Path::to_path_buf)
        .or_else(|| file.file_name().map(PathBuf::from))
        .unwrap_or_else(|| file.to_path_buf())
}

pub fn build(board: &Board) -> [(&'static str, String); 2] {
    [
        ("LEADERBOARD.md", sections::markdown(board)),
        ("index.html", page::render(board)),
    ]
}

pub fn run(opts: &Options) -> Result<Outcome, Failure> {
    let mut board = load(&opts.paths, &opts.exclude)?;
    board.kld_budget = Some(opts.kld_budget);
    let fail = |error: String| Failure {
        invalid: board.invalid.clone(),
        error,
    };
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", opts.out_dir.display())))?;
    for (name, text) in build(&board) {
        write_atomic(&opts.out_dir.join(name), text.as_bytes()).map_err(fail)?;
    }
    Ok(Outcome {
        markdown: opts.out_dir.join("LEADERBOARD.md"),
        html: opts.out_dir.join("index.html"),
        board,
    })
}

/// `--check`: the first file in `out_dir` that differs from what the board builds.
pub fn check(board: &Board, out_dir: &Path) -> Option<String> {
    for (name, text) in build(board) {
        let path = out_dir.join(name);
        match std::fs::read(&path) {
            Ok(bytes) if bytes == text.as_bytes() => {}
            Ok(bytes) => {
                let at = bytes
                    .iter()
                    .zip(text.as_bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(bytes.len().min(text.len()));
                return Some(format!(
                    "{} differs from what the result files build (first difference at byte {at}): rebuild it with tpsbench leaderboard",
                    path.display()
                ));
            }
            Err(e) => return Some(format!("{}: {e}", path.display())),
        }
    }
    None
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The `tpsbench leaderboard` command; returns the exit code.
pub fn command(opts: &Options) -> i32 {
    if opts.check {
        return match load(&opts.paths, &opts.exclude) {
            Ok(mut board) => {
                board.kld_budget = Some(opts.kld_budget);
                // A published set shows hardware, never a directory layout or a host name.
                if let Some(line) = crate::report::publish::first_exposed(&opts.paths) {
                    eprintln!("error: {line}");
                    return 1;
                }
                match check(&board, &opts.out_dir) {
                    None => {
                        eprintln!(
                            "{}: LEADERBOARD.md and index.html are what the result files build",
                            opts.out_dir.display()
                        );
                        0
                    }
                    Some(line) => {
                        eprintln!("error: {line}");
                        1
                    }
                }
            }
            Err(f) => {
                eprintln!("error: {}", f.error);
                2
            }
        };
    }
    match run(opts) {
        Ok(out) => {
            for l in &out.board.invalid {
                eprintln!("skipped: {l}");
            }
            for l in &out.board.excluded {
                eprintln!("excluded: {l}");
            }
            for l in &out.board.warnings {
                eprintln!("warning: {l}");
            }
            eprintln!("{}", sections::summary_line(&out.board));
            eprintln!(
                "wrote {} and {}",
                out.markdown.display(),
                out.html.display()
            );
            0
        }
        Err(f) => {
            for l in &f.invalid {
                eprintln!("skipped: {l}");
            }
            eprintln!("error: {}", f.error);
            2
        }
    }
}

#[cfg(test)]
pub(crate) mod testdata;
