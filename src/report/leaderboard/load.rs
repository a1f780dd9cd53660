//! Reading result files into a board: each file checked (`record::verify`), excluded
//! builds dropped, one measurement kept per (machine, test identity): the newest. Every
//! flagged run or row goes through `Board::flagged`: left out with --strict, else warned.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) mod entry;
pub(crate) mod fingerprint;
pub(crate) mod plausible;

use super::options::{DEFAULT_KLD_BUDGET, Exclude};
use crate::record::{RunInfo, RunRecord, Status, TestRecord};
use entry::Entry;
pub use fingerprint::{Machine, hardware};
use plausible::Flag;

/// Sort key of an RFC 3339 time: the instant (so offsets compare right), unparseable first.
pub fn time_key(s: &str) -> (Option<i64>, String) {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .and_then(|d| d.timestamp_nanos_opt());
    (t, s.to_string())
}

/// Which of two measurements is newer: by test time, then by the run's start time.
pub fn newer(a_test: &str, a_run: &str, b_test: &str, b_run: &str) -> Ordering {
    time_key(a_test)
        .cmp(&time_key(b_test))
        .then_with(|| time_key(a_run).cmp(&time_key(b_run)))
}

/// One result file as the page lists it under its machine.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Index into `Board::machines`.
    pub machine: usize,
    pub file: PathBuf,
    pub started_at: String,
    pub load_average: Option<[f64; 3]>,
    pub command: String,
    pub n_tests: usize,
    pub badges: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Board {
    pub machines: Vec<Machine>,
    /// Measured tests, one per (machine, identity), sorted by machine, model, quant, test.
    pub entries: Vec<Entry>,
    /// Failed tests with no successful measurement of the same (machine, identity).
    pub failures: Vec<Entry>,
    pub files_read: usize,
    pub invalid: Vec<String>,
    /// `file: reason`, per file or row left out.
    pub excluded: Vec<String>,
    /// Files dropped by --exclude-build, --exclude-tool-version or --strict.
    pub files_excluded: usize,
    /// `file: what`, per flagged run or row kept.
    pub warnings: Vec<String>,
    /// Older measurements replaced by a newer one of the same (machine, identity).
    pub superseded: usize,
    pub runs: Vec<RunSummary>,
    /// `--kld-budget`; None: the default.
    pub kld_budget: Option<f64>,
    pub tunes: Vec<BoardTune>,
}

/// One machine's tune answer to one objective (the "Which configuration?" section).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardTune {
    pub machine: usize,
    pub file: PathBuf,
    pub started_at: String,
    pub summary: crate::report::tune::Summary,
}

/// Short names of the machines: host names, or full labels where host names repeat.
pub fn machine_names(b: &Board) -> Vec<String> {
    let hosts = |h: &str| b.machines.iter().filter(|o| o.hostname == h).count();
    (b.machines.iter())
        .map(|m| match hosts(&m.hostname) {
            1 => m.hostname.clone(),
            _ => m.label(),
        })
        .collect()
}

/// Files as given, directories searched recursively for `*.json` (sorted).
pub fn collect_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out).map_err(|e| format!("{}: {e}", p.display()))?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
    Ok(())
}

/// (machine key, test identity): what a measurement is deduplicated on.
type Key = (String, String);

#[derive(Default)]
struct Builder {
    exclude: Exclude,
    board: Board,
    ok: BTreeMap<Key, Entry>,
    failed: BTreeMap<Key, Entry>,
    machines: BTreeMap<String, (String, (Machine, RunInfo))>,
    /// The newest measured host bandwidth: GB/s, last-level cache.
    bandwidths: BTreeMap<String, (String, (f64, Option<u64>))>,
    runs: Vec<(String, RunSummary)>,
    duplicates: BTreeMap<PathBuf, Duplicates>,
    tunes: BTreeMap<Key, (String, BoardTune)>,
}

/// A file's copies of measurements read before: counted, so that a file of 40,000 copies
/// gets one line.
#[derive(Default)]
struct Duplicates {
    count: usize,
    first: String,
    kept_in: std::collections::BTreeSet<PathBuf>,
}

impl Duplicates {
    /// The line's prefix after the file ("ID: " for one copy) and what it says.
    fn line(&self) -> (String, String) {
        let shown = |p: &PathBuf| p.display().to_string();
        let files: Vec<String> = self.kept_in.iter().map(shown).collect();
        let (files, same) = (files.join(", "), "(same machine, test and test time)");
        let first = &self.first;
        match self.count {
            1 => (
                format!("{first}: "),
                format!("duplicate of {first} in {files} {same}"),
            ),
            n => (
                String::new(),
                format!(
                    "duplicate of measurements in {files} {same}: {n} tests, the first {first}"
                ),
            ),
        }
    }
}

pub fn board(files: Vec<(PathBuf, RunRecord)>, exclude: &Exclude) -> Board {
    board_of(files.iter().map(|(p, r)| (p.as_path(), r)), exclude)
}

/// [`board`] of borrowed records (the end of a run has one it should not copy).
pub fn board_of<'r>(
    files: impl ExactSizeIterator<Item = (&'r Path, &'r RunRecord)>,
    exclude: &Exclude,
) -> Board {
    let mut b = Builder {
        exclude: exclude.clone(),
        board: Board {
            files_read: files.len(),
            ..Board::default()
        },
        ..Builder::default()
    };
    for (path, rec) in files {
        b.add_file(path, rec);
    }
    b.finish()
}

impl Board {
    pub fn kld_budget(&self) -> f64 {
        self.kld_budget.unwrap_or(DEFAULT_KLD_BUDGET)
    }

    /// A flagged run or row (`line`: `file: ` or `file: test: `): true when kept.
    fn flagged(&mut self, strict: bool, line: &str, what: &str) -> bool {
        if strict {
            self.excluded
                .push(format!("{line}left out by --strict: {what}"));
        } else {
            self.warnings.push(format!("{line}{what}"));
        }
        !strict
    }
}

impl Builder {
    fn add_file(&mut self, path: &Path, rec: &RunRecord) {
        if let Some(why) = self.exclude.reason(&rec.run) {
            self.board
                .excluded
                .push(format!("{}: {why}", path.display()));
            self.board.files_excluded += 1;
            return;
        }
        let run_flags = plausible::run_flags(&rec.run);
        if !self.kept(format!("{}: ", path.display()), &run_flags) {
            self.board.files_excluded += 1;
            return;
        }
        let m = Machine::of(&rec.run);
        self.runs
            .push((m.key.clone(), summary(path, rec, &run_flags)));
        self.note_machine(&m, &rec.run);
        self.note_tune(&m.key, path, rec);
        for t in &rec.tests {
            // A quality test has no rate: its figures are the model's (models[].quality).
            if t.kind == crate::plan::TestKind::Quality && t.status == Status::Ok {
                continue;
            }
            self.add_test(path, rec, t, &m.key, &run_flags);
        }
    }

    /// The newest run describes a machine; the newest measured bandwidth stands in.
    fn note_machine(&mut self, m: &Machine, run: &RunInfo) {
        let (key, started) = (&m.key, &run.started_at);
        keep_newest(&mut self.machines, key, started, || {
            (m.clone(), run.clone())
        });
        if let Some(g) = m.bandwidth_gbs {
            keep_newest(&mut self.bandwidths, key, started, || (g, m.llc_bytes));
        }
    }

    /// False when flagged (`line`: as [`Board::flagged`]'s) and left out.
    fn kept(&mut self, line: String, flags: &[Flag]) -> bool {
        let details: Vec<&str> = flags.iter().map(Flag::detail).collect();
        flags.is_empty()
            || self
                .board
                .flagged(self.exclude.strict, &line, &details.join("; "))
    }

    fn note_tune(&mut self, machine: &str, path: &Path, rec: &RunRecord) {
        let Some(summary) = crate::report::tune::summary(rec) else {
            return;
        };
        let slot = (machine.to_string(), summary.tune.objective.clone());
        let started = &rec.run.started_at;
        keep_newest(&mut self.tunes, &slot, started, || BoardTune {
            machine: 0,
            file: path.to_path_buf(),
            started_at: started.clone(),
            summary,
        });
    }

    fn add_test(
        &mut self,
        path: &Path,
        rec: &RunRecord,
        t: &TestRecord,
        machine: &str,
        run_flags: &[Flag],
    ) {
        let model = rec.model_of(t);
        let measured = t.status == Status::Ok && t.avg_ts.is_some();
        let row_flags = if measured {
            plausible::entry_flags(t, model)
        } else {
            vec![]
        };
        if !self.kept(format!("{}: {}: ", path.display(), t.id), &row_flags) {
            return;
        }
        let quant = model
            .and_then(|m| m.quantization.clone())
            .or_else(|| t.id.split('/').nth(1).map(str::to_string))
            .unwrap_or_else(|| "?".into());
        let entry = Entry {
            machine: 0,
            quant,
            test: t.clone(),
            run_started_at: rec.run.started_at.clone(),
            file: path.to_path_buf(),
            model: model.cloned().unwrap_or_default(),
            badges: model.map(entry::badges).unwrap_or_default(),
            flags: run_flags.iter().cloned().chain(row_flags).collect(),
            roofline_estimate: None,
            auto_max_rounds: rec.run.rounds_auto.as_ref().map(|a| a.max_rounds),
        };
        let key = (machine.to_string(), t.identity.clone());
        self.insert(key, entry, measured);
    }

    /// Keeps the newest per (machine, identity); the same measurement read twice (a copied
    /// file, a merged file beside its shards) is a flagged duplicate.
    fn insert(&mut self, key: Key, entry: Entry, measured: bool) {
        let id = entry.test.id.clone();
        let map = if measured {
            &mut self.ok
        } else {
            &mut self.failed
        };
        match map.get_mut(&key) {
            Some(old) if measured && old.test.test_time == entry.test.test_time => {
                let dropped = if is_newer(old, &entry) {
                    entry
                } else {
                    std::mem::replace(old, entry)
                };
                let d = self.duplicates.entry(dropped.file.clone()).or_default();
                d.count += 1;
                if d.first.is_empty() {
                    d.first = id;
                }
                d.kept_in.insert(old.file.clone());
                // Without --strict the copy kept says where else it is, once per file.
                let also = Flag::Duplicate(format!("also in {}", dropped.file.display()));
                if !self.exclude.strict && !old.flags.contains(&also) {
                    old.flags.push(also);
                }
            }
            Some(old) if is_newer(old, &entry) => self.board.superseded += 1,
            Some(_) => {
                self.board.superseded += 1;
                map.insert(key, entry);
            }
            None => _ = map.insert(key, entry),
        }
    }

    fn finish(self) -> Board {
        let (strict, mut board, ok) = (self.exclude.strict, self.board, self.ok);
        for (file, d) in &self.duplicates {
            let (test, what) = d.line();
            board.flagged(strict, &format!("{}: {test}", file.display()), &what);
        }
        board.machines = with_bandwidth(self.machines, &self.bandwidths);
        let ms = &board.machines;
        let placed = |mk: &str, e: Entry| Entry {
            machine: machine_index(ms, mk),
            ..e
        };
        board.failures = (self.failed.into_iter())
            .filter(|(key, _)| !ok.contains_key(key))
            .map(|((mk, _), e)| placed(&mk, e))
            .collect();
        let measured: Vec<Entry> = ok.into_iter().map(|((mk, _), e)| placed(&mk, e)).collect();
        board.entries = roofline_flags(&mut board, measured, strict);
        board.entries.sort_by(order);
        board.failures.sort_by(order);
        board.runs = place_runs(self.runs, &board.machines);
        board.tunes = (self.tunes.into_iter())
            .map(|((mk, _), (_, t))| BoardTune {
                machine: machine_index(&board.machines, &mk),
                ..t
            })
            .collect();
        board
            .tunes
            .sort_by_key(|t| (t.machine, t.summary.tune.objective.clone()));
        board
    }
}

/// Puts `value()` at `key` unless what is there comes from a run started later.
fn keep_newest<K: Ord + Clone, V>(
    map: &mut BTreeMap<K, (String, V)>,
    key: &K,
    started: &str,
    value: impl FnOnce() -> V,
) {
    if map
        .get(key)
        .is_none_or(|(s, _)| newer(s, "", started, "").is_lt())
    {
        map.insert(key.clone(), (started.to_string(), value()));
    }
}

fn machine_index(machines: &[Machine], key: &str) -> usize {
    machines.iter().position(|m| m.key == key).unwrap_or(0)
}

fn place_runs(runs: Vec<(String, RunSummary)>, machines: &[Machine]) -> Vec<RunSummary> {
    let mut v: Vec<RunSummary> = (runs.into_iter())
        .map(|(mk, r)| RunSummary {
            machine: machine_index(machines, &mk),
            ..r
        })
        .collect();
    v.sort_by_key(|r| (r.machine, time_key(&r.started_at), r.file.clone()));
    v
}

/// True when `old` is at least as new as `new` (ties keep the first seen).
fn is_newer(old: &Entry, new: &Entry) -> bool {
    newer(
        &old.test.test_time,
        &old.run_started_at,
        &new.test.test_time,
        &new.run_started_at,
    )
    .is_ge()
}

/// Board order: machine, model, quant, then as the plan runs.
fn order(a: &Entry, b: &Entry) -> Ordering {
    let key = |e: &Entry| {
        let p = &e.test.params;
        (
            e.machine,
            e.test.model.clone(),
            e.quant.clone(),
            p.n_threads,
            p.n_depth,
            p.n_prompt == 0,
            p.n_prompt,
            p.n_gen,
            e.test.id.clone(),
        )
    };
    key(a).cmp(&key(b))
}

fn summary(path: &Path, rec: &RunRecord, flags: &[Flag]) -> RunSummary {
    let mut badges: Vec<String> = flags.iter().map(|f| f.badge().to_string()).collect();
    badges.dedup();
    RunSummary {
        machine: 0,
        file: path.to_path_buf(),
        started_at: rec.run.started_at.clone(),
        load_average: rec.run.load_average,
        command: rec.run.command.join(" "),
        n_tests: rec.tests.len(),
        badges,
    }
}

mod roofline;
use roofline::{roofline_flags, with_bandwidth};

#[cfg(test)]
mod tests;
