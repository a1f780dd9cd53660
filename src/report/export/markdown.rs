use super::Exporter;
use crate::config::knobs::{Knob, Level, PARAMS};
use crate::record::{ModelRecord, RunRecord, Status, TestRecord};
use crate::util::units::{format_params, format_size};

/// llama-bench's Markdown table: model | size | params | backend | ngl | threads |
/// <parameters that differ from llama-bench's defaults or vary> | test | t/s.
pub struct Markdown;

/// The parameters llama-bench's table always shows (ngl on GPU builds), in their own
/// columns before the others.
const ALWAYS: &[&str] = &["n_gpu_layers", "n_threads"];

impl Exporter for Markdown {
    fn render(&self, run: &RunRecord) -> Vec<u8> {
        // Serving tests and the depth curve get tables of their own, after this one.
        let mut extra = super::serving::render(run);
        extra.push_str(&super::depth::render(run));
        let tests: Vec<&TestRecord> = run
            .tests
            .iter()
            .filter(|t| t.kind.is_llama_bench())
            .collect();
        if tests.is_empty() {
            return extra.trim_start().as_bytes().to_vec();
        }
        let cols = Columns::of(run, &tests);
        let mut rows = vec![cols.header()];
        rows.extend(tests.iter().map(|t| cols.row(run, t)));
        let mut out = table(&rows);
        out.push_str(&fastest_lines(run, &tests));
        out.push_str(&extra);
        out.into_bytes()
    }
}

/// The columns of the table that not every run has.
struct Columns {
    /// ngl, on GPU builds.
    gpu: bool,
    /// Every other parameter of the table (those of the test's name aside) is shown when a
    /// test differs from llama-bench's default: so also when it varies.
    shown: Vec<&'static Knob>,
    /// Ladder variants: the real bits per weight (llama.cpp falls back from K-quants on
    /// narrow tensors, so the name can mislead).
    bpw: bool,
    /// The interval that applies, and what it covers: one launch's repetitions, or the
    /// rounds (fresh contexts) when the test ran several.
    interval: bool,
    roofline: bool,
    notes: bool,
}

impl Columns {
    fn of(run: &RunRecord, tests: &[&TestRecord]) -> Columns {
        Columns {
            gpu: run.run.llama_cpp.gpu_backend != "cpu",
            shown: PARAMS
                .iter()
                .filter(|k| k.level != Level::Test && !ALWAYS.contains(&k.name))
                .filter(|k| tests.iter().any(|t| k.get(&t.params) != k.default_value()))
                .collect(),
            bpw: tests
                .iter()
                .any(|t| model_of(run, t).is_some_and(|m| m.bits_per_weight.is_some())),
            interval: tests.iter().any(|t| interval(t).is_some()),
            roofline: tests.iter().any(|t| roof(t).is_some()),
            notes: tests.iter().any(|t| {
                t.stats.as_ref().is_some_and(|s| !s.notes().is_empty())
                    || !t.not_honoured.is_empty()
            }),
        }
    }

    fn header(&self) -> Vec<String> {
        let mut header = vec!["model", "size", "params"];
        if self.bpw {
            header.push("bpw");
        }
        header.push("backend");
        if self.gpu {
            header.push("ngl");
        }
        header.push("threads");
        header.extend(self.shown.iter().map(|k| k.header));
        header.extend(["test", "t/s"]);
        if self.interval {
            header.push("95% interval");
        }
        if self.roofline {
            header.push("% roofline");
        }
        if self.notes {
            header.push("notes");
        }
        header.iter().map(|s| s.to_string()).collect()
    }

    fn row(&self, run: &RunRecord, t: &TestRecord) -> Vec<String> {
        let mut row = vec![
            model_name(run, t),
            t.model_size.map(format_size).unwrap_or_default(),
            t.model_n_params.map(format_params).unwrap_or_default(),
        ];
        if self.bpw {
            let bpw = model_of(run, t).and_then(|m| m.bits_per_weight);
            row.push(bpw.map(|b| format!("{b:.2}")).unwrap_or_default());
        }
        row.push(t.backends.clone());
        if self.gpu {
            row.push(t.params.n_gpu_layers.to_string());
        }
        row.push(t.params.n_threads.to_string());
        row.extend(self.shown.iter().map(|k| k.get(&t.params).show()));
        row.push(t.test.clone());
        row.push(rate(t));
        if self.interval {
            row.push(interval(t).unwrap_or_default());
        }
        if self.roofline {
            row.push(roof_share(t));
        }
        if self.notes {
            row.push(notes(t));
        }
        row
    }
}

fn model_of<'a>(run: &'a RunRecord, t: &TestRecord) -> Option<&'a ModelRecord> {
    run.models.iter().find(|m| m.name == t.model)
}

/// The model column: llama.cpp's description of it, with a mark on requantized files.
fn model_name(run: &RunRecord, t: &TestRecord) -> String {
    let requantized = model_of(run, t)
        .and_then(|m| m.provenance.as_ref())
        .is_some_and(|p| p.requantized);
    let mut name = t.model_type.clone().unwrap_or_else(|| t.model.clone());
    if requantized {
        name.push_str(" (requant)");
    }
    name
}

/// The share of the roofline, or "above ceiling" (a share above 100% would only measure
/// the ceiling's error); empty without a roofline.
fn roof_share(t: &TestRecord) -> String {
    let pct = roof(t).map(|r| match r.above_ceiling {
        true => "above ceiling".to_string(),
        false => format!("{:.0}%", r.percent_of_roofline),
    });
    pct.unwrap_or_default()
}

/// The notes column: the statistics' notes, then each setting not honoured
/// ("poll = 0: not honoured, ..." -> "poll not honoured").
fn notes(t: &TestRecord) -> String {
    let mut notes: Vec<String> = t
        .stats
        .as_ref()
        .map(|s| s.notes().iter().map(|n| n.to_string()).collect())
        .unwrap_or_default();
    for n in &t.not_honoured {
        let name = n.split([' ', ':']).next().unwrap_or(n);
        notes.push(format!("{name} not honoured"));
    }
    notes.join(", ")
}

/// A placement sweep's answer: the fastest placement per model and test, with ties, after
/// a blank line; empty when there is none.
fn fastest_lines(run: &RunRecord, tests: &[&TestRecord]) -> String {
    // One run: its tests with rounds are paired by round, under the run's design.
    let one = crate::ladder::table::design(run)
        .map(|design| crate::stats::resolve::Run { id: 0, design });
    let answers = crate::report::fastest::fastest(tests, &vec![one; tests.len()]);
    let mut out = String::new();
    if !answers.is_empty() {
        out.push('\n');
        for f in answers {
            out.push_str(&format!("{}\n", f.line()));
        }
    }
    out
}

fn roof(t: &TestRecord) -> Option<&crate::machine::roofline::DecodeRoofline> {
    t.resources.as_ref().and_then(|r| r.roofline.as_ref())
}

/// "[690.10, 712.80] 3 rounds" or "[690.10, 712.80] 1 launch".
fn interval(t: &TestRecord) -> Option<String> {
    use crate::stats::analysis::Covers;
    if t.status != Status::Ok {
        return None;
    }
    let ci = t.stats.as_ref()?.interval?;
    let covers = match ci.covers {
        Covers::WithinLaunch => "1 launch".to_string(),
        Covers::BetweenRounds => format!("{} rounds", ci.n),
    };
    Some(format!("[{:.2}, {:.2}] {covers}", ci.lo, ci.hi))
}

fn rate(t: &TestRecord) -> String {
    match (t.status, t.avg_ts, t.stddev_ts) {
        (Status::Ok, Some(avg), Some(sd)) => format!("{avg:.2} ± {sd:.2}"),
        _ => format!("failed: {}", t.error.as_deref().unwrap_or("unknown error")),
    }
}

/// Aligned Markdown: text columns left, numeric ones (size onwards) right, as llama-bench.
fn table(rows: &[Vec<String>]) -> String {
    crate::util::table::aligned(rows, &|c| {
        c == 0
            || matches!(
                rows[0][c].as_str(),
                "backend" | "test" | "notes" | "95% interval"
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixtures;

    #[test]
    fn renders_a_llama_bench_style_table() {
        let out = String::from_utf8(Markdown.render(&fixtures::run())).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert!(lines[0].starts_with("| model "), "{out}");
        assert!(
            lines[0].contains("| threads |") && !lines[0].contains("ngl"),
            "{out}"
        );
        assert!(
            !lines[0].contains("n_batch"),
            "defaults are not shown: {out}"
        );
        assert!(lines[2].contains("llama ?B Q4_1") && lines[2].contains("96.00 MiB"));
        assert!(lines[2].contains("134.52 M"));
        // 512 tokens in 1.000 s and 1.024 s: mean of rates 506.0, sd 8.4
        assert!(
            lines[2].contains("| pp512 |") && lines[2].contains("506.00 ± 8.49"),
            "{out}"
        );
        assert!(
            lines[3].contains("failed: failed to create context"),
            "{out}"
        );
    }

    #[test]
    fn gpu_placement_columns_appear_only_when_they_differ_from_the_defaults() {
        let mut run = fixtures::run();
        let out = String::from_utf8(Markdown.render(&run)).unwrap();
        assert!(!out.contains("| sm ") && !out.contains("| nkvo "), "{out}");
        run.tests[0].params.split_mode = crate::config::SplitMode::Row;
        run.tests[0].params.no_kv_offload = true;
        run.run.llama_cpp.gpu_backend = "cuda".into();
        let out = String::from_utf8(Markdown.render(&run)).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert!(
            lines[0].contains(" ngl |") && lines[0].contains(" sm |"),
            "{out}"
        );
        assert!(
            lines[0].contains(" nkvo |") && !lines[0].contains(" mg |"),
            "{out}"
        );
        assert!(
            lines[2].contains(" row |") && lines[3].contains(" layer |"),
            "{out}"
        );
    }

    #[test]
    fn sizes_and_params_use_llama_bench_units() {
        assert_eq!(format_size(3 * 1024 * 1024 * 1024 / 2), "1.50 GiB");
        assert_eq!(format_params(7_241_732_096), "7.24 B");
    }

    #[test]
    fn a_noisy_test_is_noted_with_its_cv() {
        use crate::stats::analysis::{StopReason, analyse};
        let mut run = fixtures::run();
        let rates = [100.0 - 7.3, 100.0 + 7.3, 100.0 - 7.3, 100.0 + 7.3, 100.0];
        let stats = analyse(&rates, StopReason::Fixed, None, 1);
        let note = format!("noisy: CV {:.1}%", stats.cv * 100.0);
        run.tests[0].stats = Some(stats);
        let out = String::from_utf8(Markdown.render(&run)).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert!(lines[0].contains("| notes "), "{out}");
        assert!(lines[2].contains(&note), "{out}");
        // A quiet test: no notes column at all.
        run.tests[0].stats = Some(analyse(&[100.0, 100.5, 99.5], StopReason::Fixed, None, 1));
        let out = String::from_utf8(Markdown.render(&run)).unwrap();
        assert!(!out.contains("notes"), "{out}");
    }
}
