//! `tpsbench compare A B`: joins two result sets' tests on their key properties (as
//! compare-llama-bench.py), each pair a speedup with its interval and a verdict from the
//! medians of its rounds (`stats::compare`); and `tpsbench noise`'s per-machine floor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod error;
pub use error::CompareError;

use crate::record::{RunRecord, Status, TestRecord, results};
use crate::stats::compare::{
    Comparison, FloorSource, Measured, Method, NoiseFloor, Settings, Verdict, compare,
};

/// Default location of named baselines (like criterion's target/criterion/*/NAME).
pub const BASELINE_DIR: &str = "target/tpsbench/baselines";

/// One side of a comparison: tests with the model's sha256 alongside.
pub struct Side {
    pub tests: Vec<(String, TestRecord)>,
    /// The machine the side ran on ([`machine_key`]), where its noise floor is stored.
    pub machine: Option<String>,
    /// Its run (machine and start time): two sides of one run are paired by round.
    pub launch: Option<String>,
}

/// Resolves a file, a directory of result files, or a named baseline in `baseline_dir`.
pub fn load_side(spec: &str, baseline_dir: &Path) -> Result<Side, CompareError> {
    let path = PathBuf::from(spec);
    let spec_ = || spec.to_string();
    let files: Vec<PathBuf> = if path.is_file() {
        vec![path.clone()]
    } else if path.is_dir() {
        let v = results::json_files(&path).map_err(|cause| CompareError::ReadDir {
            spec: spec_(),
            cause,
        })?;
        if v.is_empty() {
            return Err(CompareError::NoResultFiles { spec: spec_() });
        }
        v
    } else {
        let b = baseline_dir.join(format!("{spec}.json"));
        if !b.is_file() {
            return Err(CompareError::NoSide {
                spec: spec_(),
                baseline_dir: baseline_dir.to_path_buf(),
            });
        }
        vec![b]
    };
    // Later files win for the same test identity: sorted names are start times.
    let mut by_identity: BTreeMap<String, (String, TestRecord)> = BTreeMap::new();
    let mut machine = None;
    let mut launches: Vec<String> = Vec::new();
    for f in &files {
        let run = crate::record::verify::read_shown(f)?;
        machine = Some(machine_key(&run));
        launches.push(launch_key(&run));
        for t in sides_tests(&run) {
            by_identity.insert(t.1.identity.clone(), t);
        }
    }
    let mut tests: Vec<(String, TestRecord)> = by_identity.into_values().collect();
    tests.sort_by(|a, b| a.1.id.cmp(&b.1.id));
    launches.dedup();
    Ok(Side {
        tests,
        machine,
        // Several runs pooled are several launches: nothing to pair with.
        launch: (launches.len() == 1).then(|| launches.remove(0)),
    })
}

fn launch_key(run: &RunRecord) -> String {
    format!("{}@{}", machine_key(run), run.run.started_at)
}

pub fn side_of_run(run: &RunRecord) -> Side {
    Side {
        tests: sides_tests(run),
        machine: Some(machine_key(run)),
        launch: Some(launch_key(run)),
    }
}

fn sides_tests(run: &RunRecord) -> Vec<(String, TestRecord)> {
    (run.tests.iter())
        .filter(|t| t.status == Status::Ok && !t.samples_ts.is_empty())
        .map(|t| {
            let sha = run.model_of(t).map(|m| m.sha256.clone());
            (sha.unwrap_or_default(), t.clone())
        })
        .collect()
}

/// The properties a test is joined on: the model file and every parameter.
fn properties(sha: &str, t: &TestRecord) -> BTreeMap<String, String> {
    let mut m = BTreeMap::from([("model".to_string(), sha.to_string())]);
    for (k, v) in t.params.all_fields() {
        m.insert(k, v.to_string());
    }
    m
}

/// Properties of one value in A and another in B: what is compared (1 thread against 2...).
fn varied(a: &Side, b: &Side) -> Vec<String> {
    let values = |s: &Side, k: &str| {
        crate::util::sorted_unique(s.tests.iter().map(|(sha, t)| properties(sha, t)[k].clone()))
    };
    let Some((sha, t)) = a.tests.first() else {
        return Vec::new();
    };
    properties(sha, t)
        .keys()
        .filter(|k| !matches!(k.as_str(), "n_prompt" | "n_gen" | "n_depth"))
        .filter(|k| {
            let (va, vb) = (values(a, k), values(b, k));
            va.len() == 1 && vb.len() == 1 && va != vb
        })
        .cloned()
        .collect()
}

pub struct Row {
    pub test: String,
    pub a_median: f64,
    pub b_median: f64,
    pub a_n: usize,
    pub b_n: usize,
    pub comparison: Comparison,
}

pub struct Report {
    /// Properties ignored in the join because they are what differs: (name, A value, B value).
    pub varied: Vec<(String, String, String)>,
    pub rows: Vec<Row>,
    pub unmatched: usize,
    /// The noise floor single launches were judged against, and the "no change" band.
    pub floor: NoiseFloor,
    pub threshold: f64,
}

pub fn measured(t: &TestRecord) -> Measured {
    let round_medians = t.round_medians();
    let few = round_medians.len() < 2;
    let repetitions = if few { t.samples_ts.clone() } else { vec![] };
    Measured {
        repetitions,
        round_medians,
    }
}

/// Joins and compares, leaving `ignore` out of the join; two sides of one run are paired.
pub fn compare_sides(a: &Side, b: &Side, ignore: &[String], settings: &Settings) -> Report {
    let same_run = a.launch.is_some() && a.launch == b.launch;
    let settings = &Settings {
        interleaved: settings.interleaved || same_run,
        ..settings.clone()
    };
    let mut skip = varied(a, b);
    for i in ignore {
        if !skip.contains(i) {
            skip.push(i.clone());
        }
    }
    let key = |sha: &str, t: &TestRecord| {
        let mut p = properties(sha, t);
        p.retain(|k, _| !skip.contains(k));
        p
    };
    let described = (skip.iter())
        .map(|k| {
            let first = |s: &Side| {
                let value = |(sha, t): &(String, TestRecord)| properties(sha, t).get(k).cloned();
                s.tests.first().and_then(value).unwrap_or_default()
            };
            // A model is its sha256: 12 hex digits tell two apart.
            let n = if k == "model" { 12 } else { usize::MAX };
            let short = |v: String| v.chars().take(n).collect::<String>();
            (k.clone(), short(first(a)), short(first(b)))
        })
        .collect();
    let mut rows = Vec::new();
    let mut unmatched = 0;
    for (sha, ta) in &a.tests {
        let ka = key(sha, ta);
        match b.tests.iter().find(|(shb, tb)| key(shb, tb) == ka) {
            None => unmatched += 1,
            Some((_, tb)) => rows.push(Row {
                test: format!("{}/{}", ta.model, ta.test),
                a_median: crate::stats::median(&ta.samples_ts),
                b_median: crate::stats::median(&tb.samples_ts),
                a_n: ta.samples_ts.len(),
                b_n: tb.samples_ts.len(),
                comparison: compare(&measured(ta), &measured(tb), settings),
            }),
        }
    }
    unmatched += b.tests.len().saturating_sub(rows.len());
    Report {
        varied: described,
        rows,
        unmatched,
        floor: settings.floor.clone(),
        threshold: settings.threshold,
    }
}

impl Report {
    /// Rows that fail CI at `threshold` (0.05 = 5%): established slower, the estimate beyond
    /// it. Against the right noise floor, identical code fails at most at alpha's rate.
    pub fn regressions(&self, threshold: f64) -> Vec<&Row> {
        let slow = |c: &Comparison| c.verdict == Verdict::Slower && c.speedup < 1.0 - threshold;
        self.rows.iter().filter(|r| slow(&r.comparison)).collect()
    }

    /// The line that fails CI at `threshold`; None when no row fails.
    pub fn regression_line(&self, threshold: f64) -> Option<String> {
        let regressions = self.regressions(threshold);
        if regressions.is_empty() {
            return None;
        }
        let single = (regressions.iter())
            .filter(|r| r.comparison.method == Method::NoiseFloor)
            .count();
        let how = if single > 0 {
            format!(
                " ({single} from single launches, judged against the {})",
                self.floor.describe()
            )
        } else {
            String::new()
        };
        Some(format!(
            "{} significant regression(s) beyond {:.1}%{how}",
            regressions.len(),
            threshold * 100.0,
        ))
    }

    pub fn inconclusive(&self) -> Vec<&Row> {
        (self.rows.iter())
            .filter(|r| r.comparison.verdict == Verdict::Inconclusive)
            .collect()
    }

    pub fn to_markdown(&self, a: &str, b: &str) -> String {
        use crate::util::markdown::text as md;
        let mut out = String::new();
        for (k, va, vb) in &self.varied {
            let (k, va, vb) = (md(k), md(va), md(vb));
            out.push_str(&format!("compared across {k}: {va} (A) vs {vb} (B)\n"));
        }
        out.push_str(&format!("A = {}\nB = {}\n\n", md(a), md(b)));
        let header =
            "test|A t/s (median)|B t/s (median)|rounds|speedup B/A|95% interval|covers|verdict";
        let mut table = vec![header.split('|').map(String::from).collect::<Vec<_>>()];
        for r in &self.rows {
            let c = &r.comparison;
            let rounds = if c.rounds.0 == c.rounds.1 {
                c.rounds.0.to_string()
            } else {
                format!("{} / {}", c.rounds.0, c.rounds.1)
            };
            table.push(vec![
                r.test.clone(),
                format!("{:.2} (n={})", r.a_median, r.a_n),
                format!("{:.2} (n={})", r.b_median, r.b_n),
                rounds,
                format!("{:.3}", c.speedup),
                format!("[{:.3}, {:.3}]", c.ci.lo, c.ci.hi),
                covers_text(c).to_string(),
                verdict_text(c, self.threshold),
            ]);
        }
        out.push_str(&crate::util::table::aligned(&table, &|c| {
            matches!(c, 0 | 5 | 6 | 7)
        }));
        if self
            .rows
            .iter()
            .any(|r| r.comparison.method == Method::NoiseFloor)
        {
            out.push_str(&format!(
                "\nSeparate launches (or one round): the rounds of a launch share its process and \
                 its stretch of time, so the data hold no test across launches; intervals add \
                 the {}. Rounds interleaved in one run (or `run --library`) are compared round \
                 by round instead.\n",
                self.floor.describe()
            ));
        }
        if self.unmatched > 0 {
            out.push_str(&format!(
                "\n{} test(s) had no counterpart and were left out.\n",
                self.unmatched
            ));
        }
        out
    }
}

fn covers_text(c: &Comparison) -> &'static str {
    match c.method {
        Method::PairedRounds => "between rounds, paired",
        Method::UnpairedRounds => "between rounds",
        Method::NoiseFloor => "launches + noise floor",
    }
}

/// The verdict column: what the data says, and for an inconclusive pair, what would decide.
fn verdict_text(c: &Comparison, threshold: f64) -> String {
    match c.verdict {
        Verdict::Faster => "faster".into(),
        Verdict::Slower => "SLOWER".into(),
        Verdict::NoChange => format!("no change (within ±{:.1}%)", threshold * 100.0),
        Verdict::Inconclusive => match c.rounds_needed {
            Some(n) if n < 10_000 => format!(
                "inconclusive: about {n} rounds per side would resolve ±{:.1}%",
                threshold * 100.0
            ),
            _ if c.method == Method::NoiseFloor => {
                "inconclusive: within what separate launches differ by".into()
            }
            _ => "inconclusive".into(),
        },
    }
}

/// The machine a run ran on, as noise floors are stored: host name and CPU model.
pub(crate) fn machine_key(run: &RunRecord) -> String {
    let s = &run.run.system;
    crate::util::file_safe(&format!("{}-{}", s.hostname, s.cpu_model))
}

/// Default location of measured noise floors, one file per machine.
pub(crate) const NOISE_DIR: &str = "target/tpsbench/noise";

/// A noise floor from A/A launches (one configuration, one machine): the sd between files of
/// each test's mean ln t/s, pooled; it holds the rounds' spread too, so it errs wide.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct MeasuredFloor {
    pub machine: String,
    pub sd: f64,
    pub degrees_of_freedom: usize,
    pub tests: usize,
    pub launches: usize,
    pub files: Vec<String>,
}

/// The pooled sd between launches of `runs` (file name, record).
pub(crate) fn measure_floor(runs: &[(String, RunRecord)]) -> Result<MeasuredFloor, CompareError> {
    let machines: Vec<String> = runs.iter().map(|(_, r)| machine_key(r)).collect();
    if let Some(other) = machines.iter().find(|m| **m != machines[0]) {
        return Err(CompareError::MachinesDiffer {
            first: machines[0].clone(),
            other: other.clone(),
        });
    }
    let mut levels: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (_, run) in runs {
        for t in run.tests.iter().filter(|t| t.status == Status::Ok) {
            let ln = |x: &f64| x.max(f64::MIN_POSITIVE).ln();
            let logs: Vec<f64> = t.round_medians().iter().map(ln).collect();
            if !logs.is_empty() && t.kind.is_llama_bench() {
                let mean = crate::stats::mean(&logs);
                levels.entry(t.identity.clone()).or_default().push(mean);
            }
        }
    }
    let (mut ss, mut df, mut tests) = (0.0, 0usize, 0usize);
    for ls in levels.values().filter(|l| l.len() >= 2) {
        let m = crate::stats::mean(ls);
        ss += ls.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
        df += ls.len() - 1;
        tests += 1;
    }
    if df < 2 {
        return Err(CompareError::TooFewLaunches {
            files: runs.len(),
            degrees_of_freedom: df,
        });
    }
    Ok(MeasuredFloor {
        machine: machines[0].clone(),
        sd: (ss / df as f64).sqrt(),
        degrees_of_freedom: df,
        tests,
        launches: runs.len(),
        files: runs.iter().map(|(f, _)| f.clone()).collect(),
    })
}

/// Stores a measured floor as DIR/<machine>.json.
pub(crate) fn save_floor(f: &MeasuredFloor, dir: &Path) -> Result<PathBuf, CompareError> {
    create_dir(dir)?;
    let p = dir.join(format!("{}.json", f.machine));
    if let Err(cause) = std::fs::write(&p, results::to_json_bytes(f)) {
        return Err(CompareError::Write { path: p, cause });
    }
    Ok(p)
}

fn create_dir(dir: &Path) -> Result<(), CompareError> {
    std::fs::create_dir_all(dir).map_err(|cause| CompareError::CreateDir {
        dir: dir.to_path_buf(),
        cause,
    })
}

/// The floor for single launches: `--noise`, else the one measured on `machine`, else assumed.
pub(crate) fn floor_for(given: Option<f64>, machine: Option<&str>, dir: &Path) -> NoiseFloor {
    if let Some(sd) = given {
        return NoiseFloor {
            sd,
            source: FloorSource::Given,
        };
    }
    let stored = machine
        .map(|m| dir.join(format!("{m}.json")))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<MeasuredFloor>(&t).ok());
    match stored {
        Some(f) => NoiseFloor {
            sd: f.sd,
            source: FloorSource::Measured(format!(
                "{} A/A launches, {} tests, {} degrees of freedom",
                f.launches, f.tests, f.degrees_of_freedom
            )),
        },
        None => NoiseFloor::assumed(),
    }
}

/// A baseline check's settings: the defaults, with the floor stored for `this` machine.
pub fn baseline_settings(this: &Side) -> Settings {
    Settings {
        floor: floor_for(None, this.machine.as_deref(), Path::new(NOISE_DIR)),
        ..Default::default()
    }
}

/// As criterion: the change against the baseline `name`, on stderr (stdout has the export);
/// true on a significant regression.
pub fn against_baseline(base: &Side, name: &str, record: &RunRecord) -> bool {
    let this = side_of_run(record);
    let report = compare_sides(base, &this, &[], &baseline_settings(&this));
    eprint!(
        "\n{}",
        report.to_markdown(&format!("baseline {name}"), "this run")
    );
    match report.regression_line(0.05) {
        Some(line) => {
            eprintln!("error: {line} against baseline {name:?}");
            true
        }
        None => false,
    }
}

pub fn save_baseline(run: &RunRecord, name: &str, dir: &Path) -> Result<PathBuf, CompareError> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        let name = name.to_string();
        return Err(CompareError::BaselineName { name });
    }
    create_dir(dir)?;
    let p = dir.join(format!("{name}.json"));
    results::write_atomic(&p, run)?;
    Ok(p)
}

#[cfg(test)]
mod tests;
