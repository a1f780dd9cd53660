//! Escaping for Markdown: every string that comes from a result file or a server (a model
//! name, a CPU, a host, an error a server sent) goes through here before any Markdown
//! writer prints it. Code hosts sanitise raw HTML, but other renderers do not, and
//! a `|` or a newline breaks a table; so HTML-significant characters become entities, a `|`
//! in a table cell is escaped, and line breaks and other control characters become spaces.
//! Brackets, stars and backticks are left as they are: with `<` escaped no tag can form, and
//! figures such as `[1.2, 1.4]` read as written in a terminal.

/// `s` safe as inline Markdown text (a heading, a list item, a sentence).
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' | '\n' | '\u{2028}' | '\u{2029}' => out.push(' '),
            c if c.is_control() => out.push(' '),
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
