//! The page's parts of a speculative answer: its table and a chart of acceptance by draft
//! position.

use std::fmt::Write as _;

use crate::report::leaderboard::charts::svg::escape;

pub(crate) fn position_chart(md: &str, positions: &[(String, Vec<f64>)]) -> String {
    md_table_html(md) + &chart(positions)
}

fn md_table_html(md: &str) -> String {
    let mut o = String::from(r#"<div class="table-wrap"><table class="answer-table">"#);
    for (i, line) in md.lines().filter(|l| l.starts_with('|')).enumerate() {
        if i == 1 {
            continue; // the alignment row
        }
        let tag = if i == 0 { "th" } else { "td" };
        o.push_str("<tr>");
        for cell in line.trim_matches('|').split('|') {
            let _ = write!(o, "<{tag}>{}</{tag}>", escape(cell.trim()));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table></div>");
    o
}

/// Acceptance by draft position: an inline SVG, one row of bars per setting (0–100%).
fn chart(rows: &[(String, Vec<f64>)]) -> String {
    let rows: Vec<&(String, Vec<f64>)> = rows.iter().filter(|(_, r)| !r.is_empty()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let (label_w, bar_w, row_h) = (260.0, 28.0, 34.0);
    let n_pos = rows.iter().map(|(_, r)| r.len()).max().unwrap_or(1);
    let w = label_w + n_pos as f64 * (bar_w + 6.0) + 10.0;
    let h = rows.len() as f64 * row_h + 24.0;
    let mut o = format!(
        r#"<figure class="chart"><svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="Share of drafted tokens accepted at each draft position"><text x="{label_w}" y="12" font-size="11">accepted at draft position 1, 2, … (bar height: 0–100%)</text>"#
    );
    for (i, (name, rates)) in rows.iter().enumerate() {
        let y0 = 20.0 + i as f64 * row_h;
        let _ = write!(
            o,
            r#"<text x="0" y="{}" font-size="11">{}</text>"#,
            y0 + row_h / 2.0,
            escape(name)
        );
        for (j, r) in rates.iter().enumerate() {
            let bh = (row_h - 8.0) * r.clamp(0.0, 1.0);
            let x = label_w + j as f64 * (bar_w + 6.0);
            let _ = write!(
                o,
                r##"<rect x="{x}" y="{:.1}" width="{bar_w}" height="{bh:.1}" fill="#4c78a8"><title>position {}: {:.0}%</title></rect>"##,
                y0 + (row_h - 8.0) - bh,
                j + 1,
                r * 100.0
            );
        }
    }
    o.push_str("</svg><figcaption>Share of drafted tokens accepted at each draft position.</figcaption></figure>");
    o
}
