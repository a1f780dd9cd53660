//! The speculative answer (issue 45): per target model and machine, the fastest decoding
//! among the drafter settings measured and plain decoding, with what the design
//! established and no more. Each setting's speedup is paired by round with plain decoding
//! on its own context; two settings are different tests, so they are called apart only
//! when their 95% intervals do not overlap (a conservative rule: overlap is "not
//! established apart", never "equal").

use std::fmt::Write as _;

use crate::record::speculative::Speculative;
use crate::record::{RunRecord, Status, TestRecord};

/// One measured setting.
struct Row<'a> {
    test: &'a TestRecord,
    s: &'a Speculative,
}

impl Row<'_> {
    /// "draft-simple with Q4_0, K = 4" / "ngram-simple, K = 4".
    fn setting(&self) -> String {
        let s = self.s;
        let draft = s
            .draft
            .as_ref()
            .map(|d| format!(" with {d}"))
            .unwrap_or_default();
        let mut extra = String::new();
        if s.draft_min > 0 {
            extra.push_str(&format!(", draft_min {}", s.draft_min));
        }
        if s.p_min > 0.0 {
            extra.push_str(&format!(", p_min {}", s.p_min));
        }
        format!("{}{draft}, K = {}{extra}", s.drafter, s.draft_max)
    }

    fn ratio(&self) -> f64 {
        self.s.speedup.map_or(0.0, |x| x.ratio)
    }
}

/// The target model's name of a speculative test (its id up to `/spec-`).
fn target(t: &TestRecord) -> String {
    t.id.split("/spec-").next().unwrap_or(&t.id).to_string()
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |r| format!("{:.0}%", r * 100.0))
}

/// The answer's sentence for one target's rows (best first).
fn sentence(model: &str, host: &str, rows: &[Row]) -> String {
    let best = &rows[0];
    if best.s.n_drafted == 0 {
        return format!(
            "For {model} on {host}, no drafter drafted anything on these prompts: nothing to \
             compare with plain decoding."
        );
    }
    let rows: Vec<&Row> = rows.iter().filter(|r| r.s.n_drafted > 0).collect();
    let Some(sp) = best.s.speedup else {
        return format!(
            "For {model} on {host}, no speculative setting has an interval (fewer than 2 rounds)."
        );
    };
    let acc = format!(
        "with {} of drafted tokens accepted (mean acceptance length {})",
        pct(best.s.acceptance_rate),
        best.s
            .acceptance_length
            .map_or("–".into(), |l| format!("{l:.2}"))
    );
    let interval = format!("{:.2}× ({:.2}–{:.2})", sp.ratio, sp.lo, sp.hi);
    let mut out = if sp.lo > 1.0 {
        let ties: Vec<String> = rows[1..]
            .iter()
            .filter(|r| r.s.speedup.is_some_and(|x| x.hi >= sp.lo))
            .map(|r| format!("{} ({:.2}×)", r.setting(), r.ratio()))
            .collect();
        let mut s = format!(
            "For {model} on {host}, {} decodes {interval} faster than plain decoding, {acc}.",
            best.setting()
        );
        if !ties.is_empty() {
            let _ = write!(
                s,
                " Not established apart from it: {} (their 95% intervals overlap).",
                ties.join(", ")
            );
        }
        s
    } else if sp.hi < 1.0 {
        format!(
            "For {model} on {host}, plain decoding is fastest: every speculative setting was \
             established slower; the least slow, {}, decodes at {interval} of plain, {acc}.",
            best.setting()
        )
    } else {
        format!(
            "For {model} on {host}, no speculative setting is established faster than plain \
             decoding: the best, {}, measured {interval}, {acc}.",
            best.setting()
        )
    };
    let _ = write!(
        out,
        " Intervals are 95% between {} rounds, each paired with plain decoding on the same \
         context; they do not cover the variation between launches.",
        sp.n_rounds
    );
    let differ: u32 = rows.iter().map(|r| r.s.mismatches).sum();
    if differ > 0 {
        let _ = write!(
            out,
            " Speculative output differed from plain decoding in {differ} greedy generations \
             (see the table)."
        );
    }
    out
}

/// The Markdown table of one target's settings.
fn table(rows: &[Row]) -> String {
    let mut o = String::from(
        "| setting | plain t/s | speculative t/s | speedup (95%) | accepted | length | by position | output |\n\
         |---|--:|--:|---|--:|--:|---|---|\n",
    );
    for r in rows {
        let s = r.s;
        let speed = s.speedup.map_or("–".into(), |x| {
            format!("{:.2}× ({:.2}–{:.2})", x.ratio, x.lo, x.hi)
        });
        let pos: Vec<String> = s
            .by_position
            .iter()
            .filter(|p| p.drafted > 0)
            .map(|p| format!("{:.0}", 100.0 * p.accepted as f64 / p.drafted as f64))
            .collect();
        let _ = writeln!(
            o,
            "| {} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
            r.setting(),
            s.plain_ts,
            s.spec_ts,
            speed,
            pct(s.acceptance_rate),
            s.acceptance_length
                .map_or("–".into(), |l| format!("{l:.2}")),
            if pos.is_empty() {
                "–".into()
            } else {
                format!("{}%", pos.join(" / "))
            },
            if s.identical() {
                "identical".to_string()
            } else {
                format!("differs in {}/{}", s.mismatches, s.compared)
            }
        );
    }
    o
}

/// One target model's answer on one machine.
pub struct SpecAnswer {
    pub model: String,
    pub host: String,
    pub sentence: String,
    /// The Markdown table of its settings.
    pub table: String,
    /// Per setting (best first): its name and the share accepted at each draft position.
    pub positions: Vec<(String, Vec<f64>)>,
}

/// The answers of speculative tests, each with the machine it ran on: one per target model
/// and machine, in order of first appearance.
pub fn answers<'a>(tests: impl IntoIterator<Item = (&'a TestRecord, &'a str)>) -> Vec<SpecAnswer> {
    let tests: Vec<(&TestRecord, &str)> = tests
        .into_iter()
        // A tune's plain candidates (issue 46) have no drafter to answer for.
        .filter(|(t, _)| t.status == Status::Ok)
        .filter(|(t, _)| t.speculative.as_ref().is_some_and(|s| !s.is_plain()))
        .collect();
    let mut keys: Vec<(String, &str)> = Vec::new();
    for (t, host) in &tests {
        let k = (target(t), *host);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (m, host) in keys {
        let mut rows: Vec<Row> = tests
            .iter()
            .filter(|(t, h)| *h == host && target(t) == m)
            .filter_map(|(t, _)| t.speculative.as_ref().map(|s| Row { test: t, s }))
            .collect();
        // A setting that drafted nothing on these prompts ran plain decoding twice: its
        // "speedup" is noise, never an answer. Listed last.
        rows.sort_by(|a, b| {
            (b.s.n_drafted > 0)
                .cmp(&(a.s.n_drafted > 0))
                .then(b.ratio().total_cmp(&a.ratio()))
        });
        let name = rows[0].test.model.clone();
        out.push(SpecAnswer {
            sentence: sentence(&name, host, &rows),
            table: table(&rows),
            positions: rows
                .iter()
                .map(|r| {
                    let rates =
                        r.s.by_position
                            .iter()
                            .filter(|p| p.drafted > 0)
                            .map(|p| p.accepted as f64 / p.drafted as f64)
                            .collect();
                    (r.setting(), rates)
                })
                .collect(),
            model: name,
            host: host.to_string(),
        });
    }
    out
}

/// One line per served test whose server drafted: llama-server's own acceptance, and beside
/// it the in-process figure of the same target file, draft (by SHA-256) and K on the same
/// machine, when the run or set has one. Two counts, not an interval: acceptance is a
/// count of the text and the drafts, and the two sides generated different requests.
pub fn served<'a>(tests: impl IntoIterator<Item = (&'a TestRecord, &'a str)>) -> Vec<String> {
    let tests: Vec<(&TestRecord, &str)> = tests
        .into_iter()
        .filter(|(t, _)| t.status == Status::Ok)
        .collect();
    let mut out = Vec::new();
    for (t, host) in &tests {
        let Some(d) = t.serving.as_ref().and_then(|s| s.drafts.as_ref()) else {
            continue;
        };
        let draft = match (&d.draft, d.draft_max) {
            (Some(f), Some(k)) => format!(", draft {f}, K = {k}"),
            _ => String::new(),
        };
        let mut line = format!(
            "{} ({}{draft}) on {host}: {} of drafted tokens accepted ({} of {}, \
             llama-server's counters, {} of {} answers)",
            t.model,
            t.test,
            pct(d.acceptance()),
            d.accepted,
            d.drafted,
            d.answers_counted,
            d.answers
        );
        let twin = tests.iter().find_map(|(u, h)| {
            let s = u.speculative.as_ref()?;
            (h == host
                && u.model_filename == t.model_filename
                && s.drafter == "draft-simple"
                && s.draft_sha256.is_some()
                && s.draft_sha256 == d.draft_sha256
                && Some(s.draft_max) == d.draft_max)
                .then_some(s)
        });
        if let Some(s) = twin {
            let _ = write!(
                line,
                "; in process, the same target, draft and K: {} ({} of {})",
                pct(s.acceptance_rate),
                s.n_accepted,
                s.n_drafted
            );
        }
        out.push(line);
    }
    out
}

/// The answers of a run's speculative tests in Markdown (a heading, the sentence and the
/// table per target model), then its served tests' drafting; None when it has neither.
pub fn of_run(record: &RunRecord) -> Option<String> {
    let host = record.run.system.hostname.as_str();
    let mut o = String::new();
    for a in answers(record.tests.iter().map(|t| (t, host))) {
        let _ = writeln!(
            o,
            "\n## Which decoding? {}\n\n{}\n\n{}",
            a.model, a.sentence, a.table
        );
    }
    let lines = served(record.tests.iter().map(|t| (t, host)));
    if !lines.is_empty() {
        let _ = writeln!(o, "\n## Served drafting\n");
        for l in lines {
            let _ = writeln!(o, "- {l}");
        }
    }
    (!o.is_empty()).then_some(o)
}
