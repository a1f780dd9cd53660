//! `tpsbench leaderboard`: result files in, `LEADERBOARD.md` and a self-contained
//! `index.html` out. `options` holds what the command is asked; `load` reads, checks and
//! deduplicates into `entry::Entry`s (typed views of the result files' records); `table`
//! and `grid` lay out the figures, `answer` and `tunes` the answers; `markdown` and `page`
//! write them; `charts` selects what each chart draws and `svg` draws it (axes, scales,
//! legend under every chart). A directory without result files gives a page that says so.

pub(crate) mod answer;
pub mod answer_run;
pub(crate) mod charts;
pub(crate) mod entry;
pub(crate) mod fingerprint;
pub(crate) mod grid;
pub(crate) mod load;
pub(crate) mod markdown;
pub(crate) mod options;
pub(crate) mod page;
pub(crate) mod plausible;
pub(crate) mod svg;
pub(crate) mod table;
pub(crate) mod tunes;

use std::path::{Path, PathBuf};

pub use entry::Entry;
pub use load::{Board, Machine};
pub use options::{DEFAULT_KLD_BUDGET, Exclude, Options};

/// What a leaderboard run produced.
pub struct Outcome {
    pub board: Board,
    pub markdown: PathBuf,
    pub html: PathBuf,
}

/// Why no leaderboard was written: the invalid files (one line each) and the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub invalid: Vec<String>,
    pub error: String,
}

/// Reads every file (invalid ones are recorded in `Board::invalid` and skipped) and builds
/// the board. Fails when a path is missing, or when there are result files but no valid,
/// non-excluded one remains; no result file at all gives an empty board ("no results yet").
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
        // The page names each file relative to the input it was found under, so that it
        // shows no absolute path and does not depend on where the inputs are.
        let name = relative_name(paths, p);
        match load::read_file(p) {
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
            "no valid result file among {} file{} in {}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
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

/// `file` named relative to the input (a directory) it was found under, or by its file
/// name when it was given as a file.
pub(crate) fn relative_name(inputs: &[PathBuf], file: &Path) -> PathBuf {
    inputs
        .iter()
        .filter(|i| i.is_dir())
        .find_map(|i| file.strip_prefix(i).ok())
        .map(Path::to_path_buf)
        .or_else(|| file.file_name().map(PathBuf::from))
        .unwrap_or_else(|| file.to_path_buf())
}

/// The two files the board builds to, in memory: (file name, contents).
pub fn build(board: &Board) -> [(&'static str, String); 2] {
    [
        ("LEADERBOARD.md", markdown::render(board)),
        ("index.html", page::render(board)),
    ]
}

/// Builds the board and writes both files into `out_dir` (created if missing).
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

/// `--check`: the first file in `out_dir` that differs from what the board builds (or is
/// missing), as one line; None when both match byte for byte.
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

/// The `tpsbench leaderboard` command: prints one line per invalid file on stderr, writes
/// the files, and returns the exit code (0, or 2 when nothing valid could be read).
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
            eprintln!("{}", markdown::summary_line(&out.board));
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
