//! What is made from result files: the exporters (`export`), the leaderboard page, two result
//! sets compared test by test (`compare`, `tpsbench noise`), shards merged (`merge`), builds
//! against each other (`library_ab`, `run --library`), and a published set (`publish`).

pub mod compare;
pub mod export;
pub(crate) mod fastest;
pub mod leaderboard;
pub mod library_ab;
pub(crate) mod merge;
pub(crate) mod publish;
pub mod speculative;
pub mod tune;

use std::io::Write;
use std::path::Path;

/// "1 file", "2 files".
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Items grouped by key, in first-seen order.
pub(crate) fn group_by<T, K: PartialEq>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> Vec<(K, Vec<T>)> {
    let mut groups: Vec<(K, Vec<T>)> = Vec::new();
    for item in items {
        let k = key(&item);
        match groups.iter_mut().find(|(x, _)| *x == k) {
            Some((_, v)) => v.push(item),
            None => groups.push((k, vec![item])),
        }
    }
    groups
}

/// `s` between `before` and `after`, or nothing when `s` is empty.
pub(crate) fn wrapped(before: &str, s: &str, after: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("{before}{s}{after}")
    }
}

/// What an interval covers: "1 launch" or "3 rounds".
pub(crate) fn covers_text(i: &crate::stats::analysis::LevelInterval) -> String {
    use crate::stats::analysis::Covers;
    match i.covers {
        Covers::WithinLaunch => "1 launch".into(),
        Covers::BetweenRounds => format!("{} rounds", i.n),
    }
}

/// Writes `bytes` to `PATH.tmp`, flushed, then renames it over `path`: never half a file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let write = || {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
