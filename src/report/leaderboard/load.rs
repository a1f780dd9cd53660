//! Reading result files for a leaderboard: collect the paths, check each file against the
//! schema (`record::verify`), drop excluded builds, and keep one measurement per (machine,
//! test identity): the newest. Everything is read from the typed record; the optional
//! extension fields (quality, serving, bytes per token) are its optional fields.
//!
//! `board` runs the steps in order, one function each: leave out excluded files
//! (`add_file`), flag runs and rows (`plausible`), keep the newest run and measured
//! bandwidth of each machine (`note_machine`), deduplicate (`insert`), estimate rooflines
//! (`roofline.rs`) and list failures without a measurement (`failures`). A flagged run or
//! row goes through one rule, `Board::flagged`: with --strict it is left out, otherwise kept
//! with a warning.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::entry::{self, Entry, ModelExtras, Serving};
pub use super::fingerprint::{Machine, hardware};
use super::options::{DEFAULT_KLD_BUDGET, Exclude};
use super::plausible::{self, Flag};
use crate::record::{RunInfo, RunRecord, Status, TestRecord};

/// Sort key of an RFC 3339 time: parsed instant first (so offsets compare right), the raw
/// text as a fallback for unparseable values, which sort first.
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
    /// 1, 5 and 15 minute load averages when the run started (absent in older files).
    pub load_average: Option<[f64; 3]>,
    pub command: String,
    pub n_tests: usize,
    /// The run's plausibility badges ("dirty", "busy", "fixture").
    pub badges: Vec<String>,
}

/// Everything the leaderboard shows, and what it left out.
#[derive(Debug, Clone, Default)]
pub struct Board {
    pub machines: Vec<Machine>,
    /// Measured tests, one per (machine, identity), sorted by machine, model, quant, test.
    pub entries: Vec<Entry>,
    /// Failed tests with no successful measurement of the same (machine, identity).
    pub failures: Vec<Entry>,
    pub files_read: usize,
    /// `file: reason`, one per invalid file.
    pub invalid: Vec<String>,
    /// `file: reason`, one per file dropped by --exclude-build / --exclude-tool-version.
    pub excluded: Vec<String>,
    /// Files dropped by --exclude-build, --exclude-tool-version or --strict.
    pub files_excluded: usize,
    /// `file: what`, one per flagged run or row that was kept (without --strict).
    pub warnings: Vec<String>,
    /// Older measurements replaced by a newer one of the same (machine, identity).
    pub superseded: usize,
    /// The files read (not excluded), by machine and start time.
    pub runs: Vec<RunSummary>,
    /// The KLD budget of the answers (`--kld-budget`); None: the default.
    pub kld_budget: Option<f64>,
    /// The newest tune answer of each machine and objective (`run.tune`).
    pub tunes: Vec<BoardTune>,
}

/// One machine's tune answer to one objective (the "Which configuration?" section).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardTune {
    /// Index into `Board::machines`.
    pub machine: usize,
    pub file: PathBuf,
    pub started_at: String,
    pub summary: crate::report::tune::Summary,
}

impl Board {
    /// The KLD budget of the one-line answers, in nats.
    pub fn kld_budget(&self) -> f64 {
        self.kld_budget.unwrap_or(DEFAULT_KLD_BUDGET)
    }
}

/// The speculative answers of the board's tests, each on its machine's short name.
pub fn speculative_answers(b: &Board) -> Vec<crate::report::speculative::SpecAnswer> {
    let names = machine_names(b);
    crate::report::speculative::answers(
        b.entries
            .iter()
            .map(|e| (&e.test, names[e.machine].as_str())),
    )
}

/// The served tests whose server drafted, a line each, beside the in-process speculative
/// test of the same target, draft and K on the same machine.
pub fn served_drafting(b: &Board) -> Vec<String> {
    let names = machine_names(b);
    crate::report::speculative::served(
        b.entries
            .iter()
            .map(|e| (&e.test, names[e.machine].as_str())),
    )
}

/// Short names of the machines: host names, or full labels where host names repeat.
pub fn machine_names(b: &Board) -> Vec<String> {
    b.machines
        .iter()
        .map(|m| {
            let same = b
                .machines
                .iter()
                .filter(|o| o.hostname == m.hostname)
                .count();
            if same > 1 {
                m.label()
            } else {
                m.hostname.clone()
            }
        })
        .collect()
}

/// The files to read: files as given, directories searched recursively for `*.json`
/// (sorted, so the result does not depend on directory order).
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

/// Reads one file: the record, checked against the schema and every figure the page shows
/// against its own samples (`record::verify::read_shown`).
pub fn read_file(path: &Path) -> Result<RunRecord, String> {
    crate::record::verify::read_shown(path).map_err(|e| e.to_string())
}

/// (machine key, test identity): what a measurement is deduplicated on.
type Key = (String, String);

/// The board while files are added to it (see the module doc for the steps).
struct Builder<'a> {
    exclude: &'a Exclude,
    board: Board,
    /// Measured and failed tests, kept apart.
    ok: BTreeMap<Key, Entry>,
    failed: BTreeMap<Key, Entry>,
    /// The newest run of each machine: its description, start and run.
    machines: BTreeMap<String, (Machine, String, RunInfo)>,
    /// The newest measured host bandwidth of each machine: start, GB/s, last-level cache.
    bandwidths: BTreeMap<String, (String, f64, Option<u64>)>,
    runs: Vec<(String, RunSummary)>,
    /// The duplicates each file held, reported as one line per file when the board is done.
    duplicates: BTreeMap<PathBuf, Duplicates>,
    /// By (machine key, objective): the newest tune so far.
    tunes: BTreeMap<Key, BoardTune>,
}

/// A file's measurements that another copy already gave (same machine, identity and test
/// time): counted, so that a file of 40,000 copies gets one line, not 40,000.
#[derive(Default)]
struct Duplicates {
    count: usize,
    /// The first one's id, and the files holding the copies kept.
    first: String,
    kept_in: std::collections::BTreeSet<PathBuf>,
}

impl Duplicates {
    /// The line's prefix after the file and what it says: "ID: " and "duplicate of ID in
    /// a.json (same machine, test and test time)" for one; for several, no prefix and
    /// "duplicate of measurements in a.json (same ...): 3 tests, the first ID".
    fn line(&self) -> (String, String) {
        let files: Vec<String> = self
            .kept_in
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let (files, same) = (files.join(", "), "(same machine, test and test time)");
        match self.count {
            1 => (
                format!("{}: ", self.first),
                format!("duplicate of {} in {files} {same}", self.first),
            ),
            n => (
                String::new(),
                format!(
                    "duplicate of measurements in {files} {same}: {n} tests, the first {}",
                    self.first
                ),
            ),
        }
    }
}

/// Builds the board from already-read files (pure: no I/O).
pub fn board(files: Vec<(PathBuf, RunRecord)>, exclude: &Exclude) -> Board {
    board_of(files.iter().map(|(p, r)| (p.as_path(), r)), exclude)
}

/// [`board`] of borrowed records: the answer at the end of a run builds it from the run's
/// record, which a copy would double.
pub fn board_of<'r>(
    files: impl ExactSizeIterator<Item = (&'r Path, &'r RunRecord)>,
    exclude: &Exclude,
) -> Board {
    let mut b = Builder {
        exclude,
        board: Board {
            files_read: files.len(),
            ..Board::default()
        },
        ok: BTreeMap::new(),
        failed: BTreeMap::new(),
        machines: BTreeMap::new(),
        bandwidths: BTreeMap::new(),
        runs: Vec::new(),
        duplicates: BTreeMap::new(),
        tunes: BTreeMap::new(),
    };
    for (path, rec) in files {
        b.add_file(path, rec);
    }
    b.finish()
}

impl Board {
    /// The one rule for a flagged run or row (`line` names it: `file: ` or `file: test: `):
    /// with --strict it is left out, otherwise kept with a warning. True when kept.
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

impl Builder<'_> {
    /// One file: left out when excluded or (with --strict) flagged, else its machine noted
    /// and each of its tests added.
    fn add_file(&mut self, path: &Path, rec: &RunRecord) {
        if let Some(why) = self.exclude.reason(&rec.run) {
            self.board
                .excluded
                .push(format!("{}: {why}", path.display()));
            self.board.files_excluded += 1;
            return;
        }
        let run_flags = plausible::run_flags(&rec.run);
        if !run_flags.is_empty() {
            let line = format!("{}: ", path.display());
            if !self
                .board
                .flagged(self.exclude.strict, &line, &details(&run_flags))
            {
                self.board.files_excluded += 1;
                return;
            }
        }
        let m = Machine::of(&rec.run);
        self.runs.push((m.key.clone(), summary(path, rec)));
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

    /// The newest run of a machine describes it; its newest measured host bandwidth stands
    /// in when that run has none.
    fn note_machine(&mut self, m: &Machine, run: &RunInfo) {
        let is_newer = |started: &str| newer(started, "", &run.started_at, "").is_lt();
        if self
            .machines
            .get(&m.key)
            .is_none_or(|(_, s, _)| is_newer(s))
        {
            let newest = (m.clone(), run.started_at.clone(), run.clone());
            self.machines.insert(m.key.clone(), newest);
        }
        if let Some(g) = m.bandwidth_gbs
            && self
                .bandwidths
                .get(&m.key)
                .is_none_or(|(s, _, _)| is_newer(s))
        {
            let newest = (run.started_at.clone(), g, m.llc_bytes);
            self.bandwidths.insert(m.key.clone(), newest);
        }
    }

    /// The file's tune, if it is the newest of its machine and objective so far.
    fn note_tune(&mut self, machine: &str, path: &Path, rec: &RunRecord) {
        let Some(summary) = crate::report::tune::summary(rec) else {
            return;
        };
        let slot = (machine.to_string(), summary.objective.clone());
        let started = &rec.run.started_at;
        let newest = |t: &BoardTune| newer(&t.started_at, "", started, "").is_lt();
        if self.tunes.get(&slot).is_none_or(newest) {
            let tune = BoardTune {
                machine: 0,
                file: path.to_path_buf(),
                started_at: started.clone(),
                summary,
            };
            self.tunes.insert(slot, tune);
        }
    }

    /// One test of a kept file: its row flags, then its entry into the board.
    fn add_test(
        &mut self,
        path: &Path,
        rec: &RunRecord,
        t: &TestRecord,
        machine: &str,
        run_flags: &[Flag],
    ) {
        let model = rec.models.iter().find(|x| x.name == t.model);
        let measured = t.status == Status::Ok && t.avg_ts.is_some();
        let row_flags = if measured {
            plausible::entry_flags(t, model)
        } else {
            vec![]
        };
        if !row_flags.is_empty() {
            let line = format!("{}: {}: ", path.display(), t.id);
            if !self
                .board
                .flagged(self.exclude.strict, &line, &details(&row_flags))
            {
                return;
            }
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
            model: model.map(ModelExtras::from).unwrap_or_default(),
            serving: t.serving.as_deref().and_then(Serving::of),
            badges: model.map(entry::badges).unwrap_or_default(),
            flags: run_flags.iter().cloned().chain(row_flags).collect(),
            roofline_estimate: None,
            auto_max_rounds: rec.run.rounds_auto.as_ref().map(|a| a.max_rounds),
        };
        let key = (machine.to_string(), t.identity.clone());
        self.insert(key, entry, measured);
    }

    /// Keeps one entry per (machine, identity): the newest. The same measurement read twice
    /// (a copied file, a merged file beside its shards) is a flagged duplicate.
    fn insert(&mut self, key: Key, entry: Entry, measured: bool) {
        let id = entry.test.id.clone();
        let map = if measured {
            &mut self.ok
        } else {
            &mut self.failed
        };
        match map.get_mut(&key) {
            Some(old) if measured && old.test.test_time == entry.test.test_time => {
                // The newer run's copy is kept, the other named.
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
            None => {
                map.insert(key, entry);
            }
        }
    }

    /// The machines, the measured entries with their roofline flags, the failures without
    /// a measurement and the runs, each pointing at its machine by index.
    fn finish(self) -> Board {
        let Builder {
            exclude,
            mut board,
            ok,
            failed,
            machines,
            bandwidths,
            runs,
            duplicates,
            tunes,
        } = self;
        for (file, d) in &duplicates {
            let (test, what) = d.line();
            board.flagged(
                exclude.strict,
                &format!("{}: {test}", file.display()),
                &what,
            );
        }
        board.machines = with_bandwidth(machines, &bandwidths);
        let ms = &board.machines;
        let placed = |mk: &str, e: Entry| Entry {
            machine: machine_index(ms, mk),
            ..e
        };
        let mut failures: Vec<Entry> = failed
            .into_iter()
            .filter(|(key, _)| !ok.contains_key(key))
            .map(|((mk, _), e)| placed(&mk, e))
            .collect();
        let measured: Vec<Entry> = ok.into_iter().map(|((mk, _), e)| placed(&mk, e)).collect();
        let mut entries = roofline_flags(&mut board, measured, exclude.strict);
        entries.sort_by(order);
        failures.sort_by(order);
        board.runs = place_runs(runs, &board.machines);
        board.tunes = (tunes.into_iter())
            .map(|((mk, _), t)| BoardTune {
                machine: machine_index(&board.machines, &mk),
                ..t
            })
            .collect();
        // By machine, then objective (the map's order is by machine key).
        board.tunes.sort_by(|a, b| {
            (a.machine, &a.summary.objective).cmp(&(b.machine, &b.summary.objective))
        });
        board.entries = entries;
        board.failures = failures;
        board
    }
}

fn machine_index(machines: &[Machine], key: &str) -> usize {
    machines.iter().position(|m| m.key == key).unwrap_or(0)
}

/// The runs, each pointing at its machine, by machine, start and file.
fn place_runs(runs: Vec<(String, RunSummary)>, machines: &[Machine]) -> Vec<RunSummary> {
    let mut v: Vec<RunSummary> = runs
        .into_iter()
        .map(|(mk, r)| RunSummary {
            machine: machine_index(machines, &mk),
            ..r
        })
        .collect();
    v.sort_by(|x, y| {
        (x.machine, time_key(&x.started_at), &x.file).cmp(&(
            y.machine,
            time_key(&y.started_at),
            &y.file,
        ))
    });
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

/// Board order: machine, model, quant, then as the plan runs (threads, depth, prefill before
/// decode, sizes).
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

/// The flags' details, joined into one line.
fn details(flags: &[Flag]) -> String {
    flags
        .iter()
        .map(Flag::detail)
        .collect::<Vec<_>>()
        .join("; ")
}

fn summary(path: &Path, rec: &RunRecord) -> RunSummary {
    RunSummary {
        machine: 0,
        file: path.to_path_buf(),
        started_at: rec.run.started_at.clone(),
        load_average: rec.run.load_average,
        command: rec.run.command.join(" "),
        n_tests: rec.tests.len(),
        badges: {
            let mut v: Vec<String> = plausible::run_flags(&rec.run)
                .iter()
                .map(|f| f.badge().to_string())
                .collect();
            v.dedup();
            v
        },
    }
}

mod roofline;
use roofline::{roofline_flags, with_bandwidth};

#[cfg(test)]
mod tests;
