//! The speculative answer: per target model and machine, the fastest of the drafter settings
//! and plain decoding. Each setting is judged against plain decoding paired by round, one
//! target's settings as one family (Holm, `stats::pairs`, as the ladder's answer): a sentence
//! says of a setting only what its own comparison established. Two settings are called apart
//! only when their 95% intervals do not overlap (overlap is "not established apart").

use crate::config::speculative::Drafter;
use std::fmt::Write as _;

use crate::record::{RunRecord, Status, TestRecord, speculative::Speculative};
use crate::report::group_by;
use crate::report::leaderboard::table::{Cell, Table};
use crate::stats::pairs::Design;

struct Row<'a> {
    test: &'a TestRecord,
    s: &'a Speculative,
    /// Against plain decoding, within the family: +1 established faster, -1 established
    /// slower, 0 neither.
    verdict: i8,
}

impl Row<'_> {
    /// "draft-simple with Q4_0, K = 4" / "ngram-simple, K = 4".
    fn setting(&self) -> String {
        let s = self.s;
        let draft = super::wrapped(" with ", s.draft.as_deref().unwrap_or(""), "");
        let min = (s.draft_min > 0).then(|| format!(", draft_min {}", s.draft_min));
        let p = (s.p_min > 0.0).then(|| format!(", p_min {}", s.p_min));
        let (min, p) = (min.unwrap_or_default(), p.unwrap_or_default());
        format!("{}{draft}, K = {}{min}{p}", s.drafter, s.draft_max)
    }

    fn ratio(&self) -> f64 {
        self.s.speedup.map_or(0.0, |x| x.ratio)
    }

    /// The percentage of drafted tokens accepted at each draft position that drafted any.
    fn rates(&self) -> Vec<f64> {
        (self.s.by_position.iter())
            .filter(|p| p.drafted > 0)
            .map(|p| 100.0 * p.accepted as f64 / p.drafted as f64)
            .collect()
    }
}

/// Judges every row against plain decoding, paired by round, the rows as one family at
/// 5% (Holm).
fn judge(rows: &mut [Row]) {
    let mut rounds = Vec::new();
    for r in rows.iter() {
        let both = r.s.rounds.iter().map(|x| (x.plain_ts(), x.spec_ts()));
        let (plain, spec): (Vec<f64>, Vec<f64>) = both.filter(|&(p, s)| p > 0.0 && s > 0.0).unzip();
        rounds.extend([plain, spec]);
    }
    let pairs: Vec<(usize, usize)> = (0..rows.len()).map(|i| (2 * i, 2 * i + 1)).collect();
    let verdicts = crate::stats::pairs::judge(&rounds, &pairs, 0.05, Design::Fixed, 0.0);
    for (r, v) in rows.iter_mut().zip(verdicts) {
        r.verdict = v.established;
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |r| format!("{:.0}%", r * 100.0))
}

fn length(x: Option<f64>) -> String {
    x.map_or("–".into(), |l| format!("{l:.2}"))
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
    let all = rows;
    let rows: Vec<&Row> = rows.iter().filter(|r| r.s.n_drafted > 0).collect();
    let Some(sp) = best.s.speedup else {
        return format!(
            "For {model} on {host}, no speculative setting has an interval (fewer than 2 rounds)."
        );
    };
    let acc = format!(
        "with {} of drafted tokens accepted (mean acceptance length {})",
        pct(best.s.acceptance_rate),
        length(best.s.acceptance_length)
    );
    let interval = format!("{:.2}× ({:.2}–{:.2})", sp.ratio, sp.lo, sp.hi);
    let slower: Vec<String> = (rows.iter())
        .filter(|r| r.verdict < 0)
        .map(|r| r.setting())
        .collect();
    let mut out = if best.verdict > 0 {
        let ties: Vec<String> = (rows[1..].iter())
            .filter(|r| r.s.speedup.is_some_and(|x| x.hi >= sp.lo))
            .map(|r| format!("{} ({:.2}×)", r.setting(), r.ratio()))
            .collect();
        let mut s = format!(
            "For {model} on {host}, {} decodes {interval} faster than plain decoding, {acc}.",
            best.setting()
        );
        s.push_str(&super::wrapped(
            " Not established apart from it: ",
            &ties.join(", "),
            " (their 95% intervals overlap).",
        ));
        s
    } else if slower.len() == all.len() {
        format!(
            "For {model} on {host}, plain decoding is fastest: every speculative setting was \
             established slower; the least slow, {}, decodes at {interval} of plain, {acc}.",
            best.setting()
        )
    } else {
        let mut s = format!(
            "For {model} on {host}, no speculative setting is established faster than plain \
             decoding: the best, {}, measured {interval}, {acc}.",
            best.setting()
        );
        if !slower.is_empty() {
            let _ = write!(s, " Established slower: {}.", slower.join(", "));
        }
        s
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

/// The settings' table (best first); the page and the Markdown both write it.
fn table(rows: &[Row]) -> Table {
    let cols = [
        ("setting", false),
        ("plain t/s", true),
        ("speculative t/s", true),
        ("speedup (95%)", false),
        ("accepted", true),
        ("length", true),
        ("by position", false),
        ("output", false),
    ];
    let f1 = |v: f64| Cell::num(format!("{v:.1}"), v);
    let rows = (rows.iter())
        .map(|r| {
            let s = r.s;
            let speed = s.speedup.map_or("–".into(), |x| {
                format!("{:.2}× ({:.2}–{:.2})", x.ratio, x.lo, x.hi)
            });
            let pos: Vec<String> = r.rates().iter().map(|p| format!("{p:.0}")).collect();
            let output = match s.identical() {
                true => "identical".to_string(),
                false => format!("differs in {}/{}", s.mismatches, s.compared),
            };
            let pos = (!pos.is_empty()).then(|| format!("{}%", pos.join(" / ")));
            vec![
                Cell::text(r.setting()),
                f1(s.plain_ts),
                f1(s.spec_ts),
                Cell::text(speed),
                Cell::text(pct(s.acceptance_rate)),
                Cell::text(length(s.acceptance_length)),
                Cell::text(pos.unwrap_or_else(|| "–".into())),
                Cell::text(output),
            ]
        })
        .collect();
    Table {
        headers: cols.iter().map(|c| c.0.to_string()).collect(),
        numeric: cols.iter().map(|c| c.1).collect(),
        rows,
        meta: vec![],
    }
}

pub struct SpecAnswer {
    pub model: String,
    pub host: String,
    pub sentence: String,
    pub table: Table,
    /// Per setting (best first): its name and the percentage accepted at each draft position.
    pub positions: Vec<(String, Vec<f64>)>,
}

/// The answers of speculative tests, each with the machine it ran on: one per target model
/// and machine, in order of first appearance.
pub fn answers<'a>(tests: impl IntoIterator<Item = (&'a TestRecord, &'a str)>) -> Vec<SpecAnswer> {
    // A tune's plain candidates have no drafter to answer for.
    let drafted = tests.into_iter().filter_map(|(t, host)| {
        let s = t.speculative.as_deref().filter(|s| !s.is_plain())?;
        (t.status == Status::Ok).then_some((t, s, host))
    });
    // A test's target is its model: one answer per target and machine.
    let mut out = Vec::new();
    for ((_, host), group) in group_by(drafted, |(t, _, h)| (t.model.clone(), *h)) {
        let mut rows: Vec<Row> = (group.into_iter())
            .map(|(test, s, _)| Row {
                test,
                s,
                verdict: 0,
            })
            .collect();
        judge(&mut rows);
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
            positions: rows.iter().map(|r| (r.setting(), r.rates())).collect(),
            model: name,
            host: host.to_string(),
        });
    }
    out
}

/// One line per served test whose server drafted: llama-server's acceptance, beside the
/// in-process one of the same target, draft (SHA-256) and K on the machine, if any. Two
/// counts, not an interval: the two sides generated different requests.
pub fn served<'a>(tests: impl IntoIterator<Item = (&'a TestRecord, &'a str)>) -> Vec<String> {
    let tests: Vec<_> = (tests.into_iter())
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
                && s.drafter == Drafter::DraftSimple
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
            a.model,
            a.sentence,
            a.table.markdown()
        );
    }
    let served: String = (served(record.tests.iter().map(|t| (t, host))).iter())
        .map(|l| format!("- {l}\n"))
        .collect();
    o.push_str(&super::wrapped("\n## Served drafting\n\n", &served, ""));
    (!o.is_empty()).then_some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::speculative::{SpecPrompts, SpecRound};

    /// A speculative test of `drafter` on model `m`: each round's plain and speculative
    /// rates (100 tokens each side), `drafted` tokens drafted in all.
    fn test(drafter: Drafter, rates: &[(f64, f64)], drafted: u64) -> TestRecord {
        let prompts = SpecPrompts {
            dataset: "p.txt".into(),
            sha256: "00".into(),
            format: "prompts".into(),
            seed: 1,
            n_prompts: 1,
            prompt_tokens: 10,
            gen_tokens: 100,
        };
        let ns = |ts: f64| (100.0 * 1e9 / ts) as u64;
        let rounds = (rates.iter().enumerate())
            .map(|(i, &(p, s))| SpecRound {
                plain_first: i % 2 == 0,
                plain_tokens: 100,
                plain_ns: ns(p),
                spec_tokens: 100,
                spec_ns: ns(s),
            })
            .collect();
        let mut s = Speculative::of_rounds(drafter, prompts, rounds);
        (s.n_drafts, s.n_drafted, s.n_accepted, s.draft_max) = (drafted / 4, drafted, 0, 4);
        s.derive();
        let mut t = crate::report::export::fixtures::run().tests[0].clone();
        (t.model, t.id) = ("m".into(), format!("m/Q8_0/spec-{drafter}/K4"));
        t.speculative = Some(Box::new(s));
        t
    }

    #[test]
    fn a_self_draft_beside_a_setting_that_drafted_nothing_is_not_called_every_setting_slower() {
        // The draft is the target itself: every draft accepted, and slower every round.
        let draft = test(
            Drafter::DraftSimple,
            &[
                (100.0, 45.0),
                (90.0, 41.0),
                (110.0, 50.0),
                (95.0, 44.0),
                (105.0, 47.0),
            ],
            400,
        );
        // Nothing drafted: two plain passes on a busy machine, 0.58× (0.13–2.60) or so.
        let ngram = test(
            Drafter::NgramSimple,
            &[
                (100.0, 20.0),
                (100.0, 210.0),
                (100.0, 30.0),
                (100.0, 150.0),
                (100.0, 45.0),
            ],
            0,
        );
        let a = answers([(&draft, "h"), (&ngram, "h")]);
        assert_eq!(a.len(), 1, "one target");
        let s = &a[0].sentence;
        assert!(!s.contains("every speculative setting"), "{s}");
        assert!(
            s.contains(
                "no speculative setting is established faster than plain decoding: the \
                 best, draft-simple, K = 4"
            ),
            "{s}"
        );
        assert!(
            s.contains("Established slower: draft-simple, K = 4."),
            "{s}"
        );
        // Alone, the self-draft is every setting, and established slower.
        let s = &answers([(&draft, "h")])[0].sentence;
        assert!(
            s.contains("every speculative setting was established slower"),
            "{s}"
        );
    }

    #[test]
    fn the_page_draws_the_settings_table_and_acceptance_by_position_on_the_chart_layer() {
        use crate::record::speculative::Position;
        use crate::report::leaderboard::sections::{Doc, speculative};
        let mut t = test(Drafter::NgramSimple, &[(100.0, 120.0), (90.0, 130.0)], 40);
        let s = t.speculative.as_mut().unwrap();
        s.by_position = (0..10)
            .map(|k| Position {
                drafted: 10,
                accepted: 10 - k,
            })
            .collect();
        let mut run = crate::report::export::fixtures::run();
        run.tests = vec![t];
        let b = crate::report::leaderboard::load::board(
            vec![("r.json".into(), run)],
            &Default::default(),
        );
        let mut page = Doc {
            html: true,
            o: String::new(),
        };
        speculative(&mut page, &b);
        let html = page.o;
        assert!(
            html.contains(r#"<table class="sortable answer-table">"#),
            "{html}"
        );
        // Ten positions: two charts of the shared layer, the second one continued.
        assert_eq!(html.matches(r#"<div class="card chart-card""#).count(), 2);
        assert!(html.contains("Acceptance by draft position: m on h (continued)"));
        assert!(html.contains(r#"data-scale-group="acceptance" data-scale="100""#));
        let mut md = Doc {
            html: false,
            o: String::new(),
        };
        speculative(&mut md, &b);
        assert!(
            md.o.contains("| setting             | plain t/s |"),
            "{}",
            md.o
        );
        assert!(md.o.contains("| 100 / 90 / 80 / 70 / 60 / 50 / 40 / 30 / 20 / 10% |"));
    }
}
