//! The answer of `tpsbench tune` (issue 46), read from the result file alone: the winner
//! with its interval and ties, what stayed open, what each limit excluded, what racing
//! cost against the full sweep of the same space, and the winner as commands to run:
//! `llama-server`, `llama-bench` and a models.toml entry.

mod bisect;
mod drafter;

use crate::config::knobs::{Level, PARAMS};
use crate::record::tune::TuneRecord;
use crate::record::{RunRecord, TestRecord};
use crate::stats::analysis::{Covers, LevelInterval};

mod served;
mod slo;

/// A tune's answer as figures, recomputed from the file's rounds (the file is read through
/// `record::verify`, which replays its verdicts): what the answer on stdout and the
/// leaderboard's "Which configuration?" section show.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub objective: String,
    /// The winner's test id; None when no candidate was measured.
    pub winner: Option<String>,
    /// Its mean rate over its rounds, and the 95% interval between them (None: one round).
    pub mean: f64,
    pub interval: Option<LevelInterval>,
    pub winner_rounds: usize,
    /// Ties and open candidates: id, and the ratio of its geometric mean to the winner's over
    /// the rounds both ran (None: no round in common).
    pub ties: Vec<(String, Option<f64>)>,
    pub open: Vec<(String, Option<f64>)>,
    pub slower: usize,
    pub failed: Vec<String>,
    pub raced: usize,
    /// Candidates in the space before the limits; per limit, how many it excluded.
    pub space: usize,
    pub excluded: Vec<(String, usize)>,
    /// Candidate-rounds run, and what the full sweep at the same rounds would run.
    pub tests_run: usize,
    pub full_sweep: usize,
    pub rounds: usize,
    /// Wall-clock seconds of the race, as recorded (wall time cannot be recomputed).
    pub seconds: f64,
    pub stopped: String,
    pub indifference: f64,
    pub alpha: f64,
}

/// The tune of `record` as figures; None when the file holds no tune.
pub fn summary(record: &RunRecord) -> Option<Summary> {
    let t = record.run.tune.as_ref()?;
    let test = |id: &str| record.tests.iter().find(|x| x.id == id);
    let w = t.winner.as_deref().and_then(test);
    let wr = w.map(|w| raced_rounds(t, w)).unwrap_or_default();
    let ratio = |id: &str| {
        let r = raced_rounds(t, test(id)?);
        let k = r.len().min(wr.len());
        (k > 0).then(|| geo(&r[..k]) / geo(&wr[..k]))
    };
    let list = |outcome: &str| -> Vec<(String, Option<f64>)> {
        (t.candidates.iter())
            .filter(|c| c.outcome == outcome)
            .map(|c| (c.id.clone(), ratio(&c.id)))
            .collect()
    };
    let mut excluded: Vec<(String, usize)> = Vec::new();
    for e in &t.excluded {
        match excluded.iter_mut().find(|(l, _)| *l == e.limit) {
            Some((_, n)) => *n += 1,
            None => excluded.push((e.limit.clone(), 1)),
        }
    }
    Some(Summary {
        objective: t.objective.clone(),
        winner: w.map(|w| w.id.clone()),
        mean: if wr.is_empty() {
            0.0
        } else {
            crate::stats::mean(&wr)
        },
        interval: LevelInterval::of(Covers::BetweenRounds, &wr),
        winner_rounds: wr.len(),
        ties: list("tie"),
        open: list("open"),
        slower: (t.candidates.iter())
            .filter(|c| c.outcome == "slower")
            .count(),
        failed: list("failed").into_iter().map(|(id, _)| id).collect(),
        raced: t.candidates.len(),
        space: t.space,
        excluded,
        tests_run: t.tests_run,
        full_sweep: t.candidates.len() * t.rounds,
        rounds: t.rounds,
        seconds: t.seconds,
        stopped: t.stopped.clone(),
        indifference: t.indifference,
        alpha: t.alpha,
    })
}

impl Summary {
    /// The race's figure: tokens per second, or good requests per second for goodput.
    pub fn unit(&self) -> &'static str {
        if self.objective.starts_with("goodput") {
            "good req/s"
        } else {
            "t/s"
        }
    }

    /// "12.3 t/s (95% between 20 rounds 11.0-13.1)", or "(one round: no interval)".
    pub fn figure(&self) -> String {
        match &self.interval {
            Some(i) => format!(
                "{:.2} {} ({} {:.2}-{:.2})",
                self.mean,
                self.unit(),
                i.label(),
                i.lo,
                i.hi
            ),
            None => format!("{:.2} {} (one round: no interval)", self.mean, self.unit()),
        }
    }

    /// "a (+1.0%), b" for ties or open candidates.
    pub fn listed(xs: &[(String, Option<f64>)]) -> String {
        let v: Vec<String> = xs
            .iter()
            .map(|(id, r)| match r {
                Some(r) => format!("{id} ({:+.1}%)", (r - 1.0) * 100.0),
                None => id.clone(),
            })
            .collect();
        v.join(", ")
    }

    /// "memory 3, max_kld 2", or "none".
    pub fn excluded_counts(&self) -> String {
        if self.excluded.is_empty() {
            return "none".into();
        }
        let v: Vec<String> = (self.excluded.iter())
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        v.join(", ")
    }
}

/// The answer as text, or None when the file holds no tune.
pub fn answer(record: &RunRecord) -> Option<String> {
    let t = record.run.tune.as_ref()?;
    let s = summary(record)?;
    let mut out = format!(
        "## tune: {}

",
        t.objective
    );
    let test = |id: &str| record.tests.iter().find(|x| x.id == id);
    let Some(w) = s.winner.as_deref().and_then(test) else {
        out.push_str(&slo::no_answer(record, t));
        return Some(out);
    };
    out.push_str(&format!("answer: {}: {}\n", w.id, s.figure()));
    out.push_str(&others(&s));
    out.push_str(&bisect::lines(record, t));
    out.push_str(&excluded(t));
    out.push_str(&slo::lines(record, t, w));
    out.push_str(&loads(t, w));
    out.push_str(&cost(t));
    out.push_str(&format!(
        "\nstatistics: paired by round (one round of every survivor per stretch of time), the \
         survivors' own noise pooled (t on the candidate × round layout of log rates); a \
         candidate leaves once established slower than the leader by more than {:.0}%; every \
         elimination and tie at {:.0}% family-wise (Bonferroni over every pair's claims at {} \
         planned looks: {:.2e} each).\n",
        t.indifference * 100.0,
        t.alpha * 100.0,
        t.looks.len(),
        t.level
    ));
    out.push_str(&commands(record, t, w));
    Some(out)
}

/// A candidate's round medians in the race: its test's, less the bisection's probe round.
fn raced_rounds(t: &TuneRecord, x: &TestRecord) -> Vec<f64> {
    let skip = (t.candidates.iter())
        .find(|c| c.id == x.id)
        .map_or(0, |c| c.probe_rounds);
    let r = x.round_medians();
    r.get(skip.min(r.len())..).unwrap_or_default().to_vec()
}

fn geo(r: &[f64]) -> f64 {
    crate::stats::mean(&r.iter().map(|x| x.ln()).collect::<Vec<_>>()).exp()
}

/// Ties and open candidates, with their ratio to the winner over the rounds both ran.
fn others(s: &Summary) -> String {
    let mut out = String::new();
    if !s.ties.is_empty() {
        out.push_str(&format!(
            "ties (established within {:.0}%): {}\n",
            s.indifference * 100.0,
            Summary::listed(&s.ties)
        ));
    }
    if !s.open.is_empty() {
        out.push_str(&format!(
            "open (not separated from the answer within the budget): {}\n",
            Summary::listed(&s.open)
        ));
    }
    out.push_str(&format!(
        "eliminated as slower: {} of {} raced",
        s.slower, s.raced
    ));
    if !s.failed.is_empty() {
        out.push_str(&format!("; failed: {}", s.failed.join(", ")));
    }
    out.push('\n');
    out
}

/// What each limit excluded, before any speed was measured.
fn excluded(t: &TuneRecord) -> String {
    let mut out = format!("limits: {}\n", {
        if t.limits.is_empty() {
            "none".to_string()
        } else {
            t.limits.join("; ")
        }
    });
    let mut limits: Vec<&str> = Vec::new();
    for e in &t.excluded {
        if !limits.contains(&e.limit.as_str()) {
            limits.push(&e.limit);
        }
    }
    for l in limits {
        let whys: Vec<&str> = (t.excluded.iter())
            .filter(|e| e.limit == l)
            .map(|e| e.why.as_str())
            .collect();
        let mut distinct: Vec<&str> = Vec::new();
        for w in &whys {
            if !distinct.contains(w) {
                distinct.push(w);
            }
        }
        out.push_str(&format!(
            "excluded by {l}: {} candidates ({})\n",
            whys.len(),
            distinct.join("; ")
        ));
    }
    out
}

/// The winner's load time, cold and warm, and the range over the models that raced.
fn loads(t: &TuneRecord, w: &TestRecord) -> String {
    use crate::record::tune::LoadTime;
    let range = |xs: &[f64]| match LoadTime::median(xs) {
        Some(m) => format!(
            "{m:.2} s ({:.2}-{:.2} over {})",
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(0.0, f64::max),
            xs.len()
        ),
        None => "not measured".into(),
    };
    // The winner's own placement's loads (a file written before `placement` names none).
    let placement = crate::config::knobs::placement_of(&w.params);
    let Some(l) = (t.loads.iter())
        .filter(|l| l.model == w.model)
        .find(|l| l.placement.is_empty() || l.placement == placement)
    else {
        return String::new();
    };
    let settings = if l.placement.is_empty() {
        String::new()
    } else {
        format!(", {}", l.placement)
    };
    let mut out = format!(
        "load ({}{settings}, load_mode {}): cold {}, warm {}",
        l.model,
        l.load_mode,
        range(&l.cold_s),
        range(&l.warm_s)
    );
    if !l.evicted {
        out.push_str(" (the page cache refused the eviction: cold may be warm)");
    }
    let colds: Vec<f64> = (t.loads.iter())
        .filter_map(|l| LoadTime::median(&l.cold_s))
        .collect();
    if colds.len() > 1 {
        out.push_str(&format!(
            "; cold over the {} loads raced: {:.2}-{:.2} s",
            colds.len(),
            colds.iter().copied().fold(f64::INFINITY, f64::min),
            colds.iter().copied().fold(0.0, f64::max)
        ));
    }
    out.push('\n');
    out
}

/// What racing cost, against the full sweep of the same space.
fn cost(t: &TuneRecord) -> String {
    let n = t.candidates.len();
    let full = n * t.rounds;
    let pace = |rounds: usize| t.first_round_seconds * rounds as f64;
    format!(
        "race: {}; {} rounds, {} tests in {:.0} s. The full sweep of the {n} candidates at \
         {} rounds: {full} tests (about {:.0} s at the first round's pace, {:.0}%% of it \
         raced); at 5 fixed rounds: {} tests (about {:.0} s)\n",
        t.stopped,
        t.rounds,
        t.tests_run,
        t.seconds,
        t.rounds,
        pace(t.rounds),
        100.0 * t.tests_run as f64 / full.max(1) as f64,
        n * 5,
        pace(5)
    )
    .replace("%%", "%")
}

/// The knob values of the winner worth writing: every model- and context-level parameter
/// that differs from llama-bench's default, and the usual ones always.
fn settings(w: &TestRecord) -> Vec<(&'static crate::config::knobs::Knob, String)> {
    const ALWAYS: [&str; 5] = ["ngl", "b", "ub", "fa", "t"];
    PARAMS
        .iter()
        .filter(|k| k.level != Level::Test)
        .filter_map(|k| {
            let v = k.get(&w.params);
            (v != k.default_value() || ALWAYS.contains(&k.flag)).then(|| (k, v.show()))
        })
        .collect()
}

/// llama-server's spelling of a llama-bench setting, where it has one.
fn server_flag(flag: &str, v: &str) -> Option<String> {
    Some(match flag {
        "ngl" | "sm" | "mg" | "b" | "ub" | "ctk" | "ctv" | "t" | "ts" | "ot" => {
            format!("-{flag} {v}")
        }
        "ncmoe" => format!("--n-cpu-moe {v}"),
        "fa" => format!(
            "-fa {}",
            match v {
                "1" | "on" | "true" => "on",
                "0" | "off" | "false" => "off",
                _ => "auto",
            }
        ),
        "nkvo" if v == "1" => "-nkvo".into(),
        "nkvo" => return None,
        _ => return None,
    })
}

fn quoted(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=,:".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The winner as `llama-server`, `llama-bench` and models.toml lines.
fn commands(record: &RunRecord, t: &TuneRecord, w: &TestRecord) -> String {
    let served = served::of(w);
    let launched = served.and_then(served::launched_line);
    if let (Some(s), None) = (served, &launched) {
        return served::at_endpoint(w, s);
    }
    let path = (record.models.iter())
        .find(|m| m.name == w.model)
        .map_or_else(|| w.model.clone(), |m| m.path.clone());
    let s = settings(w);
    let p = &w.params;
    // The server's context: min_ctx when the limits name one, else the model's own default.
    let min_ctx = (t.limits.iter()).find_map(|l| l.strip_prefix("min_ctx ")?.parse::<u32>().ok());
    let mut server = format!("llama-server -m {}", quoted(&path));
    if let Some(c) = min_ctx {
        server.push_str(&format!(" -c {c}"));
    }
    // A goodput answer holds at its own concurrency (the slots it served in).
    if let Some(s) =
        (w.serving.as_ref()).filter(|_| t.slo.as_ref().is_some_and(|s| s.goodput.is_some()))
    {
        server.push_str(&format!(" -np {}", s.n_parallel));
    }
    let mut not_carried = Vec::new();
    for (k, v) in &s {
        match server_flag(k.flag, v) {
            Some(f) => server.push_str(&format!(" {}", quoted_flag(&f))),
            None if *v != k.default_value().show() => not_carried.push(format!("{}={v}", k.name)),
            None => {}
        }
    }
    let drafter = drafter::server_flags(record, w, quoted);
    if let Some((flags, _)) = &drafter {
        server.push_str(flags);
    }
    let mut bench = format!(
        "llama-bench -m {} -p {} -n {}",
        quoted(&path),
        p.n_prompt,
        p.n_gen
    );
    if p.n_depth > 0 {
        bench.push_str(&format!(" -d {}", p.n_depth));
    }
    for (k, v) in &s {
        bench.push_str(&format!(" -{} {}", k.flag, quoted(v)));
    }
    bench.push_str(" -r 5");
    let mut toml = format!(
        "[[model]]\nname = {:?}\npath = {:?}\n[model.sweep]\n",
        w.model, path
    );
    for (k, v) in &s {
        let value = match k.get(p) {
            crate::config::knobs::KnobValue::Text(x) => format!("{x:?}"),
            crate::config::knobs::KnobValue::Bool(b) => b.to_string(),
            crate::config::knobs::KnobValue::Int(n) => n.to_string(),
        };
        let _ = v;
        toml.push_str(&format!("{} = {value}\n", k.name));
    }
    // A launched winner: the command its rounds' server ran, flags and all.
    if let Some(l) = launched {
        (server, not_carried) = (l, Vec::new());
        toml = toml.replacen(
            "[model.sweep]",
            "server = \"llama-server\"\n[model.sweep]",
            1,
        );
    }
    let mut out = String::from("\nrun it:\n");
    out.push_str(&format!("{server}\n"));
    if let Some((_, Some(note))) = &drafter {
        out.push_str(&format!("{note}\n"));
    }
    out.push_str(&format!("{bench}\n"));
    let spec = drafter::bench_note_and_table(record, w);
    if let Some((note, table)) = &spec {
        out.push_str(note);
        toml.push_str(table);
    }
    if !not_carried.is_empty() {
        out.push_str(&format!(
            "(llama-server has no flag here for: {})\n",
            not_carried.join(", ")
        ));
    }
    out.push_str(&format!("\nmodels.toml:\n{toml}"));
    out
}

/// A flag with its value quoted where the shell needs it.
fn quoted_flag(f: &str) -> String {
    match f.split_once(' ') {
        Some((flag, v)) => format!("{flag} {}", quoted(v)),
        None => f.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_server_gets_its_own_spelling_of_each_setting_or_none() {
        assert_eq!(server_flag("fa", "1").as_deref(), Some("-fa on"));
        assert_eq!(server_flag("fa", "off").as_deref(), Some("-fa off"));
        assert_eq!(server_flag("fa", "auto").as_deref(), Some("-fa auto"));
        assert_eq!(server_flag("ub", "128").as_deref(), Some("-ub 128"));
        assert_eq!(server_flag("ncmoe", "4").as_deref(), Some("--n-cpu-moe 4"));
        assert_eq!(server_flag("nkvo", "1").as_deref(), Some("-nkvo"));
        assert_eq!(server_flag("nkvo", "0"), None);
        assert_eq!(server_flag("poll", "50"), None, "llama-bench only");
    }

    #[test]
    fn paths_and_values_are_quoted_only_where_the_shell_needs_it() {
        assert_eq!(quoted("models/a-b_c.gguf"), "models/a-b_c.gguf");
        assert_eq!(quoted("my models/x.gguf"), "'my models/x.gguf'");
        assert_eq!(quoted("it's"), "'it'\\''s'");
        assert_eq!(quoted_flag("-ot blk.*=CPU"), "-ot 'blk.*=CPU'");
        assert_eq!(quoted_flag("-nkvo"), "-nkvo");
    }
}
