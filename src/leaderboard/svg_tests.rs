use super::*;

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
}

#[test]
fn numbers_and_text_are_formatted_for_labels() {
    assert_eq!(fmt_num(248.81), "249");
    assert_eq!(fmt_num(83.94), "83.9");
    assert_eq!(fmt_num(0.5), "0.50");
    assert_eq!(fmt_num(0.0123), "0.012");
    assert_eq!(escape(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
    assert_eq!(truncate("abcdef", 4), "abc…");
    assert_eq!(fmt_tick(50.0, 50.0), "50");
    assert_eq!(fmt_tick(0.6000000000000001, 0.2), "0.6");
    assert_eq!(fmt_tick(7.5, 2.5), "7.5");
    assert_eq!(fmt_tick(0.015, 0.005), "0.015");
}

fn bars(values: Vec<Option<f64>>) -> BarChart {
    BarChart {
        id: "t".into(),
        title: "T <1>".into(),
        subtitle: String::new(),
        y_label: "t/s".into(),
        categories: (0..values.len()).map(|i| format!("Q{i}")).collect(),
        series: vec![BarSeries {
            name: "pp".into(),
            values: values
                .into_iter()
                .map(|v| {
                    v.map(|value| Bar {
                        value,
                        err: Some(1.0),
                        tooltip: format!("{value} t/s"),
                    })
                })
                .collect(),
        }],
        empty: "no data here".into(),
    }
}

#[test]
fn bar_chart_draws_one_bar_per_value_with_a_tooltip() {
    let svg = bars(vec![Some(10.0), None, Some(30.0)]).render();
    assert!(
        svg.starts_with(r#"<svg class="chart" data-chart="t""#),
        "{svg}"
    );
    assert_eq!(svg.matches(r#"<g class="bar">"#).count(), 2);
    assert!(svg.contains("<title>30 t/s</title>"));
    assert!(svg.contains("T &lt;1&gt;"), "titles are escaped");
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

#[test]
fn scatter_draws_points_lines_and_labels_inside_the_frame() {
    let pts = |v: &[(f64, f64)]| {
        v.iter()
            .map(|&(x, y)| Point {
                x,
                y,
                label: Some(format!("n={x}")),
                tooltip: format!("{x},{y}"),
            })
            .collect::<Vec<_>>()
    };
    let c = ScatterChart {
        id: "s".into(),
        title: "S".into(),
        subtitle: "sub".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        series: vec![
            ScatterSeries {
                name: "a".into(),
                points: pts(&[(1.0, 10.0), (2.0, 20.0), (4.0, 30.0)]),
                line: true,
                color: None,
                emphasis: false,
            },
            ScatterSeries {
                name: "front".into(),
                points: pts(&[(3.0, 5.0)]),
                line: false,
                color: Some(ACCENT.into()),
                emphasis: true,
            },
        ],
        x_zero: false,
        y_zero: true,
        empty: String::new(),
    };
    let svg = c.render();
    assert_eq!(svg.matches("<circle").count(), 4);
    assert_eq!(svg.matches("<polyline").count(), 1);
    assert!(svg.contains("n=4"));
    assert!(
        svg.rfind(ACCENT).unwrap() > svg.find("<polyline").unwrap(),
        "emphasis on top"
    );
    for cap in svg.split("cx=\"").skip(1) {
        let v: f64 = cap.split('"').next().unwrap().parse().unwrap();
        assert!((LEFT..=W - RIGHT).contains(&v), "{v}");
    }
}
