//! A table as CSV and JSON for the page's downloads (badges in brackets, as in Markdown).

use serde_json::{Value, json};

use crate::report::export::csv::field;
use crate::report::leaderboard::charts::svg::fmt_num;
use crate::report::leaderboard::table::{Cell, Table};

pub fn csv(t: &Table) -> String {
    let line =
        |cells: Vec<String>| cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",") + "\r\n";
    let rows = t.rows.iter().map(|r| r.iter().map(Cell::shown).collect());
    std::iter::once(t.headers.clone())
        .chain(rows)
        .map(line)
        .collect()
}

/// `{"columns": [...], "rows": [{column: value}, ...]}`: numbers as numbers, with
/// `<column> (text)` where the text says more (an interval).
pub fn json(t: &Table) -> String {
    let rows: Vec<Value> = (t.rows.iter().enumerate())
        .map(|(i, r)| {
            let mut o = serde_json::Map::new();
            if let Some(m) = t.meta.get(i).filter(|m| !m.id.is_empty()) {
                o.insert("id".into(), json!(m.id));
            }
            for (h, c) in t.headers.iter().zip(r) {
                let text = c.shown();
                match c.sort.filter(|v| v.is_finite()) {
                    Some(v) => {
                        o.insert(h.clone(), json!(v));
                        if text != fmt_num(v) && text != v.to_string() {
                            o.insert(format!("{h} (text)"), json!(text));
                        }
                    }
                    None => _ = o.insert(h.clone(), json!(text)),
                }
            }
            Value::Object(o)
        })
        .collect();
    serde_json::to_string(&json!({ "columns": t.headers, "rows": rows })).expect("plain data")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::leaderboard::table::{Cell, RowMeta};

    #[test]
    fn csv_quotes_what_needs_it_and_json_keeps_numbers() {
        let t = Table {
            headers: vec!["quant".into(), "t/s".into()],
            numeric: vec![false, true],
            rows: vec![vec![
                Cell {
                    text: "Q4_K_M, \"mostly\" Q5_0".into(),
                    sort: None,
                    badges: vec!["dirty".into()],
                },
                Cell {
                    text: "230 (225–236)".into(),
                    sort: Some(230.0),
                    badges: vec![],
                },
            ]],
            meta: vec![RowMeta {
                id: "a-1".into(),
                ..RowMeta::default()
            }],
        };
        assert_eq!(
            csv(&t),
            "quant,t/s\r\n\"Q4_K_M, \"\"mostly\"\" Q5_0 [dirty]\",230 (225–236)\r\n"
        );
        let v: Value = serde_json::from_str(&json(&t)).unwrap();
        assert_eq!(v["rows"][0]["t/s"], 230.0);
        assert_eq!(v["rows"][0]["t/s (text)"], "230 (225–236)");
        assert_eq!(v["rows"][0]["id"], "a-1");
    }
}
