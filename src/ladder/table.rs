//! The ladder table: one row per variant with size, speed and quality side by side, and the
//! Pareto front on decode speed and KLD marked. Pure: built from a result record, rendered
//! to Markdown or JSON without I/O.

use serde::Serialize;

use crate::record::{ModelRecord, RunRecord, Status, TestRecord};
use crate::stats::compare::NoiseFloor;
use crate::stats::pairs::Design;
use crate::stats::resolve::{Choice, Resolution, resolve};
use crate::stats::ties::Figure;

/// The formats `tpsbench ladder --output` prints the table in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    /// A Markdown table.
    Md,
    /// A JSON array, one object per variant.
    Json,
}

pub fn render(rows: &[Row], format: TableFormat) -> String {
    match format {
        TableFormat::Md => markdown(rows),
        TableFormat::Json => json(rows),
    }
}

/// One variant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub model: String,
    #[serde(rename = "type")]
    pub quant_type: String,
    pub bits_per_weight: Option<f64>,
    pub size_gib: Option<f64>,
    /// Mean t/s of the first prompt test (`pp_test`) and the first generation test.
    pub pp_test: Option<String>,
    pub pp_ts: Option<f64>,
    pub tg_test: Option<String>,
    pub tg_ts: Option<f64>,
    pub kld_mean: Option<f64>,
    pub kld_uncertainty: Option<f64>,
    /// The 99.9th percentile of the per-token KLD: the rare, large failures a mean hides.
    pub kld_p999: Option<f64>,
    pub ppl_ratio: Option<f64>,
    pub same_top_p: Option<f64>,
    pub is_reference: bool,
    pub requantized: bool,
    pub synthetic: bool,
    /// The decode test's 95% interval (`stats.interval`: between rounds, or within one
    /// launch for one round), when it has one.
    pub tg_ci: Option<(f64, f64)>,
    /// On the Pareto front with ties kept: no other variant is at least as good on both
    /// estimates and established better (intervals apart) on one.
    pub pareto: bool,
    /// The other variants on the front whose decode speed ties with this one's: which of
    /// them is faster is not established (paired by round within one run with rounds,
    /// `stats::resolve`; intervals overlap otherwise).
    pub ties: Vec<String>,
    /// Also on the Pareto front of KLD against `prefill` (pp t/s) and against `size` (the
    /// smaller the better), as the decode front is judged.
    pub fronts: Vec<&'static str>,
    /// The decode test's round medians, in round order (empty for one round).
    #[serde(skip)]
    pub tg_rounds: Vec<f64>,
}

/// The run's design of rounds, as the answer's ties are judged: `None` for one round (no
/// pairing), sequential for `rounds = "auto"`.
pub fn design(run: &RunRecord) -> Option<Design> {
    match &run.run.rounds_auto {
        Some(a) => Some(Design::sequential(a.max_rounds)),
        None => (run.run.rounds >= 2).then_some(Design::Fixed),
    }
}

/// The variants of each base file (indices into `rows`), in record order.
pub fn groups(run: &RunRecord, rows: &[Row]) -> Vec<Vec<usize>> {
    let bases = run.models.iter().filter_map(|m| m.provenance.as_ref());
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, p) in bases.enumerate().take(rows.len()) {
        match out.iter_mut().find(|(k, _)| *k == p.base_sha256) {
            Some((_, v)) => v.push(i),
            None => out.push((&p.base_sha256, vec![i])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// The rows of every model in the record that has provenance (ladder variants and
/// synthetic models), in record order. The Pareto front is marked among the variants of
/// the same base file.
pub fn rows(run: &RunRecord) -> Vec<Row> {
    rows_resolved(run, DEFAULT_KLD_BUDGET, &NoiseFloor::assumed()).0
}

/// The KLD budget of the ladder's answer, in nats (the leaderboard's default).
pub const DEFAULT_KLD_BUDGET: f64 = 0.05;

/// The rows, and each base file's resolution (its variants' indices with the answer over
/// them: `stats::resolve` at KLD budget `budget`).
/// Rows measured apart (one round each) are judged against `floor`, the noise between
/// launches.
pub fn rows_resolved(
    run: &RunRecord,
    budget: f64,
    floor: &NoiseFloor,
) -> (Vec<Row>, Vec<(Vec<usize>, Resolution)>) {
    let with_provenance = run.models.iter().filter(|m| m.provenance.is_some());
    let mut out: Vec<Row> = with_provenance.map(|m| row(m, &run.tests)).collect();
    let design = design(run);
    let mut resolved = Vec::new();
    for idx in groups(run, &out) {
        let mut group: Vec<Row> = idx.iter().map(|&i| out[i].clone()).collect();
        let r = mark_pareto_by(&mut group, design, budget, floor);
        mark_fronts(&mut group, floor);
        for (g, &i) in group.into_iter().zip(&idx) {
            out[i] = g;
        }
        resolved.push((idx, r));
    }
    (out, resolved)
}

fn first_ok<'a>(tests: &'a [TestRecord], model: &str, generation: bool) -> Option<&'a TestRecord> {
    tests.iter().find(|t| {
        t.model == model
            && t.status == Status::Ok
            && (t.params.n_gen > 0) == generation
            && t.avg_ts.is_some()
    })
}

fn row(m: &ModelRecord, tests: &[TestRecord]) -> Row {
    let prov = m.provenance.as_ref();
    let pp = first_ok(tests, &m.name, false);
    let tg = first_ok(tests, &m.name, true);
    let q = m.quality.as_ref();
    Row {
        model: m.name.clone(),
        quant_type: prov
            .map(|p| p.quant_type.clone())
            .or_else(|| m.quantization.clone())
            .unwrap_or_default(),
        bits_per_weight: m.bits_per_weight,
        size_gib: m.model_size.map(|s| s as f64 / crate::util::units::GIB),
        pp_test: pp.map(|t| t.test.clone()),
        pp_ts: pp.and_then(|t| t.avg_ts),
        tg_test: tg.map(|t| t.test.clone()),
        tg_ts: tg.and_then(|t| t.avg_ts),
        tg_ci: tg
            .and_then(|t| t.stats.as_ref()?.interval)
            .map(|c| (c.lo, c.hi)),
        kld_mean: q.map(|q| q.kld_mean),
        kld_uncertainty: q.map(|q| q.kld_mean_uncertainty),
        kld_p999: q.and_then(|q| q.kld_percentiles).map(|p| p.p99_9),
        ppl_ratio: q.map(|q| q.ln_ppl_ratio.exp()),
        same_top_p: q.map(|q| q.same_top_p),
        is_reference: q.is_some_and(|q| q.reference == m.name),
        requantized: prov.is_some_and(|p| p.requantized),
        synthetic: prov.is_some_and(|p| p.synthetic),
        pareto: false,
        ties: Vec::new(),
        fronts: Vec::new(),
        tg_rounds: tg
            .map(|t| t.round_medians())
            .filter(|r| r.len() >= 2)
            .unwrap_or_default(),
    }
}

/// The speed of a row as the answer compares it.
fn speed(r: &Row) -> Option<Figure> {
    let ts = r.tg_ts?;
    let (lo, hi) = r.tg_ci.unwrap_or((ts, ts));
    Some(Figure { value: ts, lo, hi })
}

/// The rows that have a `figure`, and their choices (KLD within ±1.96 of its uncertainty).
fn choices(rows: &[Row], figure: impl Fn(&Row) -> Option<Figure>) -> (Vec<usize>, Vec<Choice>) {
    let choice = |(i, r): (usize, &Row)| {
        let error = r
            .kld_mean
            .map(|k| Figure::around(k, 1.96 * r.kld_uncertainty.unwrap_or(0.0)));
        let c = Choice {
            speed: figure(r)?,
            rounds: r.tg_rounds.clone(),
            error,
        };
        Some((i, c))
    };
    rows.iter().enumerate().filter_map(choice).unzip()
}

/// Marks the Pareto front on (higher tg t/s, lower KLD) with ties kept: rows with interleaved
/// rounds are compared paired by round (`stats::resolve`), the others against `floor`; KLD
/// by ±1.96 of its uncertainty. Rows lacking either figure are never on the front; front
/// rows whose speeds tie name each other. Returns the resolution over the rows with a
/// decode rate (its indices count those rows only).
pub fn mark_pareto_by(
    rows: &mut [Row],
    design: Option<Design>,
    budget: f64,
    floor: &NoiseFloor,
) -> Resolution {
    let (idx, choices) = choices(rows, speed);
    let r = resolve(&choices, budget, design, 0.05, floor);
    for row in rows.iter_mut() {
        row.pareto = false;
        row.ties.clear();
    }
    for (k, &i) in idx.iter().enumerate() {
        rows[i].pareto = r.front[k];
        rows[i].ties = r.front_ties[k]
            .iter()
            .map(|&m| rows[idx[m]].quant_type.clone())
            .collect();
    }
    r
}

/// Marks the fronts of KLD against prefill speed and against size, with the decode front's
/// machinery (`stats::resolve`): a size is a speed of 1/size, known exactly.
pub fn mark_fronts(rows: &mut [Row], floor: &NoiseFloor) {
    type Axis = fn(&Row) -> Option<Figure>;
    let axes: [(&'static str, Axis); 2] = [
        ("prefill", |r| r.pp_ts.map(Figure::point)),
        ("size", |r| {
            Some(Figure::point(1.0 / r.size_gib.filter(|&s| s > 0.0)?))
        }),
    ];
    for row in rows.iter_mut() {
        row.fronts.clear();
    }
    for (name, figure) in axes {
        let (idx, mut choices) = choices(rows, figure);
        choices.iter_mut().for_each(|c| c.rounds.clear());
        let r = resolve(&choices, DEFAULT_KLD_BUDGET, None, 0.05, floor);
        for (k, &i) in idx.iter().enumerate() {
            if r.front[k] {
                rows[i].fronts.push(name);
            }
        }
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// A Markdown table; `*` marks the Pareto front, `ref` the reference.
pub fn markdown(rows: &[Row]) -> String {
    let pp = rows
        .iter()
        .find_map(|r| r.pp_test.as_deref())
        .unwrap_or("pp");
    let tg = rows
        .iter()
        .find_map(|r| r.tg_test.as_deref())
        .unwrap_or("tg");
    let header = format!(
        "model|type|bpw|size GiB|{pp} t/s|{tg} t/s|KLD|99.9% KLD|PPL ratio|same top p|Pareto"
    );
    let mut table = vec![header.split('|').map(String::from).collect()];
    for r in rows {
        let tags = [(r.requantized, " (requant)"), (r.synthetic, " (synthetic)")];
        let ty = r.quant_type.clone() + &tags.map(|(on, t)| if on { t } else { "" }).concat();
        let kld = match (r.is_reference, r.kld_mean, r.kld_uncertainty) {
            (true, _, _) => "ref".to_string(),
            (_, Some(k), Some(u)) => format!("{k:.5} ± {u:.5}"),
            _ => "-".into(),
        };
        table.push(vec![
            r.model.clone(),
            ty,
            opt(r.bits_per_weight, |x| format!("{x:.2}")),
            opt(r.size_gib, |x| format!("{x:.3}")),
            opt(r.pp_ts, |x| format!("{x:.2}")),
            match (r.tg_ts, r.tg_ci) {
                (Some(x), Some((lo, hi))) => format!("{x:.2} [{lo:.2}, {hi:.2}]"),
                (x, _) => opt(x, |x| format!("{x:.2}")),
            },
            kld,
            opt(r.kld_p999.filter(|_| !r.is_reference), |x| {
                format!("{x:.5}")
            }),
            opt(r.ppl_ratio, |x| format!("{x:.4}")),
            opt(r.same_top_p, |x| format!("{:.2} %", 100.0 * x)),
            pareto_cell(r),
        ]);
    }
    // The type and model columns are text; the figures align right.
    crate::util::table::aligned(&table, &|c| c < 2)
}

/// `*` on the decode front (with its speed ties), then the other fronts the row is on;
/// `dominated` on none.
fn pareto_cell(r: &Row) -> String {
    let mut cell = match (r.pareto, r.ties.is_empty()) {
        (false, _) => String::new(),
        (true, true) => "*".into(),
        (true, false) => format!("* (speed ties {})", r.ties.join(", ")),
    };
    if !r.fronts.is_empty() {
        let sep = if cell.is_empty() { "" } else { "; " };
        cell = format!("{cell}{sep}{}", r.fronts.join(", "));
    }
    match (cell.is_empty(), r.kld_mean) {
        (true, Some(_)) => "dominated".into(),
        _ => cell,
    }
}

pub fn json(rows: &[Row]) -> String {
    serde_json::to_string_pretty(rows).expect("rows serialize") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The front with the default budget and the assumed noise floor.
    fn mark_pareto(rows: &mut [Row]) {
        mark_pareto_by(rows, None, DEFAULT_KLD_BUDGET, &NoiseFloor::assumed());
    }

    fn r(name: &str, tg: Option<f64>, kld: Option<f64>) -> Row {
        Row {
            model: name.into(),
            quant_type: name.into(),
            bits_per_weight: Some(4.5),
            size_gib: Some(0.1),
            pp_test: Some("pp512".into()),
            pp_ts: Some(100.0),
            tg_test: Some("tg128".into()),
            tg_ts: tg,
            kld_mean: kld,
            kld_uncertainty: kld.map(|_| 0.001),
            kld_p999: kld.map(|k| 10.0 * k),
            ppl_ratio: Some(1.01),
            same_top_p: Some(0.95),
            is_reference: false,
            requantized: false,
            synthetic: false,
            pareto: false,
            tg_ci: None,
            ties: Vec::new(),
            fronts: Vec::new(),
            tg_rounds: Vec::new(),
        }
    }

    #[test]
    fn variants_whose_speeds_tie_are_a_set_on_the_front_and_name_each_other() {
        // The case: 230.3 ± 5.3 against 227.9 ± 6.7 t/s is a tie; the faster one
        // is not "the" best trade-off.
        let mut q2 = r("Q2_K", Some(230.3), Some(0.05));
        q2.tg_ci = Some((225.0, 235.6));
        q2.kld_uncertainty = Some(0.02);
        let mut q3 = r("Q3_K_M", Some(227.9), Some(0.04));
        q3.tg_ci = Some((221.2, 234.6));
        q3.kld_uncertainty = Some(0.02);
        let mut rows = vec![q2, q3];
        mark_pareto(&mut rows);
        assert!(rows.iter().all(|r| r.pareto), "{rows:?}");
        assert_eq!(rows[0].ties, vec!["Q3_K_M".to_string()]);
        let md = markdown(&rows);
        assert!(md.contains("* (speed ties Q3_K_M)"), "{md}");
        assert!(md.contains("230.30 [225.00, 235.60]"), "{md}");
    }

    #[test]
    fn rows_with_interleaved_rounds_are_compared_paired_by_round() {
        // A round-level swing of 15% shared by both; Q4_0 10% faster in every round.
        let swings = [1.0, 1.15, 0.87, 1.08, 0.92];
        let mut a = r("Q8_0", Some(100.0), Some(0.01));
        a.tg_rounds = swings.iter().map(|s| 100.0 * s).collect();
        a.tg_ci = Some((88.0, 113.0));
        let mut b = r("Q4_0", Some(110.0), Some(0.03));
        b.tg_rounds = swings
            .iter()
            .zip([1.004, 0.997, 1.002, 0.998, 1.001])
            .map(|(s, j)| 110.0 * s * j)
            .collect();
        b.tg_ci = Some((97.0, 124.0));
        let mut rows = vec![a, b];
        let paired = mark_pareto_by(
            &mut rows,
            Some(Design::Fixed),
            DEFAULT_KLD_BUDGET,
            &NoiseFloor::assumed(),
        );
        assert!(
            rows.iter().all(|r| r.pareto && r.ties.is_empty()),
            "{rows:?}"
        );
        assert!(paired.best_ties.is_empty());
        assert_eq!(paired.best, Some(1), "Q4_0 is the fastest");
        assert!(
            paired.rule.describe().contains("paired by round"),
            "{}",
            paired.rule.describe()
        );
        // One launch each (no design): the intervals overlap, a tie.
        mark_pareto_by(&mut rows, None, DEFAULT_KLD_BUDGET, &NoiseFloor::assumed());
        assert_eq!(rows[1].ties, vec!["Q8_0".to_string()]);
    }

    #[test]
    fn pareto_front_keeps_variants_no_other_beats_on_both_axes() {
        let mut rows = vec![
            r("F16", Some(10.0), Some(0.0)),   // most accurate: front
            r("Q8_0", Some(20.0), Some(0.01)), // faster than F16: front
            r("Q6_K", Some(15.0), Some(0.02)), // slower and worse than Q8_0: dominated
            r("Q4_0", Some(30.0), Some(0.05)), // fastest: front
            r("Q4_1", Some(30.0), Some(0.06)), // as fast as Q4_0 but worse: dominated
            r("X", None, Some(0.0)),           // no speed: never on the front
        ];
        mark_pareto(&mut rows);
        let front: Vec<&str> = rows
            .iter()
            .filter(|r| r.pareto)
            .map(|r| r.model.as_str())
            .collect();
        assert_eq!(front, ["F16", "Q8_0", "Q4_0"]);
    }

    #[test]
    fn the_fronts_of_kld_against_prefill_and_size_are_marked_and_dominated_rows_say_so() {
        let row = |name: &str, size: f64, pp: f64, kld: f64| Row {
            size_gib: Some(size),
            pp_ts: Some(pp),
            ..r(name, None, Some(kld))
        };
        let mut rows = vec![
            row("F16", 0.3, 100.0, 0.0),
            row("Q8_0", 0.15, 200.0, 0.01),
            row("Q4_0", 0.05, 120.0, 0.05),
            row("Q4_1", 0.1, 60.0, 0.06),
        ];
        mark_fronts(&mut rows, &NoiseFloor::assumed());
        let fronts: Vec<&[&str]> = rows.iter().map(|r| r.fronts.as_slice()).collect();
        let both: &[&str] = &["prefill", "size"];
        assert_eq!(fronts, [both, both, &["size"], &[]]);
        let md = markdown(&rows);
        assert!(
            md.contains(" prefill, size |") && md.contains(" dominated |"),
            "{md}"
        );
    }

    #[test]
    fn identical_points_both_stay_on_the_front() {
        let mut rows = vec![r("a", Some(1.0), Some(0.1)), r("b", Some(1.0), Some(0.1))];
        mark_pareto(&mut rows);
        assert!(rows.iter().all(|r| r.pareto));
    }

    #[test]
    fn markdown_shows_reference_requantization_and_front() {
        let mut a = r("m-F16", Some(10.0), Some(0.0));
        a.is_reference = true;
        a.requantized = true;
        let b = r("m-Q4_0", Some(20.0), Some(0.0123));
        let mut rows = vec![a, b];
        mark_pareto(&mut rows);
        let md = markdown(&rows);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 4, "{md}");
        assert!(
            lines[0].contains("tg128 t/s") && lines[0].contains("KLD"),
            "{md}"
        );
        assert!(
            lines[2].contains("(requant)") && lines[2].contains(" ref "),
            "{md}"
        );
        assert!(
            lines[3].contains("0.01230 ± 0.00100 |") && lines[3].ends_with("* |"),
            "{md}"
        );
        assert!(
            lines[3].contains(" 0.12300 |") && lines[2].contains(" - |"),
            "{md}"
        );
        assert!(json(&rows).contains("\"type\": \"m-Q4_0\""));
    }
}
