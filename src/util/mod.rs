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
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    s.chars().map(|c| if keep(c) { c } else { '_' }).collect()
}

pub(crate) fn sorted_unique<T: Ord>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = items.into_iter().collect();
    v.sort();
    v.dedup();
    v
}

/// The element of `v` that `is` picks, pushed from `new` when there is none.
pub(crate) fn entry<T>(v: &mut Vec<T>, is: impl Fn(&T) -> bool, new: impl FnOnce() -> T) -> &mut T {
    let i = v.iter().position(is).unwrap_or_else(|| {
        v.push(new());
        v.len() - 1
    });
    &mut v[i]
}

/// For serde's `skip_serializing_if`: a field absent when it is its type's default.
pub(crate) fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

/// `a` as one shell word: unchanged when it holds only characters no shell treats
/// specially, else single-quoted (an empty word too).
pub fn shell_quote(a: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    match !a.is_empty() && a.chars().all(safe) {
        true => a.to_string(),
        false => format!("'{}'", a.replace('\'', "'\\''")),
    }
}
