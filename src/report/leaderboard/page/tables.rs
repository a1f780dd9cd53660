//! The page's tables: sortable, with permalinks, filter tags and downloads; the grid's
//! with a bar in each cell.

use std::fmt::Write;

use super::download;
use crate::report::leaderboard::charts::svg::{escape, fmt_num};
use crate::report::leaderboard::grid::Grid;
use crate::report::leaderboard::load::Board;
use crate::report::leaderboard::table::{Cell, RowMeta, Table};

fn cell_html(c: &Cell) -> String {
    let mut s = escape(&c.text);
    for b in &c.badges {
        let _ = write!(s, r#"<span class="badge badge-{0}">{0}</span>"#, escape(b));
    }
    s
}

fn permalink(id: &str) -> String {
    format!(
        r##"<a class="pl" href="#{}" title="link to this row" aria-label="link to this row">#</a>"##,
        escape(id)
    )
}

fn row_attrs(m: &RowMeta) -> String {
    crate::report::wrapped(r#" id=""#, &escape(&m.id), "\"") + &m.tags.filter_attrs()
}

/// A table in its card: rows with permalinks and filter tags, `file` cells linked to the
/// result file, CSV and JSON downloads under it named after `name`.
pub(crate) fn table_html(t: &Table, class: &str, name: &str) -> String {
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
                inner.push_str(&permalink(&meta.id));
            }
            let sort = c
                .sort
                .filter(|v| v.is_finite())
                .map(|v| format!(r#" data-v="{v}""#));
            let _ = write!(o, "<td{cls}{}>{inner}</td>", sort.unwrap_or_default());
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    o.push_str(&downloads(t, name));
    o
}

/// The downloads as data: URIs, so the page stays one file.
fn downloads(t: &Table, name: &str) -> String {
    let words = name.split(|c: char| !c.is_ascii_alphanumeric());
    let words: Vec<&str> = words.filter(|s| !s.is_empty()).collect();
    let slug = words.join("-");
    format!(
        r#"<p class="dl">Download: <a download="{slug}.csv" href="{}">CSV</a> · <a download="{slug}.json" href="{}">JSON</a></p>"#,
        data_uri("text/csv", &download::csv(t)),
        data_uri("application/json", &download::json(t)),
    )
}

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

pub(crate) fn grid_html(o: &mut String, b: &Board, g: &Grid) {
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
    let share = |v: f64| if g.max > 0.0 { 100.0 * v / g.max } else { 0.0 };
    for (i, (_, cells)) in g.rows.iter().enumerate() {
        let meta = &t.meta[i];
        let (attrs, name) = (row_attrs(meta), escape(&t.rows[i][0].text));
        let _ = write!(o, "<tr{attrs}><td>{name}{}</td>", permalink(&meta.id));
        for (q, c) in g.quants.iter().zip(cells) {
            match c {
                Some(c) => {
                    let pct = share(c.value);
                    let (q, v) = (escape(q), fmt_num(c.value));
                    let sd = c.sd.map(|s| format!(" ± {}", fmt_num(s)));
                    let tip = format!("{v} t/s{} · {}", sd.unwrap_or_default(), c.detail);
                    let _ = write!(
                        o,
                        r#"<td class="num gcell" data-quant="{q}" data-v="{}" data-tip="{}"><span class="gbar" style="width:{pct:.2}%"></span><span class="gv">{v}</span></td>"#,
                        c.value,
                        escape(&tip),
                    );
                }
                None => {
                    let q = escape(q);
                    let _ = write!(o, r#"<td class="num gcell" data-quant="{q}"></td>"#);
                }
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    o.push_str(&downloads(&t, &title));
    o.push_str("</div>");
}
