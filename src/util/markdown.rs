//! Escaping for Markdown of every string from a result file or a server: HTML-significant
//! characters become entities (not every renderer sanitises HTML), `|` in a cell is escaped,
//! control characters become spaces. Brackets and stars stay: `[1.2, 1.4]` reads as written.

/// `s` safe as inline Markdown text (a heading, a list item, a sentence).
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` safe as the content of a Markdown table cell: `text`, and `|` escaped.
pub fn cell(s: &str) -> String {
    text(s).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_pipes_and_line_breaks_cannot_escape_a_cell() {
        let hostile = "<img src=x onerror=alert(1)>|a & b\n## heading\r\u{7}";
        let c = cell(hostile);
        assert_eq!(
            c,
            "&lt;img src=x onerror=alert(1)&gt;\\|a &amp; b ## heading  "
        );
        assert!(!c.contains(['<', '>', '\n', '\r']));
        assert_eq!(text("a|b"), "a|b");
        assert_eq!(cell("Q4_K_M [1.2, 1.4] ±"), "Q4_K_M [1.2, 1.4] ±");
    }
}
