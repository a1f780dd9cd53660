//! The one Markdown table writer: the run table, the depth and serving tables, the ladder
//! table and `compare` all print through it. Cells are padded to a column's width, text
//! columns left-aligned and numbers right-aligned (as llama-bench prints), and every cell is
//! escaped (`util::markdown::cell`): its text comes from result files and servers.

/// Aligned Markdown; `left(column)` says which columns are text (left-aligned).
pub fn aligned(rows: &[Vec<String>], left: &dyn Fn(usize) -> bool) -> String {
    let n = rows[0].len();
    let len = |r: &Vec<String>, c: usize| super::markdown::cell(&r[c]).chars().count();
    let width: Vec<usize> = (0..n)
        .map(|c| rows.iter().map(|r| len(r, c)).fold(3, usize::max))
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        out.push('|');
        for (c, &w) in width.iter().enumerate() {
            let cell = super::markdown::cell(&r[c]);
            match left(c) {
                true => out += &format!(" {cell:<w$} |"),
                false => out += &format!(" {cell:>w$} |"),
            }
        }
        out.push('\n');
        if i == 0 {
            out.push('|');
            for (c, &w) in width.iter().enumerate() {
                let dashes = "-".repeat(w);
                match left(c) {
                    true => out += &format!(" {dashes} |"),
                    false => out += &format!(" {}: |", &dashes[1..]),
                }
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_pipes_in_cells_are_escaped() {
        let rows = vec![
            vec!["name".to_string(), "t/s".to_string()],
            vec!["a|b".to_string(), "1.5".to_string()],
        ];
        let t = aligned(&rows, &|c| c == 0);
        assert_eq!(t, "| name | t/s |\n| ---- | --: |\n| a\\|b | 1.5 |\n");
        let wide = vec![vec!["x".to_string()], vec!["a|b|c".to_string()]];
        assert_eq!(
            aligned(&wide, &|_| true),
            "| x       |\n| ------- |\n| a\\|b\\|c |\n"
        );
    }
}
