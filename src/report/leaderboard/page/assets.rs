//! index.html's stylesheet and scripts, inlined by `html::render` (the page's Content
//! Security Policy allows nothing fetched): the layout at desktop and phone widths, the
//! error report for the browser test, and table sorting, filters and tap-to-show details.

pub(super) const CSS: &str = r#"
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

pub(super) const ERRORS_JS: &str = "window.onerror=function(m,s,l){var d=document.documentElement;\
d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+m+' (line '+l+'); ');};";

pub(super) const SORT_AND_CHECK_JS: &str = r#"
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
  // Filters: hide what does not match (rows, answer and grid blocks, machine sections,
  // chart cards; a grid's quantization columns) and dim the marks of a chart that do not.
  // An element may hold several values of a key, one per line (a chart of two machines).
  var f=document.getElementById('filters');
  if(f){f.hidden=false;var sels=f.querySelectorAll('select');
    function matches(e,want){
      for(var k in want){var v=e.getAttribute('data-'+k);
        if(v!==null&&v.split('\n').indexOf(want[k])<0){return false;}}
      return true;}
    function apply(){var want={};
      sels.forEach(function(s){if(s.value){want[s.getAttribute('data-k')]=s.value;}});
      document.querySelectorAll('[data-f]').forEach(function(e){
        e.style.display=matches(e,want)?'':'none';});
      document.querySelectorAll('svg.chart [data-m]').forEach(function(e){
        e.style.opacity=matches(e,want)?'':'0.15';});
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
