use super::*;
use crate::report::leaderboard::charts::lines::{depth, serving};
use crate::report::leaderboard::charts::parts::{common_name, variant_label};
use crate::report::leaderboard::charts::quant::per_quant;
use crate::report::leaderboard::testdata::{self, file, model, quality, run, test};
use crate::report::leaderboard::{Exclude, load::board};

const T: &str = "2026-01-01T10:00:00Z";

/// The front of exact figures (no intervals).
fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    use crate::stats::ties::Figure;
    let figures: Vec<(Figure, Figure)> = points
        .iter()
        .map(|&(x, y)| (Figure::point(x), Figure::point(y)))
        .collect();
    let on = crate::stats::ties::pareto_front(&figures);
    (0..on.len()).filter(|&i| on[i]).collect()
}

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

fn variants_board() -> crate::report::leaderboard::load::Board {
    let mut files = Vec::new();
    for (name, quant, tg, kld) in [
        ("m-Q8_0", "Q8_0", 50.0, 0.001),
        ("m-Q4_0", "Q4_0", 80.0, 0.05),
        ("m-Q3_K", "Q3_K", 70.0, 0.20),
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
        files.push(file(name, r, |v| {
            v["models"][0]["quality"] = quality(kld);
            if quant != "Q8_0" {
                v["models"][0]["provenance"] =
                    serde_json::json!({"requantized": true, "synthetic": false});
            }
        }));
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
    assert_eq!(labels, vec!["Q8_0", "Q4_0"], "sorted by speed");
    assert_eq!(c[0].series[0].points.len(), 1, "Q3_K is beaten by Q4_0");
    assert!(c[0].subtitle.contains("2 threads") && c[0].subtitle.contains("requantized"));
    let svg = c[0].render();
    assert!(svg.contains("Q3_K") && svg.contains("(Pareto front)"));
}

#[test]
fn per_quant_charts_split_prefill_from_decode_with_a_row_per_quant_and_badges() {
    let b = variants_board();
    let c = per_quant(&b);
    assert_eq!(c.len(), 2, "prefill and decode");
    assert_eq!(
        c[0].title, "m: prefill t/s per quantization",
        "common prefix of m-q8, m-q4, m-q3"
    );
    assert_eq!(c[1].title, "m: decode t/s per quantization");
    let rows: Vec<_> = c[1].categories.iter().map(|x| x.label.as_str()).collect();
    assert_eq!(rows, ["Q3_K", "Q4_0", "Q8_0"], "quantizations say enough");
    assert_eq!(c[1].categories[0].badges, ["requantized"]);
    assert!(c[1].categories[2].badges.is_empty());
    assert_eq!(c[1].series.len(), 1);
    assert_eq!(c[1].series[0].name, "", "one series: no legend");
    assert!(
        c[1].subtitle.contains("tg16 · 2 threads"),
        "{}",
        c[1].subtitle
    );
    let tg: Vec<f64> = c[1].series[0]
        .values
        .iter()
        .map(|v| v.as_ref().unwrap().value)
        .collect();
    assert_eq!(tg, vec![70.0, 80.0, 50.0]);
    assert_eq!(c[1].render().matches(r#"<g class="bar""#).count(), 3);
}

#[test]
fn per_quant_bars_of_different_thread_counts_are_different_series_that_say_so() {
    let r = run(
        "h",
        T,
        vec![model("m-Q4_1", "Q4_1"), model("m-Q8_0", "Q8_0")],
        vec![
            test("m-Q4_1", 0, 16, 0, 2, 30.0, T),
            test("m-Q8_0", 0, 16, 0, 1, 10.0, T),
        ],
    );
    let b = board(vec![file("x", r, |_| {})], &Exclude::default());
    let c = per_quant(&b);
    assert_eq!(c.len(), 1);
    let names: Vec<_> = c[0].series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["2 threads", "1 thread"]);
    assert!(c[0].subtitle.contains("tg16"), "{}", c[0].subtitle);
    // Each variant has a bar only in the series it was measured with.
    assert!(c[0].series[0].values[0].is_some() && c[0].series[0].values[1].is_none());
    assert!(c[0].series[1].values[0].is_none() && c[0].series[1].values[1].is_some());
    assert!(
        c[0].render().contains("1 thread</text>"),
        "the legend says so"
    );
}

#[test]
fn a_sweep_over_many_settings_splits_into_charts_of_at_most_eight_bars_a_row() {
    let mut tests = Vec::new();
    for threads in [1, 2, 4] {
        for ub in [128, 256, 512] {
            let mut t = test("m", 0, 16, 0, threads, 10.0 + f64::from(ub), T);
            t.params.n_ubatch = ub;
            t.identity = format!("{}|{ub}", t.identity);
            tests.push(t);
        }
    }
    let b = board(
        vec![file(
            "x",
            run("h", T, vec![model("m", "Q4_1")], tests),
            |_| {},
        )],
        &Exclude::default(),
    );
    let c = per_quant(&b);
    let sizes: Vec<usize> = c.iter().map(|x| x.series.len()).collect();
    assert_eq!(
        sizes,
        [6, 3],
        "by threads, 3 series each, packed up to 8 a chart"
    );
    assert!(c[0].subtitle.contains("next chart"));
    assert_eq!(c[0].series[0].name, "1 thread · n_ubatch 128");
    assert!(c[1].subtitle.contains("4 threads"), "{}", c[1].subtitle);
    assert_eq!(c[1].series[0].name, "n_ubatch 128");
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
    let none = per_quant(&crate::report::leaderboard::load::Board::default());
    assert!(none[0].render().contains("no data in these results"));
}

fn serving_board(shared: &[bool]) -> crate::report::leaderboard::load::Board {
    let mut tests = Vec::new();
    for sh in shared {
        for n in [4u32, 1, 8] {
            let mut t = test("m", 0, 16, 0, 2, 10.0, T);
            t.kind = crate::plan::TestKind::Parallel;
            t.test = format!("parallel pp16+tg16 B{n}{}", if *sh { " pps" } else { "" });
            t.identity = t.test.clone();
            tests.push(t);
        }
    }
    let r = run("h", T, vec![model("m", "Q4_1")], tests);
    board(
        vec![file("x", r, |v| {
            for (k, sh) in shared.iter().enumerate() {
                for (j, n) in [4u64, 1, 8].iter().enumerate() {
                    let per = 12.0 - *n as f64 + k as f64;
                    v["tests"][3 * k + j]["serving"] =
                        testdata::serving_shared(*n, per, per * *n as f64, *sh);
                }
            }
        })],
        &Exclude::default(),
    )
}

#[test]
fn serving_points_are_labelled_by_parallel_sequences_in_order() {
    let b = serving_board(&[false]);
    let c = serving(&b);
    assert_eq!(c[0].series.len(), 1);
    let labels: Vec<_> = c[0].series[0]
        .points
        .iter()
        .map(|p| p.label.clone().unwrap())
        .collect();
    assert_eq!(labels, vec!["B=1", "B=4", "B=8"]);
    assert_eq!(c[0].series[0].points[2].y, 32.0);
    assert!(
        per_quant(&b)[0].render().contains("no data"),
        "serving tests are not plain bars"
    );
}

#[test]
fn shared_and_separate_prompts_are_separate_lines_not_one_zig_zag() {
    let c = serving(&serving_board(&[false, true]));
    assert_eq!(c.len(), 1);
    let names: Vec<_> = c[0].series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().any(|n| n.contains("shared prompt")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.contains("separate prompts")),
        "{names:?}"
    );
    for s in &c[0].series {
        assert_eq!(s.points.len(), 3);
        let xs: Vec<f64> = s.points.iter().map(|p| p.x).collect();
        assert!(xs.windows(2).all(|w| w[0] >= w[1]), "B order: {xs:?}");
    }
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
    assert_eq!(c[1].title, "m Q4_1: Decode t/s against context depth");
    assert!(
        c[1].subtitle.contains("tg16 · 1 thread"),
        "{}",
        c[1].subtitle
    );
}

#[test]
fn sixteen_depth_lines_become_small_multiples_of_at_most_eight() {
    let mut tests = Vec::new();
    for threads in [1, 2] {
        for ub in [256, 512] {
            for fa in [0, 1] {
                for kv in ["f16", "q8_0"] {
                    for d in [0, 512] {
                        let mut t = test("m", 0, 16, d, threads, 10.0, T);
                        t.params.n_ubatch = ub;
                        t.params.flash_attn = fa;
                        t.params.type_k = kv.into();
                        t.identity = format!("{}|{ub}|{fa}|{kv}", t.identity);
                        tests.push(t);
                    }
                }
            }
        }
    }
    let r = run("h", T, vec![model("m", "Q4_1")], tests);
    let b = board(vec![file("x", r, |_| {})], &Exclude::default());
    let c = depth(&b);
    assert_eq!(c.len(), 2, "by thread count");
    for chart in &c {
        assert_eq!(chart.series.len(), 8);
        assert!(chart.series.iter().all(|s| s.points.len() == 2));
        assert!(
            chart.series[0].name.contains("n_ubatch 256"),
            "{}",
            chart.series[0].name
        );
        assert!(
            !chart.series[0].name.contains("thread"),
            "threads are in the subtitle"
        );
    }
    assert!(c[1].subtitle.contains("2 threads"));
}

#[test]
fn common_names_and_variant_labels() {
    let n = |v: &[&str]| common_name(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(n(&["tiny-Q8_0", "tiny-Q4_K"]), "tiny");
    assert_eq!(n(&["SmolLM2-135M"]), "SmolLM2-135M");
    assert_eq!(n(&["ab", "cd"]), "ab, cd");
    assert_eq!(n(&["ab", "cd", "ef", "gh"]), "ab, cd and 2 more");
    let r = run(
        "h",
        T,
        vec![
            model("a", "Q4_1"),
            model("b-Q4_1", "Q4_1"),
            model("c", "Q8_0"),
        ],
        vec![
            test("a", 0, 16, 0, 1, 1.0, T),
            test("b-Q4_1", 0, 16, 0, 1, 1.0, T),
            test("c", 0, 16, 0, 1, 1.0, T),
        ],
    );
    let b = board(vec![file("x", r, |_| {})], &Exclude::default());
    let all: Vec<&crate::report::leaderboard::Entry> = b.entries.iter().collect();
    let labels: Vec<String> = all.iter().map(|e| variant_label(e, &all)).collect();
    assert_eq!(
        labels,
        ["a Q4_1", "b-Q4_1", "Q8_0"],
        "names only where quants clash"
    );
}

#[test]
fn models_of_one_size_are_not_merged_and_one_model_shares_its_scale_across_machines() {
    // Two different models with the same parameter count, on two machines.
    let on = |host: &str, speed: f64| {
        let r = run(
            host,
            T,
            vec![model("alpha-Q4_0", "Q4_0"), model("beta-Q4_0", "Q4_0")],
            vec![
                test("alpha-Q4_0", 0, 16, 0, 2, 10.0 * speed, T),
                test("beta-Q4_0", 0, 16, 0, 2, 20.0 * speed, T),
            ],
        );
        file(host, r, |_| {})
    };
    let b = board(vec![on("slow", 1.0), on("fast", 8.0)], &Exclude::default());
    let c = per_quant(&b);
    let titles: Vec<&str> = c.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(c.len(), 4, "per machine and model: {titles:?}");
    assert!(
        c.iter().all(|c| c.categories.len() == 1),
        "never merged by size"
    );
    let alpha: Vec<_> = c.iter().filter(|c| c.title.starts_with("alpha")).collect();
    assert_eq!(alpha.len(), 2);
    assert_eq!(
        alpha[0].scale, alpha[1].scale,
        "one axis for alpha on both machines"
    );
    let s = alpha[0].scale.as_ref().unwrap();
    assert_eq!(s.group, "alpha (llama) decode");
    assert!(s.max >= 80.0, "{s:?}");
    let slow = alpha
        .iter()
        .find(|c| c.subtitle.starts_with("slow"))
        .unwrap();
    assert!(
        slow.render()
            .contains(r#"data-scale-group="alpha (llama) decode""#)
    );
}
