//! index.html: one self-contained page (inline CSS, inline JS, inline SVG; a Content Security
//! Policy forbids any fetch) with the charts, the ranking and sortable tables per machine and
//! model. Each chart is drawn twice, wide and narrow, and CSS shows the one that fits. The
//! inline script also reports, for the browser test, JavaScript errors (on
//! `<html data-errors>`) and how many charts have a non-empty rendered box
//! (`<body data-charts-rendered>`, to compare with `data-charts-expected`, one per card).

use std::fmt::Write;

use super::answer;
use super::charts;
use super::load::Board;
use super::machines::machines;
use super::markdown::{NO_RESULTS, heading, summary_line};
use super::svg::{W, W_NARROW, escape};
use super::svg_bars::BarChart;
use super::svg_scatter::ScatterChart;
use super::table::{Cell, Table, by_machine_and_model, detail, rankings, runs};

/// Something the page draws at two widths.
trait Chart {
    fn at(&self, w: f64) -> String;
}

impl Chart for BarChart {
    fn at(&self, w: f64) -> String {
        self.render_at(w)
    }
}

impl Chart for ScatterChart {
    fn at(&self, w: f64) -> String {
        self.render_at(w)
    }
}

/// Each chart in a card, drawn wide and narrow: CSS shows the one that fits the screen, so
/// that text keeps its size on a phone instead of shrinking with the chart.
fn cards<C: Chart>(charts: &[C]) -> Vec<String> {
    charts
        .iter()
        .map(|c| {
            format!(
                r#"<div class="card chart-card"><div class="wide">{}</div><div class="narrow">{}</div></div>"#,
                c.at(W),
                c.at(W_NARROW)
            )
        })
        .collect()
}

const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--bg:#f6f8fa;--card:#fff;--line:#d1d9e0;--soft:#eef1f4;--accent:#4269d0}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",sans-serif;color:var(--fg);background:var(--bg)}
.wrap{max-width:1360px;margin:0 auto;padding:0 20px}
@media (max-width:600px){.wrap{padding:0 12px}header h1{font-size:23px}}
header{background:linear-gradient(135deg,#1e293b,#334155);color:#fff;padding:18px 0 14px}
header h1{margin:0 0 6px;font-size:28px;font-weight:650;letter-spacing:-.01em}
header p{margin:0;color:#cbd5e1;max-width:900px}
nav{background:#fff;border-bottom:1px solid var(--line);position:sticky;top:0;z-index:2;max-height:15vh;overflow-y:auto}
nav .wrap{display:flex;flex-wrap:wrap;gap:2px 18px;padding-top:6px;padding-bottom:6px;font-size:14px}
nav a{color:var(--accent);text-decoration:none;font-weight:500}
nav a:hover{text-decoration:underline}
h2{font-size:21px;font-weight:650;margin:38px 0 14px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:16px;font-weight:600;margin:26px 0 10px}
p.note,p.details{color:var(--muted);font-size:14px;margin:4px 0 14px;overflow-wrap:anywhere}
h2,h3{overflow-wrap:anywhere}
.sections{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,580px),1fr));gap:8px 24px;align-items:start}
.sections h3{margin-top:18px}
.sections p.note{min-height:4.7em}
.chart-sections>div{margin-bottom:8px}
.charts{display:grid;gap:16px;min-width:0;grid-template-columns:repeat(auto-fill,minmax(min(100%,560px),1fr));align-items:start}
.sections>div{min-width:0}
.card{border:1px solid var(--line);border-radius:10px;background:#fff;min-width:0;max-width:100%}
.chart-card .narrow{display:none}
@media (max-width:640px){.chart-card .wide{display:none}.chart-card .narrow{display:block}nav{position:static}}
svg.chart{display:block;width:100%;height:auto;border-radius:10px;background:#fff}
svg.chart .bg{fill:#fff}
svg.chart text{font-family:inherit;font-size:12px;fill:#3d444d}
svg.chart .title{font-size:16px;font-weight:600;fill:var(--fg)}
svg.chart .subtitle{fill:var(--muted)}
svg.chart .grid{stroke:var(--soft);stroke-width:1}
svg.chart .axis-line{stroke:#8c959f;stroke-width:1}
svg.chart .label{font-weight:600;fill:#57606a}
svg.chart .legend text{fill:#3d444d}
svg.chart .value{font-size:11px;font-weight:600;fill:#3d444d}
svg.chart .err{stroke:#24292f;stroke-width:1.2;fill:none}
svg.chart polyline{stroke-width:2;stroke-linejoin:round}
svg.chart .emphasis polyline{stroke-width:3}
svg.chart .point circle{stroke:#fff;stroke-width:1.5}
svg.chart .plabel{font-size:11px;fill:#3d444d}
svg.chart .bar:hover rect,svg.chart .point:hover circle{opacity:.75}
svg.chart .empty rect{fill:var(--bg);stroke:var(--line);stroke-dasharray:6 4}
svg.chart .empty text{font-size:14px;fill:var(--muted)}
svg.chart .badge rect{fill:#fff4e5;stroke:#d9480f;stroke-width:.8}
svg.chart .badge-synthetic rect{fill:#f3e8ff;stroke:#7c3aed}
svg.chart .badge text{font-size:10px;fill:#7a2e0b}
svg.chart .badge-synthetic text{fill:#5b21b6}
span.badge{display:inline-block;margin-left:6px;padding:0 7px;border-radius:9px;font-size:11px;line-height:17px;font-weight:600;background:#fff4e5;color:#7a2e0b;border:1px solid #f0b37e;vertical-align:1px}
span.badge-synthetic{background:#f3e8ff;color:#5b21b6;border-color:#c4b5fd}
.empty-page{padding:28px;font-size:17px;margin-top:32px}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px;font-variant-numeric:tabular-nums}
th,td{padding:7px 12px;text-align:left;white-space:nowrap;border-bottom:1px solid var(--soft)}
th{background:var(--bg);font-weight:600;cursor:pointer;user-select:none}
th:hover{background:#e9eef3}
th:focus-visible{outline:2px solid var(--accent);outline-offset:-2px}
th.num,td.num{text-align:right}
th::after{content:" \2195";color:#afb8c1;font-weight:400}
th[aria-sort=ascending]::after{content:" \25B2";color:var(--fg)}
th[aria-sort=descending]::after{content:" \25BC";color:var(--fg)}
tbody tr:nth-child(even){background:#fafbfc}
tbody tr:hover{background:#eef4ff}
tbody tr:last-child td{border-bottom:0}
ul.left-out{color:var(--muted);font-size:14px;overflow-wrap:anywhere}
#answer h2{margin-top:18px}
.answer h3{margin:14px 0 2px}
p.verdict{margin:0 0 8px;font-size:15px;font-weight:500}
p.scroll-hint{display:none;margin:0 0 4px;color:var(--muted);font-size:12px}
.answer .tablewrap{margin-bottom:4px}
.answer p.note{min-height:0;font-size:12.5px}
table.answer-table th,table.answer-table td{padding:4px 10px}
span.badge-dirty,span.badge-busy,span.badge-implausible,span.badge-fixture,span.badge-duplicate{background:#ffebe9;color:#82071e;border-color:#ff8182}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:14px;margin:4px 0 12px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
@media (max-width:640px){p.scroll-hint{display:block}table.answer-table td:first-child,table.answer-table th:first-child{position:sticky;left:0;background:#fff;z-index:1}table.answer-table th:first-child{background:var(--bg)}header{padding:14px 0 12px}header p{font-size:13px}}
footer{color:var(--muted);font-size:13px;padding:36px 0 40px;overflow-wrap:anywhere}
"#;

const ERRORS_JS: &str = "window.onerror=function(m,s,l){var d=document.documentElement;\
d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+m+' (line '+l+'); ');};";

const SORT_AND_CHECK_JS: &str = r#"
(function(){
  function key(row,i){var c=row.cells[i];if(!c){return '';}var v=c.getAttribute('data-v');
    return v===null?c.textContent.trim().toLowerCase():parseFloat(v);}
  document.querySelectorAll('table.sortable').forEach(function(t){
    var ths=t.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      th.tabIndex=0;
      function go(){
        var asc=th.getAttribute('aria-sort')!=='ascending';
        Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
        rows.sort(function(x,y){var a=key(x,i),c=key(y,i),r;
          if(typeof a==='number'&&typeof c==='number'){r=a-c;}
          else{r=String(a).localeCompare(String(c),undefined,{numeric:true});}
          return asc?r:-r;});
        rows.forEach(function(r){b.appendChild(r);});
      }
      th.addEventListener('click',go);
      th.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();go();}});
    });
  });
  var ok=0;
  document.querySelectorAll('svg.chart').forEach(function(s){
    var b=s.getBoundingClientRect();if(b.width>0&&b.height>0&&s.querySelector('text')){ok++;}
  });
  document.body.setAttribute('data-charts-rendered',String(ok));
})();
"#;

fn cell_html(c: &Cell) -> String {
    let mut s = escape(&c.text);
    for b in &c.badges {
        let _ = write!(s, r#"<span class="badge badge-{0}">{0}</span>"#, escape(b));
    }
    s
}

fn html_table(t: &Table) -> String {
    table_with_class(t, "sortable")
}

fn table_with_class(t: &Table, class: &str) -> String {
    let mut o = format!(r#"<div class="tablewrap card"><table class="{class}"><thead><tr>"#);
    for (h, num) in t.headers.iter().zip(&t.numeric) {
        let cls = if *num { r#" class="num""# } else { "" };
        let _ = write!(o, r#"<th scope="col"{cls}>{}</th>"#, escape(h));
    }
    o.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        o.push_str("<tr>");
        for (c, num) in r.iter().zip(&t.numeric) {
            let cls = if *num { r#" class="num""# } else { "" };
            match c.sort.filter(|v| v.is_finite()) {
                Some(v) => {
                    let _ = write!(o, r#"<td{cls} data-v="{v}">{}</td>"#, cell_html(c));
                }
                None => {
                    let _ = write!(o, "<td{cls}>{}</td>", cell_html(c));
                }
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
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
            cards(&charts::per_quant(b)),
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
            cards(&charts::serving(b)),
        ),
        (
            "Tokens per second against context depth",
            "How rates fall as the context fills: one line per model, quantization, test and \
             settings measured at a depth above 0, at most eight lines a chart.",
            cards(&charts::depth(b)),
        ),
    ]
}

/// The answer first: per model and machine, the sentence and the table of quantizations.
fn answer_section(o: &mut String, b: &Board) {
    let answers = answer::answers(b, b.kld_budget());
    if answers.is_empty() {
        return;
    }
    o.push_str(r#"<section id="answer"><h2>Which quantization?</h2>"#);
    for (i, a) in answers.iter().enumerate() {
        let _ = write!(
            o,
            r#"<div class="answer" id="answer-{i}"><h3>{}</h3><p class="verdict">{}</p><p class="scroll-hint">Swipe the table sideways for more columns →</p>{}<p class="note">{}</p></div>"#,
            escape(&heading(b, a)),
            escape(&a.sentence),
            table_with_class(&answer::table(a, " "), "sortable answer-table"),
            escape(&answer::note(a))
        );
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
            r#"<section id="machine-{mi}"><h2>{}</h2><dl class="facts">"#,
            escape(&m.label()),
        );
        for (k, v) in &m.facts {
            let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
        }
        let _ = write!(o, r#"</dl><p class="details">{}</p>"#, escape(&m.details));
        let mine: Vec<_> = b.runs.iter().filter(|r| r.machine == mi).collect();
        let _ = write!(o, "<h3>Runs</h3>{}", html_table(&runs(&mine, true)));
        for (_, model, es) in groups.iter().filter(|g| g.0 == mi) {
            let _ = write!(o, "<h3>{}</h3>{}", escape(model), html_table(&detail(es)));
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
        o.push_str(
            r##"<nav><div class="wrap"><a href="#answer">Answer</a><a href="#charts">Charts</a><a href="#machines">Machines</a><a href="#ranking">Ranking</a>"##,
        );
        for (i, m) in b.machines.iter().enumerate() {
            let _ = write!(o, r##"<a href="#machine-{i}">{}</a>"##, escape(&m.hostname));
        }
        o.push_str("</div></nav>\n<main class=\"wrap\">\n");
        answer_section(&mut o, b);
        o.push_str("<section id=\"charts\"><h2>Charts</h2><div class=\"chart-sections\">");
        for (title, note, svgs) in &sections {
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
            &mut o,
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
            &mut o,
            "ranking",
            "Summary ranking",
            "The ten fastest measurements of each test over all machines, models and \
             settings: mean ± standard deviation of the per-repetition rates, as llama-bench. \
             Settings that differ between the rows of a ranking get a column. Click a column \
             header to sort.",
        );
        o.push_str(r#"<div class="sections">"#);
        for (name, t) in rankings(b, 10) {
            let _ = write!(o, "<div><h3>{}</h3>{}</div>", escape(&name), html_table(&t));
        }
        o.push_str("</div></section>\n");
        machine_sections(&mut o, b);
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
