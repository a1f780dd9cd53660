//! The answer of `tpsbench tune` (issue 46), read from the result file alone: the winner
//! with its interval and ties, what stayed open, what each limit excluded, what racing
//! cost against the full sweep of the same space, and the winner as commands to run:
//! `llama-server`, `llama-bench` and a models.toml entry.

use crate::config::knobs::{Level, PARAMS};
use crate::record::tune::TuneRecord;
use crate::record::{RunRecord, TestRecord};
use crate::stats::analysis::{Covers, LevelInterval};

/// The answer as text, or None when the file holds no tune.
pub fn answer(record: &RunRecord) -> Option<String> {
    let t = record.run.tune.as_ref()?;
    let mut out = format!("## tune: {}\n\n", t.objective);
    let test = |id: &str| record.tests.iter().find(|x| x.id == id);
    let Some(w) = t.winner.as_deref().and_then(test) else {
        out.push_str("no answer: no candidate was measured\n");
        return Some(out);
    };
    out.push_str(&winner_line(w));
    out.push_str(&others(t, record, w));
    out.push_str(&excluded(t));
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

fn geo(r: &[f64]) -> f64 {
    crate::stats::mean(&r.iter().map(|x| x.ln()).collect::<Vec<_>>()).exp()
}

fn winner_line(w: &TestRecord) -> String {
    let rounds = w.round_medians();
    let m = crate::stats::mean(&rounds);
    match LevelInterval::of(Covers::BetweenRounds, &rounds) {
        Some(i) => format!(
            "answer: {}: {m:.2} t/s ({} {:.2}-{:.2})\n",
            w.id,
            i.label(),
            i.lo,
            i.hi
        ),
        None => format!("answer: {}: {m:.2} t/s (one round: no interval)\n", w.id),
    }
}

/// Ties and open candidates, with their ratio to the winner over the rounds both ran.
fn others(t: &TuneRecord, record: &RunRecord, w: &TestRecord) -> String {
    let wr = w.round_medians();
    let ratio = |id: &str| {
        let r = record.tests.iter().find(|x| x.id == id)?.round_medians();
        let k = r.len().min(wr.len());
        (k > 0).then(|| geo(&r[..k]) / geo(&wr[..k]))
    };
    let list = |outcome: &str| -> Vec<String> {
        t.candidates
            .iter()
            .filter(|c| c.outcome == outcome)
            .map(|c| match ratio(&c.id) {
                Some(r) => format!("{} ({:+.1}%)", c.id, (r - 1.0) * 100.0),
                None => c.id.clone(),
            })
            .collect()
    };
    let mut out = String::new();
    let ties = list("tie");
    if !ties.is_empty() {
        out.push_str(&format!(
            "ties (established within {:.0}%): {}\n",
            t.indifference * 100.0,
            ties.join(", ")
        ));
    }
    let open = list("open");
    if !open.is_empty() {
        out.push_str(&format!(
            "open (not separated from the answer within the budget): {}\n",
            open.join(", ")
        ));
    }
    let slower = t
        .candidates
        .iter()
        .filter(|c| c.outcome == "slower")
        .count();
    let failed = list("failed");
    out.push_str(&format!(
        "eliminated as slower: {slower} of {} raced",
        t.candidates.len()
    ));
    if !failed.is_empty() {
        out.push_str(&format!("; failed: {}", failed.join(", ")));
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
    let Some(l) = t.loads.iter().find(|l| l.model == w.model) else {
        return String::new();
    };
    let mut out = format!(
        "load ({}, load_mode {}): cold {}, warm {}",
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
            "; cold over the {} models raced: {:.2}-{:.2} s",
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
    let mut not_carried = Vec::new();
    for (k, v) in &s {
        match server_flag(k.flag, v) {
            Some(f) => server.push_str(&format!(" {}", quoted_flag(&f))),
            None if *v != k.default_value().show() => not_carried.push(format!("{}={v}", k.name)),
            None => {}
        }
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
    let mut out = String::from("\nrun it:\n");
    out.push_str(&format!("{server}\n{bench}\n"));
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
