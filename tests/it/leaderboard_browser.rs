//! The leaderboard page in a real browser: headless Chromium lays out index.html (built from
//! the fixtures, which have data for every chart and many series, from fixtures with little,
//! and from an empty directory) at 1400 and at 390 px width. A checking script, added to a
//! copy of the page for the test only, measures the laid-out page and writes what it found
//! into the DOM, which `--dump-dom` returns (no DevTools protocol needed):
//! - no text element's box intersects another's in any chart, and none leaves its chart;
//! - nothing overflows its card, and the page does not scroll sideways;
//! - every table's last column is visible or its table scrolls; at 1400 px the t/s column
//!   is visible without scrolling;
//! - the first answer table (which quantization to pick) lies inside the first viewport,
//!   1400 × 900 and 390 × 844, with its quantization and decode columns in view.
//!
//! Chromium comes from scripts/setup-browser (Debian's `chromium`). Without it the tests
//! print "skipped: no Chromium" and pass, unless TPSBENCH_REQUIRE_BROWSER is set: then they
//! fail. TPSBENCH_CHROMIUM names another binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TPSBENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium, or `None` after printing why the test is skipped (panics when required).
fn browser_or_skip() -> Option<PathBuf> {
    match chromium() {
        Some(b) => Some(b),
        None if std::env::var_os("TPSBENCH_REQUIRE_BROWSER").is_some() => {
            panic!(
                "TPSBENCH_REQUIRE_BROWSER is set but no Chromium was found (run scripts/setup-browser)"
            )
        }
        None => {
            eprintln!(
                "skipped: no Chromium (no chromium, chromium-browser or google-chrome on PATH; \
                 run scripts/setup-browser, or set TPSBENCH_REQUIRE_BROWSER=1 to make this fail)"
            );
            None
        }
    }
}

/// Runs headless Chromium on `page` with the flags it needs as root in a container.
fn headless(browser: &Path, page: &Path, extra: &[String]) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Measures the laid-out page; the result goes into a JSON script element.
/// It waits (on virtual time, see `layout`) until the window has the width asked for, since
/// headless Chromium may lay a short page out before it applies --window-size.
const CHECK_JS: &str = r#"
(function(){
  var tries=0;
  function wait(){ if(innerWidth!==__WIDTH__&&tries++<100){setTimeout(wait,20);return;} check(); }
  addEventListener('load',function(){setTimeout(wait,0);});
  function check(){
  var problems=[], texts=0, charts=0, tables=0, scrolling=0, report;
  function r(e){return e.getBoundingClientRect();}
  function shown(b){return b.width>0&&b.height>0;}
  function apart(a,b){return a.right<=b.left+0.5||b.right<=a.left+0.5||a.bottom<=b.top+0.5||b.bottom<=a.top+0.5;}
  function within(a,b){return a.left>=b.left-1&&a.right<=b.right+1&&a.top>=b.top-1&&a.bottom<=b.bottom+1;}
  function say(e){var c=e.cloneNode(true);c.querySelectorAll('title').forEach(function(t){t.remove();});
    return JSON.stringify((c.textContent||'').trim().slice(0,50));}
  function scrolls(e){return /auto|scroll/.test(getComputedStyle(e).overflowX);}
  document.querySelectorAll('svg.chart').forEach(function(svg){
    var sb=r(svg); if(!shown(sb)){return;} charts++;
    var id=svg.getAttribute('data-chart');
    var ts=Array.prototype.filter.call(svg.querySelectorAll('text'),function(t){return shown(r(t));});
    var bs=ts.map(r); texts+=ts.length;
    for(var i=0;i<bs.length;i++){
      if(!within(bs[i],sb)){problems.push(id+': text '+say(ts[i])+' leaves its chart');}
      for(var j=i+1;j<bs.length;j++){
        if(!apart(bs[i],bs[j])){problems.push(id+': text '+say(ts[i])+' overlaps '+say(ts[j]));}
      }
    }
  });
  document.querySelectorAll('.card').forEach(function(card){
    var cb=r(card); if(!shown(cb)||scrolls(card)){return;}
    if(card.scrollWidth>card.clientWidth+1){problems.push('card '+say(card)+' is wider inside than out');}
    card.querySelectorAll('*').forEach(function(e){
      var b=r(e); if(shown(b)&&!within(b,cb)){problems.push('card: '+e.tagName+' '+say(e)+' overflows its card');}
    });
  });
  document.querySelectorAll('.tablewrap').forEach(function(w){
    var wb=r(w), ths=w.querySelectorAll('thead th'); if(!shown(wb)||!ths.length){return;} tables++;
    var scrolled=scrolls(w)&&w.scrollWidth>w.clientWidth+1; if(scrolled){scrolling++;}
    var last=r(ths[ths.length-1]);
    if(last.right>wb.right+1&&!scrolled){problems.push('table '+say(ths[0])+': last column cut off, no scrolling');}
    Array.prototype.forEach.call(ths,function(th){
      if(innerWidth>=1000&&th.textContent.trim()==='t/s'&&r(th).right>wb.right+1){
        problems.push('table '+say(ths[0])+': the t/s column is cut off at '+innerWidth+' px');}
    });
  });
  if(document.documentElement.scrollWidth>innerWidth+1){
    var wide=[], walk=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT), n;
    while((n=walk.nextNode())&&wide.length<3){
      var inside=false; for(var a=n.parentElement;a;a=a.parentElement){if(scrolls(a)){inside=true;}}
      var g=document.createRange(); g.selectNodeContents(n);
      if(!inside&&g.getBoundingClientRect().right>innerWidth+1){wide.push(n.parentElement.tagName+' '+JSON.stringify(n.textContent.slice(0,60)));}
    }
    problems.push('the page scrolls sideways: '+document.documentElement.scrollWidth+' px wide at '+innerWidth+': '+wide.join('; '));}
  // Charts of one model and test share their scale: SVG charts by their data-scale, the
  // grid's bars by their length per t/s (equal-width columns).
  var scales={}, scaled=0, grids=0;
  document.querySelectorAll('svg.chart[data-scale-group]').forEach(function(s){
    if(!shown(r(s))){return;} scaled++;
    var g=s.getAttribute('data-scale-group'), v=s.getAttribute('data-scale');
    if(!(g in scales)){scales[g]=v;}else if(scales[g]!==v){problems.push('charts of '+g+' on two scales: '+scales[g]+' and '+v);}
  });
  document.querySelectorAll('table.grid').forEach(function(t){
    if(!shown(r(t))){return;} grids++; var k=null;
    t.querySelectorAll('td.gcell[data-v]').forEach(function(c){
      var v=+c.getAttribute('data-v'), w=r(c.querySelector('.gbar')).width, g=r(c.querySelector('.gv')), cb=r(c);
      if(!within(g,cb)){problems.push('grid value '+say(c)+' leaves its cell');}
      if(k===null){k=w/v;}else if(Math.abs(w-k*v)>1.5){problems.push('grid '+t.getAttribute('data-scale-group')+': a bar of '+v+' is '+w.toFixed(1)+' px, not '+(k*v).toFixed(1));}
    });
  });
  var answer=null, aw=document.querySelector('.answer .tablewrap');
  if(aw){var ab=r(aw), aths=aw.querySelectorAll('thead th'), vis=[];
    Array.prototype.forEach.call(aths,function(th){var b=r(th);if(b.left>=ab.left-1&&b.right<=ab.right+1){vis.push(th.textContent.trim());}});
    answer={top:ab.top+scrollY,bottom:ab.bottom+scrollY,left:ab.left,right:ab.right,visible:vis,
      hint:(function(){var h=aw.parentElement.querySelector('.scroll-hint');return !!h&&shown(r(h));})()};}
  var nav=document.querySelector('nav');
  var s=document.createElement('script'); s.type='application/json'; s.id='layout-report';
  s.textContent=report=JSON.stringify({width:innerWidth,charts:charts,texts:texts,tables:tables,answer:answer,
    scaled:scaled,grids:grids,
    nav:nav?r(nav).height:0,
    scrolling:scrolling,expected:+document.body.getAttribute('data-charts-expected'),
    rendered:+document.body.getAttribute('data-charts-rendered'),
    errors:document.documentElement.getAttribute('data-errors'),problems:problems}).replace(/</g,'\\u003c');
  document.body.appendChild(s);
  if(parent!==window){parent.postMessage(report,'*');}
  }
})();
"#;

/// The page that holds the checked copy in an iframe `width` px wide (headless Chromium
/// will not make a window narrower than 500 px) and writes the report it posts.
const FRAME: &str = r#"<!doctype html><html><body style="margin:0"><iframe src="__SRC__" style="display:block;border:0;width:__WIDTH__px;height:2000px"></iframe>
<script>addEventListener('message',function(e){var s=document.createElement('script');s.type='application/json';s.id='layout-report';s.textContent=e.data;document.body.appendChild(s);});</script></body></html>"#;

/// A copy of the page, named `name` beside it, with `js` run at the end of its body.
fn with_script(html: &Path, name: &str, js: &str) -> PathBuf {
    let page = std::fs::read_to_string(html).unwrap();
    let copy = html.with_file_name(name);
    let body_end = page.rfind("</body>").expect("a body");
    let (head, tail) = page.split_at(body_end);
    std::fs::write(&copy, format!("{head}<script>{js}</script>{tail}")).unwrap();
    copy
}

/// The JSON report a script left in `<script type="application/json" id="ID">` of the DOM
/// headless Chromium dumped.
fn report_in(out: &std::process::Output, id: &str) -> Value {
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find(&format!(r#"<script type="application/json" id="{id}">"#))
        .unwrap_or_else(|| panic!("the checking script ran and left #{id}"));
    let json = dom[start..].split_once('>').unwrap().1;
    serde_json::from_str(json.split("</script>").next().unwrap()).unwrap()
}

/// A copy of the page with the checking script, laid out at `width` px; the report.
fn layout(browser: &Path, html: &Path, width: u32) -> Value {
    let checked = with_script(
        html,
        &format!("checked-{width}.html"),
        &CHECK_JS.replace("__WIDTH__", &width.to_string()),
    );
    let frame = html.with_file_name(format!("frame-{width}.html"));
    std::fs::write(
        &frame,
        FRAME
            .replace("__SRC__", checked.file_name().unwrap().to_str().unwrap())
            .replace("__WIDTH__", &width.to_string()),
    )
    .unwrap();
    let out = headless(
        browser,
        &frame,
        &[
            "--dump-dom".into(),
            "--virtual-time-budget=5000".into(),
            format!("--window-size={},2100", width.max(500) + 40),
        ],
    );
    let report = report_in(&out, "layout-report");
    eprintln!(
        "{} at {width} px: {} charts, {} chart texts, {} tables ({} scroll), {} problems",
        html.display(),
        report["charts"],
        report["texts"],
        report["tables"],
        report["scrolling"],
        report["problems"].as_array().map_or(0, Vec::len)
    );
    assert_eq!(report["width"], width, "the viewport is {width} px wide");
    report
}

/// Asserts a clean layout: no problem, no script error, every announced chart drawn.
fn assert_clean(report: &Value) {
    let problems: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(report["errors"], "", "JavaScript errors on the page");
    assert_eq!(
        report["charts"], report["expected"],
        "one visible chart per card"
    );
    assert_eq!(report["rendered"], report["expected"]);
}

fn build_page(inputs: &[PathBuf], out: &Path) -> PathBuf {
    let st = Command::new(env!("CARGO_BIN_EXE_tpsbench"))
        .arg("leaderboard")
        .args(inputs)
        .arg("--out-dir")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    out.join("index.html")
}

fn fixtures(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
}

/// The page of every leaderboard and machines fixture: many models, three machines.
fn full_page(dir: &Path) -> PathBuf {
    build_page(
        &[fixtures("leaderboard"), fixtures("machines")],
        &dir.join("full"),
    )
}

#[test]
fn at_1400_and_390_px_no_chart_text_overlaps_nothing_overflows_and_tables_show_or_scroll() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let full = full_page(dir.path());
    let sparse = build_page(
        &[fixtures("leaderboard").join("gpu.json")],
        &dir.path().join("sparse"),
    );
    let published = build_page(
        &[PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("results/published")],
        &dir.path().join("published"),
    );
    let empty_dir = dir.path().join("no-results");
    std::fs::create_dir_all(&empty_dir).unwrap();
    let empty = build_page(std::slice::from_ref(&empty_dir), &empty_dir);
    for width in [1400, 390] {
        let r = layout(&browser, &full, width);
        assert_clean(&r);
        assert!(r["charts"].as_u64().unwrap() >= 20, "{r}");
        assert!(r["texts"].as_u64().unwrap() > 400, "{r}");
        assert_answer_in_first_view(&r, width);
        let r = layout(&browser, &published, width);
        assert_clean(&r);
        assert_answer_in_first_view(&r, width);
        let r = layout(&browser, &sparse, width);
        assert_clean(&r);
        assert_eq!(r["charts"], 6, "four placeholders, prefill and decode");
        let r = layout(&browser, &empty, width);
        assert_clean(&r);
        assert_eq!(r["charts"], 0);
    }
    assert!(
        std::fs::read_to_string(&empty)
            .unwrap()
            .contains("No results yet")
    );
}

/// The first viewport of a phone (390 × 844) and of a desktop (1400 × 900).
fn viewport_height(width: u32) -> f64 {
    if width < 500 { 844.0 } else { 900.0 }
}

/// The first answer table lies inside the first viewport; its quantization and decode
/// columns are visible without scrolling, and on a phone a hint says the table scrolls.
fn assert_answer_in_first_view(r: &Value, width: u32) {
    let a = &r["answer"];
    assert!(a.is_object(), "no answer table: {r}");
    let (top, bottom) = (a["top"].as_f64().unwrap(), a["bottom"].as_f64().unwrap());
    let h = viewport_height(width);
    eprintln!("answer table at {width} px: {top:.0}–{bottom:.0} px (viewport {h} px)");
    assert!(
        top >= 0.0 && bottom <= h,
        "the answer table ({top:.0}–{bottom:.0} px) leaves the first viewport of {h} px at {width} px"
    );
    assert!(
        a["left"].as_f64().unwrap() >= 0.0
            && a["right"].as_f64().unwrap() <= f64::from(width) + 1.0,
        "{a}"
    );
    let visible: Vec<&str> = a["visible"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        visible.len() >= 2 && visible[0] == "quant" && visible[1].starts_with("decode"),
        "quant and decode must show without scrolling at {width} px: {visible:?}"
    );
    if width < 640 {
        assert_eq!(a["hint"], true, "a visible scroll hint on a phone");
    }
    assert!(
        r["nav"].as_f64().unwrap() <= 0.15 * h,
        "the navigation is {} px tall",
        r["nav"]
    );
}

#[test]
fn the_layout_check_finds_overlapping_labels_an_overflowing_card_and_a_cut_off_table() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    let cells: String = (0..30).map(|i| format!("<th>column {i}</th>")).collect();
    std::fs::write(
        &page,
        format!(
            r#"<!doctype html><html data-errors=""><body data-charts-expected="1" data-charts-rendered="1">
<div class="card" style="width:300px"><svg class="chart" data-chart="bad" viewBox="0 0 300 100" width="300" height="100">
<text x="10" y="50">Q4_K_M</text><text x="20" y="52">Q4_0</text></svg></div>
<div class="card" style="width:200px"><div style="width:400px">too wide</div></div>
<div class="tablewrap" style="overflow:hidden;width:300px"><table><thead><tr>{cells}</tr></thead></table></div>
</body></html>"#
        ),
    )
    .unwrap();
    let r = layout(&browser, &page, 1400);
    let problems = r["problems"].to_string();
    assert!(
        problems.contains(r#"bad: text \"Q4_K_M\" overlaps \"Q4_0\""#),
        "{problems}"
    );
    assert!(problems.contains("overflows its card"), "{problems}");
    assert!(
        problems.contains("last column cut off, no scrolling"),
        "{problems}"
    );
}

#[test]
fn screenshots_are_taken_at_both_widths() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = full_page(dir.path());
    for (width, min) in [(1400, 60_000), (390, 30_000)] {
        let png = dir.path().join(format!("leaderboard-{width}.png"));
        headless(
            &browser,
            &html,
            &[
                format!("--screenshot={}", png.display()),
                format!("--window-size={width},2400"),
            ],
        );
        let bytes = std::fs::read(&png).expect("a screenshot");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        assert_eq!(w, width, "the screenshot is as wide as asked");
        assert!(
            bytes.len() > min,
            "a page, not a blank: {} bytes",
            bytes.len()
        );
    }
}

/// Picks option `index` of the `key` filter, then reports what it showed and dimmed: chart
/// cards shown and hidden against their `data-KEY` values, and marks (bars, points) dimmed
/// against theirs. `wrong` lists the cards and marks the filter treated against their tags.
const FILTER_JS: &str = r#"
(function(){
  addEventListener('load',function(){setTimeout(function(){
    var k='__KEY__', out={cards:0,shown:0,untagged:0,marks:0,dimmed:0,rows:0,rows_shown:0,wrong:[]}, s=null;
    document.querySelectorAll('#filters select').forEach(function(x){if(x.getAttribute('data-k')===k){s=x;}});
    if(!s){out.wrong.push('no '+k+' filter');}else{
      var v=s.options[__INDEX__].value; out.value=v; s.value=v; s.dispatchEvent(new Event('change'));
      function has(e){var a=e.getAttribute('data-'+k);return a===null?null:a.split('\n').indexOf(v)>=0;}
      function say(e){var c=e.querySelector('[data-chart]');return c?c.getAttribute('data-chart'):e.tagName;}
      document.querySelectorAll('.chart-card').forEach(function(c){
        var vis=c.getBoundingClientRect().height>0, h=has(c); out.cards++; if(vis){out.shown++;}
        if(h===null){out.untagged++;}
        if(vis!==(h!==false)){out.wrong.push('card '+say(c)+(vis?' shown':' hidden'));}});
      document.querySelectorAll('.wide svg.chart [data-m]').forEach(function(m){
        if(m.closest('.chart-card').getBoundingClientRect().height===0){return;}
        var dim=+getComputedStyle(m).opacity<1; out.marks++; if(dim){out.dimmed++;}
        if(dim!==(has(m)===false)){out.wrong.push('mark '+m.querySelector('title').textContent+(dim?' dimmed':' not dimmed'));}});
      document.querySelectorAll('tr[data-f]').forEach(function(r){
        out.rows++;
        if(r.style.display!=='none'){out.rows_shown++;}
        if((r.style.display!=='none')!==(has(r)!==false)){out.wrong.push('row '+r.id);}});
    }
    var e=document.createElement('script');e.type='application/json';e.id='filter-report';
    e.textContent=JSON.stringify(out).replace(/</g,'\\u003c');document.body.appendChild(e);
  },0);});
})();
"#;

/// The page with `FILTER_JS` run on the `key` filter's option `index`; its report.
fn filtered(browser: &Path, html: &Path, key: &str, index: usize) -> Value {
    let js = FILTER_JS
        .replace("__KEY__", key)
        .replace("__INDEX__", &index.to_string());
    let checked = with_script(html, &format!("filtered-{key}.html"), &js);
    let out = headless(
        browser,
        &checked,
        &[
            "--dump-dom".into(),
            "--virtual-time-budget=5000".into(),
            "--window-size=1400,2100".into(),
        ],
    );
    let report = report_in(&out, "filter-report");
    eprintln!("filter {key} = {}: {report}", report["value"]);
    report
}

#[test]
fn a_filter_hides_the_chart_cards_and_rows_that_draw_none_of_it_and_dims_the_other_marks() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = full_page(dir.path());
    for (key, index) in [("model", 1), ("machine", 1), ("quant", 1), ("backend", 1)] {
        let r = filtered(&browser, &html, key, index);
        assert_eq!(r["wrong"], serde_json::json!([]), "{key}: {r}");
        let n = |k: &str| r[k].as_u64().unwrap();
        assert!(n("cards") > n("untagged"), "{key}: cards carry tags: {r}");
        assert!(n("marks") > 0 && n("rows") > 0, "{key}: {r}");
        assert!(
            n("rows_shown") < n("rows"),
            "{key}: the filter hides some rows: {r}"
        );
        if key != "backend" {
            assert!(
                n("shown") < n("cards") || n("dimmed") > 0,
                "{key}: the filter changes the charts: {r}"
            );
        }
    }
}

mod stress;
