//! Small helpers every layer may use.

pub(crate) mod hash;
pub(crate) mod markdown;
pub mod rng;
pub mod system;
pub(crate) mod table;
pub(crate) mod units;

/// `s` with every character but ASCII letters, digits, '-' and '_' replaced by '_': a piece
/// of a file name.
pub(crate) fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `a` as one shell word: unchanged when it holds only characters no shell treats
/// specially, else single-quoted (an empty word too).
pub fn shell_quote(a: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !a.is_empty() && a.chars().all(safe) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}
