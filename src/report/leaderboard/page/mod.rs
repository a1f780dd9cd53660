//! index.html: one self-contained page (a Content Security Policy forbids any fetch). Its
//! script reports JavaScript errors (`<html data-errors>`) and the charts rendered
//! (`data-charts-rendered` against `data-charts-expected`) for the browser test.

mod download;
pub(super) mod tables;

use std::fmt::Write;

use super::charts::svg::{Tags, cards, escape};
use super::charts::{self, lines as charts_lines, quant as charts_quant};
use super::load::{Board, entry::tags_of, machine_names};
use super::sections::{self, Doc, NO_RESULTS, summary_line};

/// Inlined: the Content Security Policy allows nothing fetched. The script sorts tables,
/// filters, and shows a mark's details on tap.
const CSS: &str = include_str!("style.css");
const ERRORS_JS: &str = "window.onerror=function(m,s,l){var d=document.documentElement;\
d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+m+' (line '+l+'); ');};";
const SORT_AND_CHECK_JS: &str = include_str!("script.js");

fn chart_sections(b: &Board) -> [(&'static str, &'static str, String); 4] {
    [
        (
            "Tokens per second per quantization",
            "Prefill (pp) and decode (tg) rates of each quantization at depth 0, one chart per \
             machine, model and settings (named under the title), so that bars side by side \
             were measured alike. Hover a bar for the test and settings.",
            cards(&charts_quant::per_quant(b)),
        ),
        (
            "Quality against speed",
            "Decode rate against the mean KL divergence from the reference model's token \
             distribution. The Pareto front joins the variants that no other variant beats on \
             both speed and quality.",
            cards(&charts::quality_vs_speed(b)),
        ),
        (
            "Per-request against aggregate throughput",
            "Serving tests: what each request sees against what the machine delivers in total, \
             as parallel sequences (B) or the arrival rate grow; separate and shared prompts \
             are separate lines.",
            cards(&charts_lines::serving(b)),
        ),
        (
            "Tokens per second against context depth",
            "How rates fall as the context fills: one line per model, quantization, test and \
             settings measured at a depth above 0, at most eight lines a chart.",
            cards(&charts_lines::depth(b)),
        ),
    ]
}

/// The navigation: one line however many machines (they open from a menu).
fn nav(o: &mut String, b: &Board) {
    o.push_str(
        r##"<nav><div class="wrap"><a href="#answer">Answer</a><a href="#grid">Grid</a><a href="#charts">Charts</a><a href="#machines">Machines</a><a href="#ranking">Ranking</a>"##,
    );
    let n = sections::count(b.machines.len(), "machine");
    let _ = write!(
        o,
        r#"<details class="menu"><summary>{n}</summary><div class="drop">"#
    );
    for (i, m) in b.machines.iter().enumerate() {
        let _ = write!(o, r##"<a href="#machine-{i}">{}</a>"##, escape(&m.label()));
    }
    o.push_str("</div></details>");
    // The filters need the script: without it they stay hidden and the page reads whole.
    o.push_str(
        r#"<details class="menu" id="filters" hidden><summary>Filter</summary><div class="drop">"#,
    );
    let tags = Tags::union(&b.entries.iter().map(tags_of).collect::<Vec<_>>());
    let machines = machine_names(b).into_iter().enumerate();
    let machines: Vec<(String, String)> = machines.map(|(i, m)| (i.to_string(), m)).collect();
    for (key, word) in [
        ("model", "model"),
        ("machine", "machine"),
        ("backend", "backend"),
        ("quant", "quantization"),
    ] {
        let mut vs: Vec<(String, String)> = (tags.0.iter())
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| (v.clone(), v.clone()))
            .collect();
        vs.sort();
        if key == "machine" {
            vs = machines.clone();
        }
        let _ = write!(
            o,
            r#"<label>{word} <select data-k="{key}"><option value="">all</option>"#
        );
        for (v, label) in vs {
            let (v, label) = (escape(&v), escape(&label));
            let _ = write!(o, r#"<option value="{v}">{label}</option>"#);
        }
        o.push_str("</select></label>");
    }
    o.push_str("</div></details></div></nav>\n");
}

pub fn render(b: &Board) -> String {
    let mut d = Doc {
        html: true,
        o: String::new(),
    };
    if b.entries.is_empty() && b.failures.is_empty() {
        let _ = write!(
            d.o,
            "<main class=\"wrap\">\n<section id=\"no-results\" class=\"card empty-page\"><p>{}</p></section>\n",
            escape(NO_RESULTS)
        );
    } else {
        sections_html(&mut d, b);
    }
    sections::left_out(&mut d, b);
    let n_charts = d.o.matches(r#"<div class="card chart-card""#).count();
    format!(
        r##"<!doctype html>
<html lang="en" data-errors="">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="tpsbench {v}">
<title>tpsbench leaderboard</title>
<script>{ERRORS_JS}</script>
<style>
{CSS}</style>
</head>
<body data-charts-expected="{n_charts}">
<header><div class="wrap"><h1>tpsbench leaderboard</h1><p>{}</p></div></header>
{}</main>
<footer><div class="wrap">Made by tpsbench {v} (<code>tpsbench leaderboard</code>). Hover a bar or point for its figures.</div></footer>
<script>
{SORT_AND_CHECK_JS}</script>
</body>
</html>
"##,
        escape(&summary_line(b)),
        d.o,
        v = env!("CARGO_PKG_VERSION"),
    )
}

fn sections_html(d: &mut Doc, b: &Board) {
    nav(&mut d.o, b);
    d.o.push_str("<main class=\"wrap\">\n");
    sections::answers(d, b);
    sections::speculative(d, b);
    sections::tune(d, b);
    sections::grids(d, b);
    d.o.push_str("<section id=\"charts\"><h2>Charts</h2><div class=\"chart-sections\">");
    for (title, note, svgs) in chart_sections(b) {
        let _ = writeln!(
            d.o,
            r#"<div><h3>{}</h3><p class="note">{}</p><div class="charts">{svgs}</div></div>"#,
            escape(title),
            escape(note),
        );
    }
    d.o.push_str("</div></section>\n");
    sections::across_machines(d, b);
    sections::ranking(d, b);
    sections::machine_sections(d, b);
}
