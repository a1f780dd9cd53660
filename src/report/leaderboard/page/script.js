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
