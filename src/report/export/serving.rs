//! Markdown for serving tests: one table (per-request latencies next to llama-batched-bench's
//! aggregate rates) and, when targets are set, the capacity of each test series.

use crate::config::serving::Mode;
use crate::record::{RunRecord, Status, TestRecord, serving::Serving};
use crate::report::group_by;
use crate::serving::metrics;

/// `x` with `digits` decimals, or "-".
fn or_dash(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The table's columns, split at '|'.
const HEADER: &str = "\
    model|test|B|TTFT ms p50/p90|ITL ms p50/p90/p99|E2E ms p50|req t/s|S_PP t/s|S_TG t/s|\
    S t/s|overhead|targets|$/Mtok";

/// The serving table and capacity lines, preceded by a blank line; empty without serving
/// tests.
pub fn render(run: &RunRecord) -> String {
    let all: Vec<&TestRecord> = (run.tests.iter())
        .filter(|t| Mode::parse(t.kind.as_str()).is_some())
        .collect();
    if all.is_empty() {
        return String::new();
    }
    let tests: Vec<&TestRecord> = (all.iter().copied())
        .filter(|t| t.serving.is_some())
        .collect();
    let mut rows = vec![HEADER.split('|').map(String::from).collect::<Vec<_>>()];
    for t in &tests {
        let s = t.serving.as_ref().expect("filtered");
        if t.status != Status::Ok {
            rows.push(failed_row(t, s.n_parallel.to_string()));
        } else {
            let mut row = vec![t.model.clone(), t.test.clone(), s.n_parallel.to_string()];
            row.extend(figures(s));
            rows.push(row);
        }
    }
    // Failed tests have no serving figures: list them too.
    for t in all.iter().filter(|t| t.serving.is_none()) {
        rows.push(failed_row(t, String::new()));
    }
    let mut out = format!("\n{}", crate::util::table::aligned(&rows, &|c| c <= 1));
    out.push_str(&capacity_lines(&tests));
    out
}

/// The row of a failed test: its model, name and batch size `b`, then its error.
fn failed_row(t: &TestRecord, b: String) -> Vec<String> {
    let error = t.error.as_deref().unwrap_or("unknown error");
    let mut row = vec![
        t.model.clone(),
        t.test.clone(),
        b,
        format!("failed: {error}"),
    ];
    row.resize(HEADER.split('|').count(), String::new());
    row
}

/// The figures of a successful serving test: the columns after "B".
fn figures(s: &Serving) -> [String; 10] {
    let itl = &s.itl_ms;
    [
        format!("{:.1} / {:.1}", s.ttft_ms.p50, s.ttft_ms.p90),
        format!("{:.1} / {:.1} / {:.1}", itl.p50, itl.p90, itl.p99),
        format!("{:.1}", s.e2e_ms.p50),
        or_dash(s.per_request_ts, 2),
        or_dash(s.aggregate_pp_ts, 2),
        or_dash(s.aggregate_ts, 2),
        or_dash(s.total_ts, 2),
        // Over HTTP the time outside the engine is the server's, not seen here.
        if s.transport.is_in_process() {
            format!("{:.1}%", 100.0 * s.overhead_fraction)
        } else {
            "-".into()
        },
        match s.meets_targets {
            Some(true) => "met".into(),
            Some(false) => "missed".into(),
            None => "-".into(),
        },
        or_dash(s.cost_per_mtok, 3),
    ]
}

/// One line per (model, mode, shared prompt) series with targets: the largest B or arrival
/// rate that meets them, and its rate and cost.
fn capacity_lines(tests: &[&TestRecord]) -> String {
    let with_targets = tests.iter().filter(|t| {
        let s = t.serving.as_ref().expect("serving tests");
        s.targets.is_some() && s.mode != Mode::Request && t.status == Status::Ok
    });
    let series = group_by(with_targets, |t| {
        let s = t.serving.as_ref().expect("serving tests");
        let shared = s.shared_prompt.then_some(" (shared prompt)");
        format!("{} {}{}", t.model, s.mode, shared.unwrap_or_default())
    });
    let mut out = String::new();
    for (key, ts) in series {
        let servings: Vec<&Serving> = ts.iter().filter_map(|t| t.serving.as_deref()).collect();
        let load = |s: &Serving| s.arrival_rate.unwrap_or(f64::from(s.n_parallel));
        let meets = |s: &Serving| (load(s), s.meets_targets == Some(true));
        let points: Vec<(f64, bool)> = servings.iter().copied().map(meets).collect();
        let tg = servings[0].targets.as_ref().expect("filtered");
        let per_request = tg.per_request_ts.map(|x| format!("per-request ≥ {x} t/s"));
        let ttft = tg.ttft_ms.map(|y| format!("TTFT ≤ {y} ms"));
        let what: Vec<String> = [per_request, ttft].into_iter().flatten().collect();
        let (what, p) = (what.join(", "), tg.percentile);
        let line = match metrics::capacity(&points) {
            None => format!("capacity, {key}: no measured point meets {what} at p{p}"),
            Some(i) => {
                let s = servings[i];
                let at = match s.arrival_rate {
                    Some(r) => format!("{r} requests/s"),
                    None => format!("B = {}", s.n_parallel),
                };
                let cost = s.cost_per_mtok.map_or(String::new(), |c| {
                    format!(
                        ", {c:.3} per million output tokens at {}/h",
                        s.price_per_hour.unwrap_or(0.0)
                    )
                });
                format!(
                    "capacity, {key}: {at} meets {what} at p{p}: {} t/s output ({} t/s per request){cost}",
                    or_dash(Some(s.output_ts), 1),
                    or_dash(s.per_request_ts, 1),
                )
            }
        };
        // The key carries the model's name, from the result file.
        out.push_str(&format!("\n{}\n", crate::util::markdown::text(&line)));
    }
    out
}
