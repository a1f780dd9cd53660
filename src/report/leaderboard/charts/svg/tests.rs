use super::*;
use crate::report::leaderboard::charts::svg::bars::{Bar, BarChart, BarSeries, Category};
use crate::report::leaderboard::charts::svg::scatter::{
    Point, ScatterChart, ScatterSeries, place_label,
};

#[test]
fn ticks_are_round_and_cover_the_range() {
    assert_eq!(
        nice_ticks(0.0, 93.0, 5),
        vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    );
    let t = nice_ticks(0.012, 0.047, 5);
    assert!(t[0] <= 0.012 && *t.last().unwrap() >= 0.047, "{t:?}");
    let unit: Vec<String> = nice_ticks(0.0, 0.0, 5)
        .into_iter()
        .map(|t| fmt_tick(t, 0.2))
        .collect();
    assert_eq!(unit, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
    assert!(nice_ticks(5.0, 5.0, 5).len() >= 2);
    assert_eq!(tick_labels(&[0.0, 0.25, 0.5]), ["0.00", "0.25", "0.50"]);
}

#[test]
fn numbers_and_text_are_formatted_for_labels() {
    assert_eq!(fmt_num(248.81), "249");
    assert_eq!(fmt_num(83.94), "83.9");
    assert_eq!(fmt_num(0.5), "0.50");
    assert_eq!(fmt_num(0.0123), "0.012");
    assert_eq!(escape(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
    assert_eq!(fmt_tick(50.0, 50.0), "50");
    assert_eq!(fmt_tick(0.6000000000000001, 0.2), "0.6");
    assert_eq!(fmt_tick(7.5, 2.5), "7.5");
    assert_eq!(fmt_tick(0.015, 0.005), "0.015");
}

#[test]
fn text_widths_are_estimated_generously_and_long_text_is_fitted_or_wrapped() {
    // DejaVu Sans at 12 px draws "Q4_K_M" about 52 px wide and "ill" about 10 px.
    assert!(text_width("Q4_K_M", 12.0) >= 52.0);
    assert!(text_width("ill", 12.0) < text_width("MWM", 12.0));
    let f = fit("SmolLM2-135M-Instruct-Q4_K_M", 12.0, 80.0);
    assert!(f.ends_with('…') && text_width(&f, 12.0) <= 80.0, "{f}");
    assert_eq!(fit("Q8_0", 12.0, 80.0), "Q8_0");
    let lines = wrap("one two three four five six seven", 12.0, 90.0);
    assert!(lines.len() > 1 && lines.iter().all(|l| text_width(l, 12.0) <= 90.0));
    assert_eq!(lines.join(" "), "one two three four five six seven");
}

#[test]
fn boxes_intersect_only_when_they_overlap() {
    let a = Rect::text("abc", 10.0, 20.0, 12.0, "start");
    let b = Rect::text("abc", 10.0, 40.0, 12.0, "start");
    let c = Rect::text("abc", 12.0, 22.0, 12.0, "start");
    assert!(!a.intersects(&b) && a.intersects(&c));
    let end = Rect::text("abc", 100.0, 20.0, 12.0, "end");
    assert!((end.x1 - 100.0).abs() < 1e-9 && end.x0 < 100.0);
    assert!(a.inside(&Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 200.0,
        y1: 200.0
    }));
}

fn bars(values: Vec<Option<f64>>) -> BarChart {
    BarChart {
        id: "t".into(),
        title: "T <1>".into(),
        subtitle: String::new(),
        x_label: "t/s".into(),
        categories: (0..values.len())
            .map(|i| Category {
                label: format!("Q{i}"),
                badges: if i == 0 {
                    vec!["requantized".into()]
                } else {
                    vec![]
                },
            })
            .collect(),
        series: vec![BarSeries {
            name: "pp".into(),
            values: values
                .into_iter()
                .map(|v| {
                    v.map(|value| Bar {
                        value,
                        err: Some(1.0),
                        label: fmt_num(value),
                        tooltip: format!("{value} t/s"),
                        tags: Tags::default(),
                    })
                })
                .collect(),
        }],
        empty: "no data here".into(),
        scale: None,
    }
}

#[test]
fn bar_chart_draws_one_bar_per_value_with_a_tooltip_and_badges() {
    let svg = bars(vec![Some(10.0), None, Some(30.0)]).render();
    assert!(
        svg.starts_with(r#"<svg class="chart" data-chart="t""#),
        "{svg}"
    );
    assert_eq!(svg.matches(r#"<g class="bar""#).count(), 2);
    assert!(svg.contains("<title>30 t/s</title>"));
    assert!(svg.contains("T &lt;1&gt;"), "titles are escaped");
    assert_eq!(svg.matches("badge-requantized").count(), 1);
    assert!(svg.ends_with("</svg>"));
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
}

#[test]
fn no_data_renders_the_placeholder_message() {
    let svg = bars(vec![None, None]).render();
    assert!(svg.contains(r#"<g class="empty">"#) && svg.contains("no data here"));
    assert!(!svg.contains(r#"class="bar""#));
    let s = ScatterChart {
        id: "s".into(),
        title: "S".into(),
        subtitle: String::new(),
        x_label: "x".into(),
        y_label: "y".into(),
        series: vec![],
        x_zero: true,
        y_zero: true,
        empty: "run something".into(),
    };
    assert!(s.render().contains("run something"));
}

/// The boxes of the point labels in a rendered chart, from their x, y and anchor.
fn label_boxes(svg: &str) -> Vec<Rect> {
    svg.split(r#"<text class="plabel" "#)
        .skip(1)
        .map(|t| {
            let attr = |n: &str| {
                t.split(&format!("{n}=\""))
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_string()
            };
            let text = t.split('>').nth(1).unwrap().split('<').next().unwrap();
            Rect::text(
                text,
                attr("x").parse().unwrap(),
                attr("y").parse().unwrap(),
                11.0,
                &attr("text-anchor"),
            )
        })
        .collect()
}

fn scatter(series: Vec<Vec<(f64, f64)>>) -> ScatterChart {
    ScatterChart {
        id: "s".into(),
        title: "S".into(),
        subtitle: "sub".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        series: series
            .into_iter()
            .enumerate()
            .map(|(i, pts)| ScatterSeries {
                name: format!("series {i}"),
                points: pts
                    .into_iter()
                    .map(|(x, y)| Point {
                        x,
                        y,
                        label: Some(format!("B={x}")),
                        tooltip: format!("{x},{y}"),
                        tags: Tags::default(),
                    })
                    .collect(),
                line: true,
                color: None,
                emphasis: i == 0,
            })
            .collect(),
        x_zero: true,
        y_zero: true,
        empty: String::new(),
    }
}

#[test]
fn scatter_draws_one_line_per_series_and_points_inside_the_frame() {
    let svg = scatter(vec![
        vec![(1.0, 10.0), (2.0, 20.0), (4.0, 30.0)],
        vec![(3.0, 5.0)],
    ])
    .render();
    assert_eq!(svg.matches("<circle").count(), 4);
    assert_eq!(
        svg.matches("<polyline").count(),
        1,
        "a one-point series has no line"
    );
    assert!(svg.contains("B=4"));
    for cap in svg.split("cx=\"").skip(1) {
        let v: f64 = cap.split('"').next().unwrap().parse().unwrap();
        assert!((PAD..=W - PAD).contains(&v), "{v}");
    }
}

#[test]
fn crowded_point_labels_never_overlap_and_some_are_left_out() {
    // Eight series with nearly equal points: their labels compete for the same room.
    let series: Vec<Vec<(f64, f64)>> = (0..8)
        .map(|s| {
            (1..=4)
                .map(|b| (b as f64, 10.0 * b as f64 + s as f64 * 0.1))
                .collect()
        })
        .collect();
    let svg = scatter(series).render();
    let boxes = label_boxes(&svg);
    assert!(
        !boxes.is_empty() && boxes.len() < 32,
        "{} labels",
        boxes.len()
    );
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            assert!(!a.intersects(b), "{a:?} {b:?}");
        }
    }
    assert_eq!(svg.matches("<circle").count(), 32, "every point is drawn");
}

#[test]
fn a_label_goes_to_the_first_free_spot_or_nowhere() {
    let area = Rect {
        x0: 0.0,
        y0: 0.0,
        x1: 400.0,
        y1: 300.0,
    };
    let (_, _, anchor, first) = place_label("B=1", 100.0, 100.0, &area, &[]).unwrap();
    assert_eq!(anchor, "start", "right of the point first");
    let (_, _, anchor, _) = place_label("B=1", 100.0, 100.0, &area, &[first]).unwrap();
    assert_eq!(anchor, "end", "then left");
    let (_, _, anchor, _) = place_label("B=1", 398.0, 100.0, &area, &[]).unwrap();
    assert_eq!(anchor, "end", "never outside the plot");
    assert!(place_label("B=1", 100.0, 100.0, &area, &[area]).is_none());
}

#[test]
fn tags_join_the_values_of_one_key_and_marks_carry_them_for_the_filters() {
    let mut a = Tags::default();
    a.add("model", "tiny (llama)");
    a.add("quant", "Q4_0");
    a.add("quant", "");
    let mut b = Tags::default();
    b.add("model", "tiny (llama)");
    b.add("quant", "Q8_0 \"x\"");
    let u = Tags::union([&a, &b]);
    assert_eq!(
        u.attrs(),
        r#" data-model="tiny (llama)" data-quant="Q4_0&#10;Q8_0 &quot;x&quot;""#
    );
    assert_eq!(u.varying(), ["quant"]);
    assert_eq!(mark_attrs(&Tags::default(), &["quant"]), "");
    assert_eq!(
        mark_attrs(&a, &["model"]),
        r#" data-m data-model="tiny (llama)""#
    );
    let mut chart = bars(vec![Some(10.0), Some(20.0)]);
    for (v, t) in chart.series[0].values.iter_mut().zip([&a, &b]) {
        v.as_mut().unwrap().tags = t.clone();
    }
    assert_eq!(chart.tags(), u);
    let svg = chart.render();
    // Within the chart only the quantization varies: the card's tags settle the model.
    assert!(
        svg.contains(r#"<g class="bar" data-m data-quant="Q4_0">"#),
        "{svg}"
    );
}
