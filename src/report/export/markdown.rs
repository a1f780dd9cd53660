use crate::config::knobs::{Level, PARAMS};
use crate::record::{RunRecord, Status, TestRecord};
use crate::util::units::{format_params, format_size};

/// The parameters llama-bench's table always shows (ngl on GPU builds), in their own
/// columns before the others.
const ALWAYS: &[&str] = &["n_gpu_layers", "n_threads"];

/// llama-bench's Markdown table: model | size | params | backend | ngl | threads |
/// <parameters that differ from llama-bench's defaults or vary> | test | t/s.
pub(super) fn render(run: &RunRecord) -> Vec<u8> {
    // Serving tests and the depth curve get tables of their own, after this one.
    let mut extra = super::serving::render(run);
    extra.push_str(&super::depth::render(run));
    let tests: Vec<&TestRecord> = (run.tests.iter())
        .filter(|t| t.kind.is_llama_bench())
        .collect();
    if tests.is_empty() {
        return extra.trim_start().as_bytes().to_vec();
    }
    let cols = columns(run, &tests);
    let mut rows = vec![cols.iter().map(|(h, _)| h.to_string()).collect()];
    for t in &tests {
        rows.push(cols.iter().map(|(_, cell)| cell(t)).collect());
    }
    let mut out = table(&rows);
    out.push_str(&fastest_lines(run, &tests));
    out.push_str(&extra);
    out.into_bytes()
}

type Column<'a> = (&'a str, Box<dyn Fn(&TestRecord) -> String + 'a>);

/// The columns `tests` need, in llama-bench's order: ngl on GPU builds; each other parameter
/// where a test is off llama-bench's default; the real bits per weight (llama.cpp falls back
/// from K-quants on narrow tensors, so a name can mislead); interval, roofline and notes.
fn columns<'a>(run: &'a RunRecord, tests: &[&TestRecord]) -> Vec<Column<'a>> {
    let any = |f: &dyn Fn(&TestRecord) -> bool| tests.iter().any(|t| f(t));
    let bpw = move |t: &TestRecord| run.model_of(t).and_then(|m| m.bits_per_weight);
    let size = |t: &TestRecord| t.model_size.map(format_size).unwrap_or_default();
    let params = |t: &TestRecord| t.model_n_params.map(format_params).unwrap_or_default();
    let mut cols: Vec<Column> = vec![
        ("model", Box::new(move |t| model_name(run, t))),
        ("size", Box::new(size)),
        ("params", Box::new(params)),
    ];
    if any(&|t| bpw(t).is_some()) {
        cols.push((
            "bpw",
            Box::new(move |t| bpw(t).map(|b| format!("{b:.2}")).unwrap_or_default()),
        ));
    }
    cols.push(("backend", Box::new(|t| t.backends.clone())));
    if run.run.llama_cpp.gpu_backend != "cpu" {
        cols.push(("ngl", Box::new(|t| t.params.n_gpu_layers.to_string())));
    }
    cols.push(("threads", Box::new(|t| t.params.n_threads.to_string())));
    let shown = (PARAMS.iter())
        .filter(|k| k.level != Level::Test && !ALWAYS.contains(&k.name))
        .filter(|k| any(&|t| k.get(&t.params) != k.default_value()));
    for k in shown {
        cols.push((k.header, Box::new(move |t| k.get(&t.params).show())));
    }
    cols.push(("test", Box::new(|t| t.test.clone())));
    cols.push(("t/s", Box::new(rate)));
    if any(&|t| interval(t).is_some()) {
        cols.push((
            "95% interval",
            Box::new(|t| interval(t).unwrap_or_default()),
        ));
    }
    if any(&|t| roof(t).is_some()) {
        cols.push(("% roofline", Box::new(roof_share)));
    }
    let has_notes = |t: &TestRecord| {
        t.stats.as_ref().is_some_and(|s| !s.notes().is_empty()) || !t.not_honoured.is_empty()
    };
    if any(&has_notes) {
        cols.push(("notes", Box::new(notes)));
    }
    cols
}

/// The model column: llama.cpp's description of it, with a mark on requantized files.
fn model_name(run: &RunRecord, t: &TestRecord) -> String {
    let provenance = run.model_of(t).and_then(|m| m.provenance.as_ref());
    let requantized = provenance.is_some_and(|p| p.requantized);
    let mark = if requantized { " (requant)" } else { "" };
    format!("{}{mark}", t.model_type.as_ref().unwrap_or(&t.model))
}

/// The share of the roofline, or "above ceiling" (a share above 100% would only measure
/// the ceiling's error); empty without a roofline.
fn roof_share(t: &TestRecord) -> String {
    roof(t).map_or_else(String::new, |r| match r.above_ceiling {
        true => "above ceiling".to_string(),
        false => format!("{:.0}%", r.percent_of_roofline),
    })
}

/// The notes column: the statistics' notes, then each setting not honoured
/// ("poll = 0: not honoured, ..." -> "poll not honoured").
fn notes(t: &TestRecord) -> String {
    let mut notes = t.stats.as_ref().map(|s| s.notes()).unwrap_or_default();
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
    let lines: String = answers.iter().map(|f| f.line() + "\n").collect();
    crate::report::wrapped("\n", &lines, "")
}

fn roof(t: &TestRecord) -> Option<&crate::machine::roofline::DecodeRoofline> {
    t.resources.as_ref().and_then(|r| r.roofline.as_ref())
}

/// "[690.10, 712.80] 3 rounds" or "[690.10, 712.80] 1 launch".
fn interval(t: &TestRecord) -> Option<String> {
    if t.status != Status::Ok {
        return None;
    }
    let ci = t.stats.as_ref()?.interval?;
    let covers = crate::report::covers_text(&ci);
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
        let out = String::from_utf8(render(&fixtures::run())).unwrap();
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
        let out = String::from_utf8(render(&run)).unwrap();
        assert!(!out.contains("| sm ") && !out.contains("| nkvo "), "{out}");
        run.tests[0].params.split_mode = crate::config::SplitMode::Row;
        run.tests[0].params.no_kv_offload = true;
        run.run.llama_cpp.gpu_backend = "cuda".into();
        let out = String::from_utf8(render(&run)).unwrap();
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
        let out = String::from_utf8(render(&run)).unwrap();
        let lines: Vec<_> = out.lines().collect();
        assert!(lines[0].contains("| notes "), "{out}");
        assert!(lines[2].contains(&note), "{out}");
        // A quiet test: no notes column at all.
        run.tests[0].stats = Some(analyse(&[100.0, 100.5, 99.5], StopReason::Fixed, None, 1));
        let out = String::from_utf8(render(&run)).unwrap();
        assert!(!out.contains("notes"), "{out}");
    }
}
