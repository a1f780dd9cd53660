//! `tpsbench leaderboard`: result files in, `LEADERBOARD.md` and a self-contained
//! `index.html` out. `load` reads, checks and deduplicates; `table` lays out the figures;
//! `markdown` and `html` write them; `charts`, `charts_lines` and `machines` select the
//! chart data, `facet` splits many series into small multiples, and `svg`, `svg_bars` and
//! `svg_scatter` draw them. A directory without result files gives a page that says so.

pub mod charts;
pub mod charts_lines;
pub mod charts_quant;
pub mod facet;
pub mod html;
pub mod load;
pub mod machine;
pub mod machines;
pub mod markdown;
pub mod svg;
pub mod svg_bars;
pub mod svg_scatter;
pub mod table;

use std::path::{Path, PathBuf};

pub use load::{Board, Entry, Exclude, Machine};

/// What `tpsbench leaderboard` reads and where it writes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files, or directories searched recursively for `*.json`.
    pub paths: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub exclude: Exclude,
}

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
        match load::read_file(p) {
            Ok((rec, raw)) => read.push((p.clone(), rec, raw)),
            Err(e) => invalid.push(e),
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
    } else if board.files_read == board.excluded.len() {
        format!(
            "all {} valid result files were excluded by --exclude-build / --exclude-tool-version",
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

/// Builds the board and writes both files into `out_dir` (created if missing).
pub fn run(opts: &Options) -> Result<Outcome, Failure> {
    let board = load(&opts.paths, &opts.exclude)?;
    let fail = |error: String| Failure {
        invalid: board.invalid.clone(),
        error,
    };
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", opts.out_dir.display())))?;
    let markdown = opts.out_dir.join("LEADERBOARD.md");
    write_atomic(&markdown, markdown::render(&board).as_bytes()).map_err(fail)?;
    let html = opts.out_dir.join("index.html");
    write_atomic(&html, html::render(&board).as_bytes()).map_err(fail)?;
    Ok(Outcome {
        board,
        markdown,
        html,
    })
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
    match run(opts) {
        Ok(out) => {
            for l in &out.board.invalid {
                eprintln!("skipped: {l}");
            }
            for l in &out.board.excluded {
                eprintln!("excluded: {l}");
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
