//! `tpsbench leaderboard`: result files in, `LEADERBOARD.md` and a self-contained
//! `index.html` out; `sections` writes each section once to both files.

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

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub invalid: Vec<String>,
    pub error: String,
}

/// Every file into the board (invalid ones listed); fails when a path is missing or no valid,
/// kept file remains (no file at all: an empty board).
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
        let given: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let files = sections::count(files.len(), "file");
        format!("no valid result file among {files} in {}", given.join(", "))
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
    (inputs.iter())
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

/// `--check`: the first file in `out_dir` that differs from what the board builds.
pub fn check(board: &Board, out_dir: &Path) -> Option<String> {
    for (name, text) in build(board) {
        let path = out_dir.join(name);
        match std::fs::read(&path) {
            Ok(bytes) if bytes == text.as_bytes() => {}
            Ok(bytes) => {
                let at = (bytes.iter().zip(text.as_bytes()))
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

/// The `tpsbench leaderboard` command; returns the exit code.
pub fn command(opts: &Options) -> i32 {
    let fail = |invalid: &[String], error: &str| {
        if !opts.check {
            invalid.iter().for_each(|l| eprintln!("skipped: {l}"));
        }
        eprintln!("error: {error}");
        2
    };
    let mut board = match load(&opts.paths, &opts.exclude) {
        Ok(board) => board,
        Err(f) => return fail(&f.invalid, &f.error),
    };
    board.kld_budget = Some(opts.kld_budget);
    if opts.check {
        // A published set shows hardware, never a directory layout or a host name.
        let problem = crate::report::publish::first_exposed(&opts.paths)
            .or_else(|| check(&board, &opts.out_dir));
        if let Some(line) = problem {
            eprintln!("error: {line}");
            return 1;
        }
        eprintln!(
            "{}: LEADERBOARD.md and index.html are what the result files build",
            opts.out_dir.display()
        );
        return 0;
    }
    if let Err(e) = std::fs::create_dir_all(&opts.out_dir) {
        return fail(
            &board.invalid,
            &format!("cannot create {}: {e}", opts.out_dir.display()),
        );
    }
    for (name, text) in build(&board) {
        let path = opts.out_dir.join(name);
        if let Err(e) = crate::report::write_atomic(&path, text.as_bytes()) {
            return fail(
                &board.invalid,
                &format!("cannot write {}: {e}", path.display()),
            );
        }
    }
    for (word, lines) in [
        ("skipped", &board.invalid),
        ("excluded", &board.excluded),
        ("warning", &board.warnings),
    ] {
        lines.iter().for_each(|l| eprintln!("{word}: {l}"));
    }
    eprintln!("{}", sections::summary_line(&board));
    let out = |name: &str| opts.out_dir.join(name).display().to_string();
    eprintln!("wrote {} and {}", out("LEADERBOARD.md"), out("index.html"));
    0
}

#[cfg(test)]
pub(crate) mod testdata;
