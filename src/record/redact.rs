//! What a published file must not show: the machine's directory layout and host name.
//! [`redact`] cuts every absolute path in any string to its file name and replaces the host
//! name by a label wherever it appears as a word; `leaderboard --check` refuses a file in
//! which [`exposed`] finds anything.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RecordError;

/// `run.published`: the file went through `tpsbench publish`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Published {
    /// `--as`, in place of the host name.
    pub label: String,
    /// `--keep-host`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_kept: bool,
}

/// Characters after which a `/` starts a path: the start of a word or of a value.
fn opens_path(prev: Option<char>) -> bool {
    prev.is_none_or(|c| c.is_whitespace() || "=\"'([{,;:<".contains(c))
}

fn closes_path(c: char) -> bool {
    c.is_whitespace() || "\"'()[]{},;<>".contains(c)
}

/// Where each absolute path in `s` starts and ends (byte offsets): a `/` (or `~/`, or a
/// drive letter and `:\` or `:/`) at the start of a word, followed by a name character. A URL's
/// `//` is not a path, nor is `t/s` or a lone `/`.
fn paths_in(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let prev = i.checked_sub(1).map(|j| chars[j].1);
        let at = |k: usize| chars.get(k).map(|x| x.1);
        let name = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "._-~".contains(c));
        let unix = at(i) == Some('/') && name(at(i + 1));
        let home = at(i) == Some('~') && at(i + 1) == Some('/') && name(at(i + 2));
        let drive = at(i).is_some_and(|c| c.is_ascii_alphabetic())
            && at(i + 1) == Some(':')
            && matches!(at(i + 2), Some('\\') | Some('/'))
            && name(at(i + 3));
        if opens_path(prev) && (unix || home || drive) {
            let e = (i..chars.len()).find(|&e| closes_path(chars[e].1));
            out.push((chars[i].0, e.map_or(s.len(), |e| chars[e].0)));
            i = e.unwrap_or(chars.len());
        } else {
            i += 1;
        }
    }
    out
}

/// The last component of a path (what stays of it): `/a/b/model.gguf` → `model.gguf`.
fn file_name(p: &str) -> &str {
    let p = p.trim_end_matches(['/', '\\']);
    p.rsplit(['/', '\\']).next().unwrap_or(p)
}

pub(crate) fn strip_paths(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (a, b) in paths_in(s) {
        out.push_str(&s[last..a]);
        out.push_str(file_name(&s[a..b]));
        last = b;
    }
    out.push_str(&s[last..]);
    out
}

/// `s` with `host` replaced by `label` wherever it stands as a word (not inside a longer
/// name: host "vm" leaves "llvm" alone).
fn replace_word(s: &str, host: &str, label: &str) -> String {
    if host.is_empty() {
        return s.to_string();
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(host) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + host.len()..].chars().next();
        out.push_str(&rest[..i]);
        out.push_str(if word(before) || word(after) {
            host
        } else {
            label
        });
        rest = &rest[i + host.len()..];
    }
    out.push_str(rest);
    out
}

/// Calls `f` on every scalar under `v` with the key it stands under ("" in an array).
fn each_scalar(v: &mut Value, key: &str, f: &mut dyn FnMut(&str, &mut Value)) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(|x| each_scalar(x, "", f)),
        Value::Object(m) => m.iter_mut().for_each(|(k, x)| each_scalar(x, k, f)),
        _ => f(key, v),
    }
}

/// Calls `f` on the value of every non-empty `host` or `hostname` field.
fn each_host_field(v: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    each_scalar(v, "", &mut |k, x| {
        if (k == "host" || k == "hostname") && x.as_str().is_some_and(|s| !s.is_empty()) {
            f(x);
        }
    });
}

fn hostname(file: &Value) -> &str {
    file.pointer("/run/system/hostname")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Redacts a result file's JSON in place: absolute paths become file names and, unless
/// `keep_host`, the host name becomes `label`; `run.published` says so.
pub fn redact(file: &mut Value, label: &str, keep_host: bool) {
    let host = hostname(file).to_string();
    each_scalar(file, "", &mut |_, v| {
        if let Value::String(s) = v {
            let mut t = strip_paths(s);
            if !keep_host {
                t = replace_word(&t, &host, label);
            }
            *s = t;
        }
    });
    if !keep_host {
        // Other host fields (a shared library's build `stamp.host`) name a machine too.
        each_host_field(file, &mut |h| *h = Value::String(label.to_string()));
    }
    if let Some(run) = file.get_mut("run").and_then(Value::as_object_mut) {
        let (label, host_kept) = (label.to_string(), keep_host);
        run.insert(
            "published".into(),
            serde_json::json!(Published { label, host_kept }),
        );
    }
}

/// [`redact`] of a typed record: the record as the redacted JSON reads back.
pub(crate) fn redact_record(
    record: &super::RunRecord,
    label: &str,
    keep_host: bool,
) -> Result<super::RunRecord, RecordError> {
    let mut value = serde_json::to_value(record).map_err(RecordError::Json)?;
    redact(&mut value, label, keep_host);
    serde_json::from_value(value).map_err(RecordError::Redacted)
}

/// [`exposed`] of a result file's bytes as they are on disk: every field, those the schema
/// does not know too (a merged file's `merged_from`). An error when they are not JSON.
pub(crate) fn exposed_in_json(bytes: &[u8]) -> Result<Vec<String>, RecordError> {
    let v: Value = serde_json::from_slice(bytes).map_err(RecordError::Json)?;
    Ok(exposed(&v))
}

/// What a file about to be published still exposes, one line each: an absolute path (with
/// where it is), a host name that did not go through `publish`. Empty when nothing.
pub fn exposed(file: &Value) -> Vec<String> {
    let mut out = Vec::new();
    // Read-only, with the path of each string: `each_scalar` would need a mutable copy.
    fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::String(s) => {
                if let Some((a, b)) = paths_in(s).first() {
                    out.push(format!("an absolute path at {at}: {}", &s[*a..*b]));
                }
            }
            Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    walk(x, &format!("{at}/{i}"), out);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    walk(x, &format!("{at}/{k}"), out);
                }
            }
            _ => {}
        }
    }
    walk(file, "", &mut out);
    let host = hostname(file);
    match file
        .pointer("/run/published")
        .and_then(|p| serde_json::from_value::<Published>(p.clone()).ok())
    {
        None => out.push(format!(
            "the host name {host:?} (the file did not go through tpsbench publish)"
        )),
        Some(p) if !p.host_kept => {
            let mut others = Vec::new();
            each_host_field(&mut file.clone(), &mut |h| {
                if h.as_str() != Some(p.label.as_str()) {
                    others.push(h.as_str().unwrap_or("").to_string());
                }
            });
            if let Some(h) = others.first() {
                out.push(format!(
                    "the host name {h:?} where publish put the label {:?}",
                    p.label
                ));
            }
        }
        Some(_) => {}
    }
    out
}

#[cfg(test)]
mod tests;
