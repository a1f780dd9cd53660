//! index.html: one self-contained page (inline CSS, inline JS, inline SVG; a Content Security
//! Policy forbids any fetch) with the charts, the ranking and sortable tables per machine and
//! model. Each chart is drawn twice, wide and narrow, and CSS shows the one that fits. The
//! inline script also reports, for the browser test, JavaScript errors (on
//! `<html data-errors>`) and how many charts have a non-empty rendered box
//! (`<body data-charts-rendered>`, to compare with `data-charts-expected`, one per card).

mod assets;
mod download;
mod speculative;
mod tune;

use std::fmt::Write;

use super::answer;
use super::charts::machines::machines;
use super::charts::{self, lines as charts_lines, quant as charts_quant};
use super::entry::identity;
use super::grid::{Grid, grids};
use super::load::{Board, machine_names};
use super::markdown::{NO_RESULTS, heading, summary_line};
use super::svg::bars::BarChart;
use super::svg::scatter::ScatterChart;
use super::svg::{Tags, W, W_NARROW, escape, fmt_num};
use super::table::{Cell, RowMeta, Table, by_machine_and_model, detail, rankings, runs};
use assets::{CSS, ERRORS_JS, SORT_AND_CHECK_JS};

/// Something the page draws at two widths, and what the filters select it by.
trait Chart {
    fn at(&self, w: f64) -> String;
    fn tags(&self) -> Tags;
}

impl Chart for BarChart {
    fn at(&self, w: f64) -> String {
        self.render_at(w)
    }
    fn tags(&self) -> Tags {
        BarChart::tags(self)
    }
}

impl Chart for ScatterChart {
    fn at(&self, w: f64) -> String {
        self.render_at(w)
    }
    fn tags(&self) -> Tags {
        ScatterChart::tags(self)
    }
}

/// Each chart in a card, drawn wide and narrow: CSS shows the one that fits the screen, so
/// that text keeps its size on a phone instead of shrinking with the chart. The card carries
/// every model, machine, backend and quantization it draws, so that a filter hides the
/// cards that draw none of what it selects (a placeholder has none and always shows).
fn cards<C: Chart>(charts: &[C]) -> Vec<String> {
    charts
        .iter()
        .map(|c| {
            let tags = c.tags();
            format!(
                r#"<div class="card chart-card"{}><div class="wide">{}</div><div class="narrow">{}</div></div>"#,
                if tags.0.is_empty() {
                    String::new()
                } else {
                    format!(" data-f{}", tags.attrs())
                },
                c.at(W),
                c.at(W_NARROW)
            )
        })
        .collect()
}

fn cell_html(c: &Cell) -> String {
    let mut s = escape(&c.text);
    for b in &c.badges {
        let _ = write!(s, r#"<span class="badge badge-{0}">{0}</span>"#, escape(b));
    }
    s
}

fn html_table(t: &Table, name: &str) -> String {
    table_with_class(t, "sortable", name)
}

/// A row's attributes: its permalink id and what the filters select it by.
fn row_attrs(m: &RowMeta) -> String {
    let mut a = String::new();
    if !m.id.is_empty() {
        let _ = write!(a, r#" id="{}""#, escape(&m.id));
    }
    let filters = [
        ("model", &m.model),
        ("machine", &m.machine),
        ("backend", &m.backend),
        ("quant", &m.quant),
    ];
    if filters.iter().any(|f| !f.1.is_empty()) {
        a.push_str(" data-f");
    }
    for (k, v) in filters.iter().filter(|f| !f.1.is_empty()) {
        let _ = write!(a, r#" data-{k}="{}""#, escape(v));
    }
    a
}

/// A table in its card, sortable by its headers; each row with its permalink (the `#`
/// after the first cell) and filter attributes; a `file` cell links to the result file
/// (relative to the page, which sits beside the files when built into their directory);
/// CSV and JSON downloads of the whole table under it, named after `name`.
fn table_with_class(t: &Table, class: &str, name: &str) -> String {
    let mut o = format!(r#"<div class="tablewrap card"><table class="{class}"><thead><tr>"#);
    for (h, num) in t.headers.iter().zip(&t.numeric) {
        let cls = if *num { r#" class="num""# } else { "" };
        let _ = write!(o, r#"<th scope="col"{cls}>{}</th>"#, escape(h));
    }
    o.push_str("</tr></thead><tbody>");
    let no_meta = RowMeta::default();
    for (i, r) in t.rows.iter().enumerate() {
        let meta = t.meta.get(i).unwrap_or(&no_meta);
        let _ = write!(o, "<tr{}>", row_attrs(meta));
        for (j, (c, num)) in r.iter().zip(&t.numeric).enumerate() {
            let cls = if *num { r#" class="num""# } else { "" };
            let mut inner = cell_html(c);
            if t.headers[j] == "file" && !meta.file.is_empty() {
                inner = format!(r#"<a href="{}">{inner}</a>"#, escape(&meta.file));
            }
            if j == 0 && !meta.id.is_empty() {
                let _ = write!(
                    inner,
                    r##"<a class="pl" href="#{0}" title="link to this row" aria-label="link to this row">#</a>"##,
                    escape(&meta.id)
                );
            }
            match c.sort.filter(|v| v.is_finite()) {
                Some(v) => {
                    let _ = write!(o, r#"<td{cls} data-v="{v}">{inner}</td>"#);
                }
                None => {
                    let _ = write!(o, "<td{cls}>{inner}</td>");
                }
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    o.push_str(&downloads(t, name));
    o
}

/// "Download: CSV · JSON": the table as data: URIs, so the page stays one file that needs
/// no server and `--check` stays a comparison of two files.
fn downloads(t: &Table, name: &str) -> String {
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!(
        r#"<p class="dl">Download: <a download="{slug}.csv" href="{}">CSV</a> · <a download="{slug}.json" href="{}">JSON</a></p>"#,
        data_uri("text/csv", &download::csv(t)),
        data_uri("application/json", &download::json(t)),
    )
}

/// A data: URI of UTF-8 text, percent-encoding all but the characters safe in a URL and an
/// HTML attribute.
fn data_uri(mime: &str, text: &str) -> String {
    let mut o = format!("data:{mime};charset=utf-8,");
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~!*(),:;/=@+$".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// The chart sections: heading, explanation, rendered SVGs.
fn chart_sections(b: &Board) -> Vec<(&'static str, &'static str, Vec<String>)> {
    vec![
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

/// Answers shown open; more (many machines) are folded under one summary line.
const OPEN_ANSWERS: usize = 4;

/// The answer first: per model and machine, the sentence and the table of quantizations.
fn answer_section(o: &mut String, b: &Board) {
    let answers = answer::answers(b, b.kld_budget());
    if answers.is_empty() {
        return;
    }
    o.push_str(r#"<section id="answer"><h2>Which quantization?</h2>"#);
    for (i, a) in answers.iter().enumerate() {
        if i == OPEN_ANSWERS && answers.len() > OPEN_ANSWERS {
            // Many machines: the first answers open, the others one click away, so that
            // the grid that compares the machines stays near the top.
            let _ = write!(
                o,
                r#"<details class="more-answers"><summary>{} more answers, one per model and machine (the grid below compares the machines)</summary>"#,
                answers.len() - OPEN_ANSWERS
            );
        }
        let _ = write!(
            o,
            r#"<div class="answer" id="answer-{i}" data-f data-machine="{}" data-model="{}"><h3>{}</h3><p class="verdict">{}</p><p class="scroll-hint">Swipe the table sideways for more columns →</p>{}<p class="note">{}</p></div>"#,
            a.machine,
            escape(&answer::identity_label(a)),
            escape(&heading(b, a)),
            escape(&a.sentence),
            table_with_class(
                &answer::table(a, " "),
                "sortable answer-table",
                &format!("answer {}", heading(b, a))
            ),
            escape(&answer::note(a))
        );
    }
    if answers.len() > OPEN_ANSWERS {
        o.push_str("</details>");
    }
    if !b.warnings.is_empty() {
        o.push_str(
            r#"<details class="flagged"><summary>Flagged runs and rows (kept and badged; <code>tpsbench leaderboard --strict</code> leaves them out)</summary><ul class="left-out">"#,
        );
        for l in &b.warnings {
            let _ = write!(o, "<li>{}</li>", escape(l));
        }
        o.push_str("</ul></details>");
    }
    o.push_str("</section>\n");
}

/// The navigation: one line however many machines (they open from a menu, as do the
/// filters), so it stays within about 15% of the viewport at fifty machines.
fn nav(o: &mut String, b: &Board) {
    o.push_str(
        r##"<nav><div class="wrap"><a href="#answer">Answer</a><a href="#grid">Grid</a><a href="#charts">Charts</a><a href="#machines">Machines</a><a href="#ranking">Ranking</a>"##,
    );
    let n = b.machines.len();
    let _ = write!(
        o,
        r#"<details class="menu"><summary>{n} machine{}</summary><div class="drop">"#,
        if n == 1 { "" } else { "s" }
    );
    for (i, m) in b.machines.iter().enumerate() {
        let _ = write!(o, r##"<a href="#machine-{i}">{}</a>"##, escape(&m.label()));
    }
    o.push_str("</div></details>");
    // The filters need the script: without it they stay hidden and the page reads whole.
    o.push_str(
        r#"<details class="menu" id="filters" hidden><summary>Filter</summary><div class="drop">"#,
    );
    let mut values: [Vec<(String, String)>; 4] = Default::default();
    let mut add = |k: usize, v: String, label: String| {
        if !v.is_empty() && !values[k].iter().any(|x| x.0 == v) {
            values[k].push((v, label));
        }
    };
    for e in &b.entries {
        add(0, identity(e), identity(e));
        add(2, e.test.backends.clone(), e.test.backends.clone());
        add(3, e.quant.clone(), e.quant.clone());
    }
    for (i, m) in machine_names(b).into_iter().enumerate() {
        add(1, i.to_string(), m);
    }
    for (k, (key, word)) in [
        ("model", "model"),
        ("machine", "machine"),
        ("backend", "backend"),
        ("quant", "quantization"),
    ]
    .iter()
    .enumerate()
    {
        let mut vs = values[k].clone();
        if k != 1 {
            vs.sort();
        }
        let _ = write!(
            o,
            r#"<label>{word} <select data-k="{key}"><option value="">all</option>"#
        );
        for (v, label) in vs {
            let _ = write!(
                o,
                r#"<option value="{}">{}</option>"#,
                escape(&v),
                escape(&label)
            );
        }
        o.push_str("</select></label>");
    }
    o.push_str("</div></details></div></nav>\n");
}

/// The machine × quantization grids: per model and test, one table whose bars share one
/// scale (the grid's fastest cell), columns of equal width so that lengths compare.
fn grid_section(o: &mut String, b: &Board) {
    let gs = grids(b);
    if gs.is_empty() {
        return;
    }
    o.push_str(
        r#"<section id="grid"><h2>Machines × quantizations</h2><p class="note">Per model and test: a row per machine (fastest first), a column per quantization, each machine at its fastest setting. The bars of one grid share one scale: the grid's fastest cell. Tap or hover a cell for its test, settings and file; click a header to sort.</p>"#,
    );
    for g in &gs {
        grid_html(o, b, g);
    }
    o.push_str("</section>\n");
}

fn grid_html(o: &mut String, b: &Board, g: &Grid) {
    let t = g.table(b);
    let title = g.title();
    let n = g.quants.len();
    let _ = write!(
        o,
        r#"<div class="grid-block" data-f data-model="{}"><h3>{}</h3><div class="tablewrap card"><table class="sortable grid" style="width:{}em" data-scale-group="{}" data-scale="{}"><colgroup><col style="width:11em">{}</colgroup><thead><tr><th scope="col">machine</th>"#,
        escape(&g.model),
        escape(&title),
        11 + 7 * n,
        escape(&format!("{} {}", g.model, g.test)),
        g.max,
        r#"<col style="width:7em">"#.repeat(n),
    );
    for (q, label) in g.quants.iter().zip(&g.labels) {
        let _ = write!(
            o,
            r#"<th scope="col" class="num" data-quant="{}">{}</th>"#,
            escape(q),
            escape(label)
        );
    }
    o.push_str("</tr></thead><tbody>");
    for (i, (_, cells)) in g.rows.iter().enumerate() {
        let meta = &t.meta[i];
        let _ = write!(
            o,
            r##"<tr{}><td>{}<a class="pl" href="#{}" title="link to this row" aria-label="link to this row">#</a></td>"##,
            row_attrs(meta),
            escape(&t.rows[i][0].text),
            escape(&meta.id)
        );
        for (q, c) in g.quants.iter().zip(cells) {
            match c {
                Some(c) => {
                    let pct = if g.max > 0.0 {
                        100.0 * c.value / g.max
                    } else {
                        0.0
                    };
                    let _ = write!(
                        o,
                        r#"<td class="num gcell" data-quant="{}" data-v="{}" data-tip="{}"><span class="gbar" style="width:{pct:.2}%"></span><span class="gv">{}</span></td>"#,
                        escape(q),
                        c.value,
                        escape(&format!(
                            "{} t/s{} · {}",
                            fmt_num(c.value),
                            c.sd.map(|s| format!(" ± {}", fmt_num(s)))
                                .unwrap_or_default(),
                            c.detail
                        )),
                        fmt_num(c.value)
                    );
                }
                None => {
                    let _ = write!(
                        o,
                        r#"<td class="num gcell" data-quant="{}"></td>"#,
                        escape(q)
                    );
                }
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    o.push_str(&downloads(&t, &title));
    o.push_str("</div>");
}

fn section_head(o: &mut String, id: &str, title: &str, note: &str) {
    let _ = write!(
        o,
        r#"<section id="{id}"><h2>{}</h2><p class="note">{}</p>"#,
        escape(title),
        escape(note)
    );
}

fn machine_sections(o: &mut String, b: &Board) {
    let groups = by_machine_and_model(&b.entries);
    for (mi, m) in b.machines.iter().enumerate() {
        let _ = write!(
            o,
            r#"<section id="machine-{mi}" data-f data-machine="{mi}"><h2>{}</h2><dl class="facts">"#,
            escape(&m.label()),
        );
        for (k, v) in &m.facts {
            let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
        }
        let _ = write!(o, r#"</dl><p class="details">{}</p>"#, escape(&m.details));
        let mine: Vec<_> = b.runs.iter().filter(|r| r.machine == mi).collect();
        let _ = write!(
            o,
            "<h3>Runs</h3>{}",
            html_table(&runs(&mine, true), &format!("runs {}", m.hostname))
        );
        for (_, model, es) in groups.iter().filter(|g| g.0 == mi) {
            let _ = write!(
                o,
                "<h3>{}</h3>{}",
                escape(model),
                html_table(&detail(es), &format!("{} {model}", m.hostname))
            );
            // A placement sweep's answer, with ties (report::fastest).
            let tests: Vec<_> = es.iter().map(|e| &e.test).collect();
            let runs = super::answer::runs_of(es);
            for f in crate::report::fastest::fastest(&tests, &runs) {
                let _ = write!(o, r#"<p class="fastest">{}</p>"#, escape(&f.line()));
            }
        }
        let failed: Vec<_> = b.failures.iter().filter(|e| e.machine == mi).collect();
        if !failed.is_empty() {
            o.push_str(r#"<h3>Failed tests (no successful measurement)</h3><ul class="left-out">"#);
            for e in failed {
                let _ = write!(
                    o,
                    "<li>{}: {}</li>",
                    escape(&e.test.id),
                    escape(e.test.error.as_deref().unwrap_or("unknown error"))
                );
            }
            o.push_str("</ul>");
        }
        o.push_str("</section>\n");
    }
}

pub fn render(b: &Board) -> String {
    let empty = b.entries.is_empty() && b.failures.is_empty();
    let sections = if empty { vec![] } else { chart_sections(b) };
    let machine_charts = if empty { vec![] } else { cards(&machines(b)) };
    let n_charts: usize = sections.iter().map(|s| s.2.len()).sum::<usize>() + machine_charts.len();
    let mut o = String::new();
    let _ = write!(
        o,
        r##"<!doctype html>
<html lang="en" data-errors="">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="tpsbench {}">
<title>tpsbench leaderboard</title>
<script>{ERRORS_JS}</script>
<style>{CSS}</style>
</head>
<body data-charts-expected="{n_charts}">
<header><div class="wrap"><h1>tpsbench leaderboard</h1><p>{}</p></div></header>
"##,
        env!("CARGO_PKG_VERSION"),
        escape(&summary_line(b))
    );
    if empty {
        let _ = write!(
            o,
            "<main class=\"wrap\">\n<section id=\"no-results\" class=\"card empty-page\"><p>{}</p></section>\n",
            escape(NO_RESULTS)
        );
    } else {
        sections_html(&mut o, b, &sections, &machine_charts);
    }
    if !b.excluded.is_empty() || !b.invalid.is_empty() {
        o.push_str(r#"<section id="left-out"><h2>Left out</h2><ul class="left-out">"#);
        for l in b.excluded.iter().chain(&b.invalid) {
            let _ = write!(o, "<li>{}</li>", escape(l));
        }
        o.push_str("</ul></section>\n");
    }
    let _ = write!(
        o,
        "</main>\n<footer><div class=\"wrap\">Made by tpsbench {} (<code>tpsbench leaderboard</code>). \
         Hover a bar or point for its figures.</div></footer>\n<script>{SORT_AND_CHECK_JS}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    o
}

/// The page's sections when there are results: navigation, answers, grids, charts,
/// machines, rankings and the sections per machine.
fn sections_html(
    o: &mut String,
    b: &Board,
    sections: &[(&str, &str, Vec<String>)],
    machine_charts: &[String],
) {
    nav(o, b);
    o.push_str("<main class=\"wrap\">\n");
    answer_section(o, b);
    speculative::section(o, b);
    tune::section(o, b);
    grid_section(o, b);
    o.push_str("<section id=\"charts\"><h2>Charts</h2><div class=\"chart-sections\">");
    for (title, note, svgs) in sections {
        let _ = write!(
            o,
            r#"<div><h3>{}</h3><p class="note">{}</p><div class="charts">{}</div></div>"#,
            escape(title),
            escape(note),
            svgs.concat()
        );
        o.push('\n');
    }
    o.push_str("</div></section>\n");
    section_head(
        o,
        "machines",
        "Machines",
        "The same model, quantization and test on each machine that measured it, as a \
         share of the fastest machine (LocalScore-style). Each machine counts with its \
         fastest setting of the test.",
    );
    let _ = write!(
        o,
        r#"<div class="charts">{}</div></section>"#,
        machine_charts.concat()
    );
    o.push('\n');
    section_head(
        o,
        "ranking",
        "Summary ranking",
        "The ten fastest measurements of each test over all machines, models and \
         settings: mean ± standard deviation of the per-repetition rates, as llama-bench. \
         Settings that differ between the rows of a ranking get a column. Click a column \
         header to sort.",
    );
    o.push_str(r#"<div class="sections">"#);
    for (name, t) in rankings(b, 10) {
        let _ = write!(
            o,
            "<div><h3>{}</h3>{}</div>",
            escape(&name),
            html_table(&t, &format!("ranking {name}"))
        );
    }
    o.push_str("</div></section>\n");
    machine_sections(o, b);
}
