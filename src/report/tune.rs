//! The answer of `tpsbench tune`, read from the result file alone (docs/tune.md, "The
//! answer", lists its parts).

mod bisect;
mod drafter;

use crate::config::knobs::KnobValue;
use crate::plan::serving::server_flags;
use crate::record::tune::{Applied, Outcome, TuneRecord};
use crate::record::{RunRecord, TestRecord};
use crate::runner::session::quoted_line;
use crate::stats::analysis::{Covers, LevelInterval};
use crate::util::shell_quote as quoted;

mod served;
mod slo;

/// A tune's answer as figures, recomputed from the file's rounds (`record::verify` replayed
/// its verdicts), beside the race as recorded: what stdout and the leaderboard's "Which
/// configuration?" show.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub tune: TuneRecord,
    /// The winner's test id; None when no candidate was measured.
    pub winner: Option<String>,
    /// Its mean rate over its rounds, and the 95% interval between them (None: one round).
    pub mean: f64,
    pub interval: Option<LevelInterval>,
    /// Ties and open candidates: id, and the ratio of its geometric mean to the winner's over
    /// the rounds both ran (None: no round in common).
    pub ties: Vec<(String, Option<f64>)>,
    pub open: Vec<(String, Option<f64>)>,
}

pub fn summary(record: &RunRecord) -> Option<Summary> {
    let t = record.run.tune.as_ref()?;
    // The winner and its rounds, when its test is in the file.
    let won = t
        .winner
        .as_deref()
        .and_then(|id| Some((id, t.raced_rounds(&record.tests, id)?)));
    let (w, wr) = won.map_or((None, vec![]), |(id, rounds)| (Some(id), rounds));
    let vs_winner = |id| ratio(record, t, id, w?);
    let list = |outcome| (ids(t, outcome).map(|id| (id.to_string(), vs_winner(id)))).collect();
    Some(Summary {
        winner: w.map(String::from),
        mean: crate::stats::mean(&wr),
        interval: LevelInterval::of(Covers::BetweenRounds, &wr),
        ties: list(Outcome::Tie),
        open: list(Outcome::Open),
        tune: t.clone(),
    })
}

impl Summary {
    /// The race's figure: tokens per second, or good requests per second for goodput.
    pub fn unit(&self) -> &'static str {
        if self.tune.objective.starts_with("goodput") {
            "good req/s"
        } else {
            "t/s"
        }
    }

    /// "12.3 t/s (95% between 20 rounds 11.0-13.1)", or "(one round: no interval)".
    pub fn figure(&self) -> String {
        let spread = match &self.interval {
            Some(i) => format!("{} {:.2}-{:.2}", i.label(), i.lo, i.hi),
            None => "one round: no interval".into(),
        };
        format!("{:.2} {} ({spread})", self.mean, self.unit())
    }

    /// "a (+1.0%), b" for ties or open candidates.
    pub fn listed(xs: &[(String, Option<f64>)]) -> String {
        let v: Vec<String> = (xs.iter())
            .map(|(id, r)| match r {
                Some(r) => format!("{id} ({:+.1}%)", (r - 1.0) * 100.0),
                None => id.clone(),
            })
            .collect();
        v.join(", ")
    }

    /// The ties and open candidates (with their ratio to the winner), the eliminated and failed.
    pub fn others(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.ties.is_empty() {
            lines.push(format!(
                "ties (established within {:.0}%): {}",
                self.tune.indifference * 100.0,
                Summary::listed(&self.ties)
            ));
        }
        if !self.open.is_empty() {
            lines.push(format!(
                "open (not separated from the answer within the budget): {}",
                Summary::listed(&self.open)
            ));
        }
        let mut raced = format!(
            "eliminated as slower: {} of {} raced",
            ids(&self.tune, Outcome::Slower).count(),
            self.tune.candidates.len()
        );
        let failed: Vec<&str> = ids(&self.tune, Outcome::Failed).collect();
        raced.push_str(&super::wrapped("; failed: ", &failed.join(", "), ""));
        lines.push(raced);
        lines
    }

    /// "memory 3, max_kld 2", or "none".
    pub fn excluded_counts(&self) -> String {
        let by = self.tune.excluded_by_limit();
        if by.is_empty() {
            return "none".into();
        }
        let v: Vec<String> = by.iter().map(|(l, n, _)| format!("{l} {n}")).collect();
        v.join(", ")
    }
}

pub fn answer(record: &RunRecord) -> Option<String> {
    let t = record.run.tune.as_ref()?;
    let s = summary(record)?;
    let mut out = format!("## tune: {}\n\n", t.objective);
    let test = |id: &str| record.tests.iter().find(|x| x.id == id);
    let Some(w) = s.winner.as_deref().and_then(test) else {
        out.push_str(&slo::no_answer(record, t));
        return Some(out);
    };
    out.push_str(&format!("answer: {}: {}\n", w.id, s.figure()));
    out.extend(s.others().iter().map(|l| format!("{l}\n")));
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

/// The ids of the candidates of one outcome.
fn ids(t: &TuneRecord, outcome: Outcome) -> impl Iterator<Item = &str> {
    (t.candidates.iter())
        .filter(move |c| c.outcome == outcome)
        .map(|c| c.id.as_str())
}

/// The ratio of `a`'s geometric mean to `b`'s over the race's rounds both ran.
fn ratio(record: &RunRecord, t: &TuneRecord, a: &str, b: &str) -> Option<f64> {
    let (ra, rb) = (
        t.raced_rounds(&record.tests, a)?,
        t.raced_rounds(&record.tests, b)?,
    );
    let k = ra.len().min(rb.len());
    let geo = |r: &[f64]| crate::stats::log_mean(r).exp();
    (k > 0).then(|| geo(&ra[..k]) / geo(&rb[..k]))
}

/// What each limit excluded, before any speed was measured.
fn excluded(t: &TuneRecord) -> String {
    let said: Vec<String> = t.limits.iter().map(|l| l.to_string()).collect();
    let said = said.join("; ");
    let mut out = format!("limits: {}\n", if said.is_empty() { "none" } else { &said });
    for (l, n, whys) in t.excluded_by_limit() {
        out.push_str(&format!(
            "excluded by {l}: {n} candidates ({})\n",
            whys.join("; ")
        ));
    }
    out
}

/// The winner's load time, cold and warm, and the range over the models that raced.
fn loads(t: &TuneRecord, w: &TestRecord) -> String {
    use crate::record::tune::LoadTime;
    let span = |xs: &[f64]| {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        format!("{lo:.2}-{:.2}", xs.iter().copied().fold(0.0, f64::max))
    };
    let range = |xs: &[f64]| match LoadTime::median(xs) {
        Some(m) => format!("{m:.2} s ({} over {})", span(xs), xs.len()),
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
    let settings = super::wrapped(", ", &l.placement, "");
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
        let (n, span) = (colds.len(), span(&colds));
        out.push_str(&format!("; cold over the {n} loads raced: {span} s"));
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
    let mut toml = models_toml(w, &path);
    let drafter = drafter::server_flags(record, w);
    // A launched winner: the command its rounds' server ran, flags and all.
    let (server, not_carried) = match launched {
        Some(l) => {
            toml = toml.replacen(
                "[model.sweep]",
                "server = \"llama-server\"\n[model.sweep]",
                1,
            );
            (l, Vec::new())
        }
        None => server_line(t, w, &path, drafter.as_ref().map(|d| d.0.as_str())),
    };
    let mut out = format!("\nrun it:\n{server}\n");
    if let Some((_, Some(note))) = &drafter {
        out.push_str(&format!("{note}\n"));
    }
    out.push_str(&format!("{}\n", bench_line(w, &path)));
    if let Some((note, table)) = drafter::bench_note_and_table(record, w) {
        out.push_str(&note);
        toml.push_str(&table);
    }
    out.push_str(&super::wrapped(
        "(llama-server has no flag here for: ",
        &not_carried.join(", "),
        ")\n",
    ));
    out.push_str(&format!("\nmodels.toml:\n{toml}"));
    out
}

/// The llama-server command of a winner tpsbench did not launch, as a launched server of
/// its settings is told, and the settings it cannot be told.
fn server_line(
    t: &TuneRecord,
    w: &TestRecord,
    path: &str,
    drafter: Option<&str>,
) -> (String, Vec<String>) {
    let mut args = vec!["llama-server".to_string(), "-m".into(), path.into()];
    // The server's context: min_ctx when the limits name one, else the model's own default.
    let min_ctx = t.limits.iter().find_map(|l| match l {
        Applied::MinCtx(c) => Some(["-c".into(), c.to_string()]),
        _ => None,
    });
    args.extend(min_ctx.into_iter().flatten());
    // A goodput answer holds at its own concurrency (the slots it served in).
    if let Some(s) = w
        .serving
        .as_ref()
        .filter(|_| t.slo.as_ref().is_some_and(|s| s.goodput.is_some()))
    {
        args.extend(["-np".into(), s.n_parallel.to_string()]);
    }
    args.extend(server_flags::flags(&w.params));
    let server = quoted_line(&args) + drafter.unwrap_or_default();
    let not_carried = (server_flags::unpassed(&w.params).iter())
        .map(|(k, v)| format!("{}={}", k.name, v.show()))
        .collect();
    (server, not_carried)
}

/// The winner's llama-bench line: its sizes and settings, 5 repetitions.
fn bench_line(w: &TestRecord, path: &str) -> String {
    let p = &w.params;
    let path = quoted(path);
    let mut bench = format!("llama-bench -m {path} -p {} -n {}", p.n_prompt, p.n_gen);
    if p.n_depth > 0 {
        bench.push_str(&format!(" -d {}", p.n_depth));
    }
    // The settings a launched server is told (`server_flags::written`), in llama-bench's flags.
    for (k, v) in server_flags::written(p) {
        bench.push_str(&format!(" -{} {}", k.flag, quoted(&v.show())));
    }
    bench.push_str(" -r 5");
    bench
}

/// The winner as a models.toml entry with its settings as a sweep of one value each.
fn models_toml(w: &TestRecord, path: &str) -> String {
    let mut toml = format!(
        "[[model]]\nname = {:?}\npath = {:?}\n[model.sweep]\n",
        w.model, path
    );
    for (k, v) in server_flags::written(&w.params) {
        let value = match v {
            KnobValue::Text(x) => format!("{x:?}"),
            KnobValue::Bool(b) => b.to_string(),
            KnobValue::Int(n) => n.to_string(),
        };
        toml.push_str(&format!("{} = {value}\n", k.name));
    }
    toml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_server_command_states_what_a_launched_server_is_told() {
        let mut w = crate::report::export::fixtures::run().tests[0].clone();
        w.params.n_threads = 3;
        w.params.knobs.set("poll", KnobValue::Int(20));
        w.params
            .knobs
            .set("tensor_split", KnobValue::Text("3/1".into()));
        let t: TuneRecord = serde_json::from_value(serde_json::json!({
            "objective": "tg128", "limits": ["min_ctx 4096"], "space": 1, "excluded": [],
            "alpha": 0.05, "indifference": 0.02, "max_rounds": 2, "looks": [2], "level": 0.05,
            "candidates": [], "loads": [], "stopped": "", "rounds": 0, "tests_run": 0,
            "seconds": 0.0, "first_round_seconds": 0.0
        }))
        .unwrap();
        let (line, not_carried) = server_line(&t, &w, "my m.gguf", None);
        let flags = server_flags::flags(&w.params).join(" ");
        assert_eq!(line, format!("llama-server -m 'my m.gguf' -c 4096 {flags}"));
        assert!(
            flags.contains("--threads 3 --threads-batch 3 --poll 20"),
            "{flags}"
        );
        assert_eq!(not_carried, ["tensor_split=3/1"]);
    }
}
