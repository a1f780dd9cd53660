//! index.html: one self-contained page (inline CSS, inline JS, inline SVG; a Content Security
//! Policy forbids any fetch) with the charts, the ranking and sortable tables per machine and
//! model. Each chart is drawn twice, wide and narrow, and CSS shows the one that fits. The
//! inline script also reports, for the browser test, JavaScript errors (on
//! `<html data-errors>`) and how many charts have a non-empty rendered box
//! (`<body data-charts-rendered>`, to compare with `data-charts-expected`, one per card).

use std::fmt::Write;

use super::answer;
use super::charts::{self, identity, machine_names};
use super::download;
use super::grid::{Grid, grids};
use super::load::Board;
use super::machines::machines;
use super::markdown::{NO_RESULTS, heading, summary_line};
use super::svg::{W, W_NARROW, escape, fmt_num};
use super::svg_bars::BarChart;
use super::svg_scatter::ScatterChart;
use super::table::{Cell, RowMeta, Table, by_machine_and_model, detail, rankings, runs};

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
nav{background:#fff;border-bottom:1px solid var(--line);position:sticky;top:0;z-index:3}
nav .wrap{display:flex;flex-wrap:wrap;gap:2px 18px;padding-top:6px;padding-bottom:6px;font-size:14px}
nav a{color:var(--accent);text-decoration:none;font-weight:500}
nav a:hover{text-decoration:underline}
details.menu{position:relative}
details.menu summary{cursor:pointer;color:var(--accent);font-weight:500}
details.menu .drop{position:absolute;left:0;top:1.7em;z-index:5;background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 12px;max-height:60vh;max-width:min(90vw,420px);overflow:auto;display:flex;flex-direction:column;gap:4px;box-shadow:0 6px 18px rgba(0,0,0,.12);white-space:nowrap}
details.menu .drop label{display:flex;justify-content:space-between;gap:8px;color:var(--fg)}
details.menu .drop select{max-width:250px}
a.pl{margin-left:6px;color:#afb8c1;text-decoration:none;font-size:12px;font-weight:400}
a.pl:hover,a.pl:focus{color:var(--accent)}
tr:target,tr:target td{background:#fff8c5 !important}
p.dl{font-size:12px;color:var(--muted);margin:2px 0 12px}
p.swipe{margin:0 0 4px;color:var(--muted);font-size:12px}
table.grid{table-layout:fixed}
table.grid th{white-space:normal;vertical-align:bottom;overflow-wrap:anywhere}
table.grid td:first-child{overflow:hidden;text-overflow:ellipsis}
td.gcell{position:relative}
td.gcell .gbar{position:absolute;left:0;top:4px;bottom:4px;background:#c9d7f7;border-radius:0 3px 3px 0}
td.gcell .gv{position:relative}
#tip{position:fixed;left:8px;bottom:8px;max-width:min(600px,calc(100vw - 16px));z-index:9;background:#1f2328;color:#fff;padding:8px 12px;border-radius:8px;font-size:13px;display:none;overflow-wrap:anywhere}
#tip.on{display:block}
svg.chart .bar,svg.chart .point,td[data-tip]{cursor:pointer}
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
details.more-answers>summary{cursor:pointer;color:var(--accent);font-weight:500;margin:10px 0}
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
@media (max-width:640px){p.scroll-hint{display:block}.tablewrap td:first-child,.tablewrap th:first-child{position:sticky;left:0;background:#fff;z-index:1}.tablewrap th:first-child{background:var(--bg)}header{padding:14px 0 12px}header p{font-size:13px}}
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
  // Filters: hide what does not match (rows, answer and grid blocks, machine sections;
  // a grid's quantization columns).
  var f=document.getElementById('filters');
  if(f){f.hidden=false;var sels=f.querySelectorAll('select');
    function apply(){var want={};
      sels.forEach(function(s){if(s.value){want[s.getAttribute('data-k')]=s.value;}});
      document.querySelectorAll('[data-f]').forEach(function(e){var ok=true;
        for(var k in want){var v=e.getAttribute('data-'+k);if(v!==null&&v!==want[k]){ok=false;}}
        e.style.display=ok?'':'none';});
      document.querySelectorAll('table.grid [data-quant]').forEach(function(c){
        c.style.display=(!want.quant||c.getAttribute('data-quant')===want.quant)?'':'none';});
    }
    sels.forEach(function(s){s.addEventListener('change',apply);});}
  // Details on tap as well as on hover: a bar's, point's or grid cell's text in a box.
  var tip=document.createElement('div');tip.id='tip';tip.setAttribute('role','status');document.body.appendChild(tip);
  document.addEventListener('click',function(ev){
    var el=ev.target.closest?ev.target.closest('[data-tip],svg.chart .bar,svg.chart .point'):null;
    var text='';
    if(el){text=el.getAttribute('data-tip');if(text===null){var ti=el.querySelector('title');text=ti?ti.textContent:'';}}
    tip.textContent=text||'';tip.className=text?'on':'';});
  // A table that scrolls sideways says so.
  document.querySelectorAll('.tablewrap').forEach(function(w){
    var p=w.previousElementSibling;
    if(w.scrollWidth>w.clientWidth+1&&!(p&&/scroll-hint|swipe/.test(p.className))){
      var h=document.createElement('p');h.className='swipe';h.textContent='Scroll the table sideways for more columns →';
      w.parentNode.insertBefore(h,w);}});
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
        nav(&mut o, b);
        o.push_str("<main class=\"wrap\">\n");
        answer_section(&mut o, b);
        grid_section(&mut o, b);
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
            let _ = write!(
                o,
                "<div><h3>{}</h3>{}</div>",
                escape(&name),
                html_table(&t, &format!("ranking {name}"))
            );
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
