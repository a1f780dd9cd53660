//! `tpsbench run --library DIR [--library DIR ...]`: the same plan against several llama.cpp
//! builds, each a child `tpsbench run --output json` with its library first on
//! LD_LIBRARY_PATH, in interleaved rounds (A B, B A, ...) so that the machine's drift hits
//! every build alike. A child's run of a test is one round of it (`TestRecord::add_round`),
//! one result file per build: pooling the rounds' samples would treat launches as
//! repetitions, and identical builds would then read as different 18-25% of the time.

use std::path::{Path, PathBuf};

use super::error::{OptionError, RunnerError};
use crate::record::{RunRecord, Status};

pub struct AbOptions {
    pub libraries: Vec<PathBuf>,
    pub rounds: u32,
    pub config: PathBuf,
    pub filters: Vec<String>,
    pub results_dir: Option<PathBuf>,
    pub quiet: bool,
}

/// Runs one child on one library set; a trait so the tests can stand in for processes.
pub trait Launcher {
    fn run(&mut self, lib_dir: &Path, args: &[String]) -> Result<RunRecord, RunnerError>;
}

/// The directory holding libllama: DIR itself, or DIR/lib (scripts/build-llama-shared and
/// scripts/reference-tools put the libraries there).
pub fn lib_dir(dir: &Path) -> Result<PathBuf, RunnerError> {
    let has_llama = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries.filter_map(|e| e.ok()).any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with("libllama.") || name.starts_with("libllama-")
            })
        })
    };
    [dir.to_path_buf(), dir.join("lib")]
        .into_iter()
        .find(|d| has_llama(d))
        .ok_or_else(|| RunnerError::NoLibrary {
            dir: dir.to_path_buf(),
        })
}

/// The order of the builds in round `round`: rotated by one each round, so with two builds
/// A B, B A, A B, ... and every build takes every position equally often.
pub fn order(round: usize, n: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n).collect()
}

/// The arguments of a child: the same plan, no file, JSON on stdout.
pub fn child_args(config: &Path, filters: &[String]) -> Vec<String> {
    let words = "run --no-save --quiet --output json --config".split(' ');
    let mut a: Vec<String> = words.map(String::from).collect();
    a.push(config.display().to_string());
    a.extend(filters.iter().flat_map(|f| ["--filter".into(), f.clone()]));
    a
}

/// Adds one round of a build: each test's next round; a test failed in any round stays failed.
pub fn merge_round(acc: &mut Option<RunRecord>, round: RunRecord, ci_target: Option<f64>) {
    let Some(all) = acc else {
        let mut first = round;
        first.run.rounds = 1;
        *acc = Some(first);
        return;
    };
    all.run.rounds += 1;
    for t in round.tests {
        let Some(mine) = all.tests.iter_mut().find(|x| x.id == t.id) else {
            all.tests.push(t);
            continue;
        };
        if t.status == Status::Failed {
            mine.fail(t.error.unwrap_or_else(|| "failed in a later round".into()));
        } else if mine.status == Status::Ok && !t.samples_ns.is_empty() {
            mine.add_round(t, ci_target);
        }
    }
}

/// Runs `rounds` interleaved rounds; returns each build's pooled record, in `libs` order.
pub fn run_rounds(
    libs: &[PathBuf],
    rounds: u32,
    args: &[String],
    ci_target: Option<f64>,
    launcher: &mut dyn Launcher,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<RunRecord>, RunnerError> {
    let mut acc: Vec<Option<RunRecord>> = vec![None; libs.len()];
    for r in 0..rounds as usize {
        for i in order(r, libs.len()) {
            note(&format!("round {}/{rounds}: {}", r + 1, libs[i].display()));
            let rec = launcher.run(&libs[i], args)?;
            merge_round(&mut acc[i], rec, ci_target);
        }
    }
    Ok(acc.into_iter().flatten().collect())
}

/// Starts real child processes: this executable, with the build's directory first on
/// LD_LIBRARY_PATH.
pub struct ProcessLauncher {
    pub exe: PathBuf,
}

impl Launcher for ProcessLauncher {
    fn run(&mut self, lib_dir: &Path, args: &[String]) -> Result<RunRecord, RunnerError> {
        let mut path = lib_dir.as_os_str().to_owned();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|o| !o.is_empty()) {
            path.push(":");
            path.push(old);
        }
        let out = std::process::Command::new(&self.exe)
            .args(args)
            .env("LD_LIBRARY_PATH", path)
            .stderr(std::process::Stdio::piped())
            .output()
            .map_err(|cause| RunnerError::Io {
                path: self.exe.clone(),
                cause,
            })?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Exit 1 means some tests failed: their records say why, and the pooling keeps that.
        if !(out.status.success() || out.status.code() == Some(1)) {
            let why = stderr.lines().rev().find(|l| !l.trim().is_empty());
            return Err(RunnerError::BuildFailed {
                lib: lib_dir.to_path_buf(),
                status: out.status,
                why: why.map(str::to_string),
            });
        }
        serde_json::from_slice(&out.stdout).map_err(|cause| RunnerError::BuildNoResult {
            lib: lib_dir.to_path_buf(),
            cause,
        })
    }
}

/// A file name for a build's pooled record: its position and directory name.
pub fn file_name(index: usize, lib: &Path) -> String {
    let dir = if lib.file_name().is_some_and(|n| n == "lib") {
        lib.parent().unwrap_or(lib)
    } else {
        lib
    };
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    format!("{index}-{}.json", crate::util::file_safe(&name))
}

/// The builds measured: each build's directory and pooled record, in `--library` order.
pub struct Measured {
    pub libs: Vec<PathBuf>,
    pub records: Vec<RunRecord>,
}

impl Measured {
    pub fn labels(&self) -> Vec<String> {
        self.libs.iter().map(|l| l.display().to_string()).collect()
    }

    pub fn any_failed(&self) -> bool {
        (self.records.iter())
            .flat_map(|r| &r.tests)
            .any(|t| t.status == Status::Failed)
    }
}

/// Runs the rounds on every build and writes one result file per build (unless told not
/// to).
pub fn measure(o: &AbOptions) -> Result<Measured, RunnerError> {
    if !cfg!(feature = "dynamic-link") {
        return Err(OptionError::LibraryNeedsDynamicLink.into());
    }
    if o.libraries.len() < 2 {
        return Err(OptionError::LibraryNeedsTwo.into());
    }
    if o.rounds == 0 {
        return Err(OptionError::RoundsBelowOne.into());
    }
    let cfg = crate::config::load(&o.config, crate::util::system::physical_cores())?;
    // Absolute: the children run elsewhere.
    let libs = o.libraries.iter().map(|d| {
        let lib = lib_dir(d)?;
        std::path::absolute(lib).map_err(RunnerError::LibraryPath)
    });
    let libs = libs.collect::<Result<Vec<_>, _>>()?;
    let exe = std::env::current_exe().map_err(RunnerError::NoExecutable)?;
    let args = child_args(&o.config, &o.filters);
    let mut note = |s: &str| {
        if !o.quiet {
            eprintln!("{s}");
        }
    };
    let records = run_rounds(
        &libs,
        o.rounds,
        &args,
        cfg.settings.ci_target,
        &mut ProcessLauncher { exe },
        &mut note,
    )?;
    let measured = Measured { libs, records };
    if let Some(dir) = &o.results_dir {
        write_files(dir, &measured)?;
    }
    Ok(measured)
}

/// One result file per build, in a fresh `ab-<time>` directory under `dir`.
fn write_files(dir: &Path, m: &Measured) -> Result<(), RunnerError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let dir = dir.join(format!("ab-{stamp}"));
    if let Err(cause) = std::fs::create_dir_all(&dir) {
        return Err(RunnerError::Io { path: dir, cause });
    }
    for (i, (lib, rec)) in m.libs.iter().zip(&m.records).enumerate() {
        crate::record::results::write_atomic(&dir.join(file_name(i, lib)), rec)?;
    }
    eprintln!(
        "results written to {}/ (one file per build; tpsbench compare FILE_A FILE_B)",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
