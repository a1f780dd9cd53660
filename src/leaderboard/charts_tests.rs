use super::*;
use crate::leaderboard::load::{Exclude, board};
use crate::leaderboard::testdata::{self, file, model, quality, run, test};

const T: &str = "2026-01-01T10:00:00Z";

#[test]
fn pareto_front_on_a_hand_made_set() {
    // (t/s, KLD): higher speed and lower KLD are better.
    let pts = [
        (100.0, 0.50), // fastest, worst quality: front
        (80.0, 0.10),  // front
        (70.0, 0.20),  // beaten by (80, 0.10)
        (50.0, 0.01),  // best quality: front
        (50.0, 0.02),  // beaten by (50, 0.01): equal speed, worse quality
        (40.0, 0.01),  // beaten by (50, 0.01): equal quality, slower
        (80.0, 0.10),  // a tie with a front point: neither beats the other
    ];
    assert_eq!(pareto_front(&pts), vec![0, 1, 3, 6]);
    assert!(pareto_front(&[]).is_empty());
    assert_eq!(pareto_front(&[(1.0, 1.0)]), vec![0]);
}

fn variants_board() -> crate::leaderboard::load::Board {
    let mut files = Vec::new();
    for (name, quant, tg, kld) in [
        ("m-q8", "Q8_0", 50.0, 0.001),
        ("m-q4", "Q4_0", 80.0, 0.05),
        ("m-q3", "Q3_K", 70.0, 0.20),
    ] {
        let r = run(
            "h",
            T,
            vec![model(name, quant)],
            vec![
                test(name, 64, 0, 0, 2, tg * 4.0, T),
                test(name, 0, 16, 0, 2, tg, T),
            ],
        );
        files.push(file(name, r, |v| v["models"][0]["quality"] = quality(kld)));
    }
    board(files, &Exclude::default())
}

#[test]
fn quality_chart_highlights_the_front_only() {
    let c = quality_vs_speed(&variants_board());
    assert_eq!(c.len(), 1, "one machine, one reference");
    let front = &c[0].series[1];
    assert!(front.emphasis);
    let labels: Vec<_> = front
        .points
        .iter()
        .map(|p| p.label.clone().unwrap())
        .collect();
    assert_eq!(labels, vec!["m-q8 Q8_0", "m-q4 Q4_0"], "sorted by speed");
    assert_eq!(c[0].series[0].points.len(), 1, "Q3_K is beaten by Q4_0");
    let svg = c[0].render();
    assert!(svg.contains("Q3_K") && svg.contains("(Pareto front)"));
}

#[test]
fn per_quant_chart_has_pp_and_tg_bars_per_quant() {
    let b = variants_board();
    let c = per_quant(&b);
    assert_eq!(
        c.len(),
        1,
        "variants of one model (same parameter count) share a chart"
    );
    assert_eq!(
        c[0].title, "m: t/s per quantization",
        "common prefix of m-q8, m-q4, m-q3"
    );
    assert_eq!(c[0].categories, vec!["m-q3 Q3_K", "m-q4 Q4_0", "m-q8 Q8_0"]);
    assert_eq!(c[0].series.len(), 2);
    let tg: Vec<f64> = c[0].series[1]
        .values
        .iter()
        .map(|v| v.as_ref().unwrap().value)
        .collect();
    assert_eq!(tg, vec![70.0, 80.0, 50.0]);
    assert!(c[0].series[0].values.iter().all(Option::is_some));
    assert_eq!(c[0].render().matches(r#"<g class="bar">"#).count(), 6);
}

#[test]
fn every_chart_section_renders_a_placeholder_when_there_is_no_data() {
    // Only a decode test at depth 0: no quality, no serving, no depth data.
    let r = run(
        "h",
        T,
        vec![model("m", "Q4_1")],
        vec![test("m", 0, 16, 0, 1, 9.0, T)],
    );
    let b = board(vec![file("x", r, |_| {})], &Exclude::default());
    let q = quality_vs_speed(&b);
    let s = serving(&b);
    let d = depth(&b);
    for (charts, word) in [(&q, "kld_mean,"), (&s, "tests[].serving,"), (&d, "n_depth")] {
        assert_eq!(charts.len(), 1);
        let svg = charts[0].render();
        assert!(svg.contains(r#"<g class="empty">"#), "{svg}");
        assert!(svg.contains("no data in these results"), "{svg}");
        assert!(svg.contains(word), "says what to run: {svg}");
    }
    assert!(!per_quant(&b)[0].render().contains("class=\"empty\""));
    let none = per_quant(&crate::leaderboard::load::Board::default());
    assert!(none[0].render().contains("no data in these results"));
}

#[test]
fn serving_points_are_labelled_by_parallel_requests_in_order() {
    let r = run(
        "h",
        T,
        vec![model("m", "Q4_1")],
        vec![
            test("m", 0, 16, 0, 2, 10.0, T),
            test("m", 0, 32, 0, 2, 10.0, T),
            test("m", 0, 64, 0, 2, 10.0, T),
        ],
    );
    let b = board(
        vec![file("x", r, |v| {
            v["tests"][0]["serving"] = testdata::serving(4, 6.0, 20.0);
            v["tests"][1]["serving"] = testdata::serving(1, 10.0, 10.0);
            v["tests"][2]["serving"] = testdata::serving(8, 3.0, 22.0);
        })],
        &Exclude::default(),
    );
    let c = serving(&b);
    assert_eq!(c[0].series.len(), 1);
    let labels: Vec<_> = c[0].series[0]
        .points
        .iter()
        .map(|p| p.label.clone().unwrap())
        .collect();
    assert_eq!(labels, vec!["n=1", "n=4", "n=8"]);
    assert_eq!(c[0].series[0].points[2].y, 22.0);
    assert!(
        per_quant(&b)[0].render().contains("no data"),
        "serving tests are not plain bars"
    );
}

#[test]
fn depth_lines_include_depth_zero_and_split_prefill_from_decode() {
    let r = run(
        "h",
        T,
        vec![model("m", "Q4_1")],
        vec![
            test("m", 64, 0, 0, 1, 100.0, T),
            test("m", 64, 0, 256, 1, 80.0, T),
            test("m", 0, 16, 0, 1, 20.0, T),
            test("m", 0, 16, 256, 1, 18.0, T),
            test("m", 0, 16, 0, 2, 30.0, T), // no depth > 0 for t=2: no line
        ],
    );
    let b = board(vec![file("x", r, |_| {})], &Exclude::default());
    let c = depth(&b);
    assert_eq!(c.len(), 2, "prefill and decode");
    assert_eq!(c[0].series.len(), 1);
    assert_eq!(c[1].series.len(), 1);
    let xs: Vec<f64> = c[1].series[0].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, vec![0.0, 256.0]);
    assert_eq!(c[1].series[0].name, "m Q4_1 tg16 t=1");
}

#[test]
fn common_names_and_variant_labels() {
    let n = |v: &[&str]| common_name(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(n(&["tiny-Q8_0", "tiny-Q4_K"]), "tiny");
    assert_eq!(n(&["SmolLM2-135M"]), "SmolLM2-135M");
    assert_eq!(n(&["ab", "cd"]), "ab, cd");
}
