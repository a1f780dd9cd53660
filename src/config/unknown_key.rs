//! Configuration keys serde does not know: the full `table.key` path (as other configuration
//! errors name keys) and, when a known key is close, "did you mean `X`?".
//!
//! serde says `unknown field `n_batches`, expected one of `n_prompt`, `n_gen`, ...`: the
//! known keys are in the message, and the table is found from where the key sits in the file.

/// The unknown key and the keys serde expected, from its message.
pub fn parse_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    // ", expected one of `a`, `b`", ", expected `a` or `b`", ", there are no fields"
    let known = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((field.to_string(), known))
}

/// Edit distance (insertions, deletions, substitutions, and swaps of neighbours).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The known key closest to `unknown`, when close enough to be the one meant: at most a
/// third of its length away (at least 1), or one contains the other (`batch` → `n_batch`).
pub fn suggest<'a>(unknown: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = (unknown.chars().count() / 3).max(1);
    known
        .iter()
        .map(|k| (edit_distance(unknown, k), k))
        .filter(|(d, k)| {
            *d <= limit
                || (unknown.len() >= 4 && (k.contains(unknown) || unknown.contains(k.as_str())))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// The table the byte `offset` of a TOML document lies in, as configuration errors name
/// keys: `sweep`, `model[1]`, `model[1].sweep`, `ladder[0].eval`; None at the top level.
/// When `offset` is in a table header (`[serving.targetz]`), the header's key is the one at
/// `offset`, and its table is the header's parent (`serving`).
pub fn table_path(src: &str, offset: usize) -> Option<String> {
    let offset = offset.min(src.len());
    let line_start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
    // Array-of-tables headers seen so far, to number their entries.
    let mut arrays: Vec<(String, usize)> = Vec::new();
    let mut current: Option<String> = None;
    for line in src[..line_start].lines() {
        let Some((name, is_array)) = header(line) else {
            continue;
        };
        if is_array {
            match arrays.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 += 1,
                None => arrays.push((name.to_string(), 0)),
            }
        }
        current = Some(indexed(name, &arrays));
    }
    let own_line = src[line_start..].lines().next().unwrap_or("");
    match header(own_line) {
        Some((name, _)) => name
            .rsplit_once('.')
            .map(|(parent, _)| indexed(parent.trim(), &arrays)),
        None => current,
    }
}

/// `[name]` → (name, false), `[[name]]` → (name, true).
fn header(line: &str) -> Option<(&str, bool)> {
    let t = line.trim();
    let (name, is_array) = if let Some(n) = t.strip_prefix("[[") {
        (n.split("]]").next()?.trim(), true)
    } else {
        (t.strip_prefix('[')?.split(']').next()?.trim(), false)
    };
    (!name.is_empty()).then_some((name, is_array))
}

/// `model.sweep` under the latest [[model]] is `model[i].sweep`.
fn indexed(name: &str, arrays: &[(String, usize)]) -> String {
    let mut path = String::new();
    let mut prefix = String::new();
    for (i, part) in name.split('.').map(str::trim).enumerate() {
        if i > 0 {
            prefix.push('.');
            path.push('.');
        }
        prefix.push_str(part);
        path.push_str(part);
        if let Some((_, n)) = arrays.iter().find(|(a, _)| *a == prefix) {
            path.push_str(&format!("[{n}]"));
        }
    }
    path
}

/// For serde's "unknown field" message about the key at `offset` of `src`: the key's full
/// path and the message with a suggestion. None for any other message.
pub fn unknown_key(src: &str, offset: Option<usize>, message: &str) -> Option<(String, String)> {
    let (field, known) = parse_unknown_field(message)?;
    let table = offset.and_then(|o| table_path(src, o));
    let key = match table {
        Some(t) => format!("{t}.{field}"),
        None => field.clone(),
    };
    let message = match suggest(&field, &known) {
        Some(s) => format!("unknown field `{field}`, did you mean `{s}`?"),
        None => message.to_string(),
    };
    Some((key, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERDE: &str = "unknown field `n_batches`, expected one of `n_prompt`, `n_gen`, \
                         `n_batch`, `n_ubatch`, `n_threads`";

    #[test]
    fn the_field_and_the_known_keys_come_from_serdes_message() {
        let (f, known) = parse_unknown_field(SERDE).unwrap();
        assert_eq!(f, "n_batches");
        assert_eq!(
            known,
            ["n_prompt", "n_gen", "n_batch", "n_ubatch", "n_threads"]
        );
        let (_, two) = parse_unknown_field("unknown field `x`, expected `a` or `b`").unwrap();
        assert_eq!(two, ["a", "b"]);
        let (_, none) = parse_unknown_field("unknown field `x`, there are no fields").unwrap();
        assert!(none.is_empty());
        assert_eq!(parse_unknown_field("invalid type: string"), None);
    }

    #[test]
    fn close_keys_are_suggested_and_far_ones_are_not() {
        let known: Vec<String> = ["n_prompt", "n_gen", "n_batch", "n_ubatch", "repetitions"]
            .map(String::from)
            .into();
        assert_eq!(suggest("n_batches", &known), Some("n_batch"));
        assert_eq!(suggest("repetition", &known), Some("repetitions"));
        assert_eq!(suggest("n_ganerate", &known), None);
        assert_eq!(suggest("npromt", &known), Some("n_prompt"));
        assert_eq!(suggest("n_ubacth", &known), Some("n_ubatch"), "a swap");
        assert_eq!(suggest("bogus", &known), None);
        assert_eq!(suggest("x", &[]), None);
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn the_table_is_named_as_other_errors_name_it() {
        let src = "top = 1\n[sweep]\nn_gen = 4\n[[model]]\nname = \"a\"\n[[model]]\nname = \"b\"\n\
                   [model.sweep]\nbad = 1\n[serving.targets]\nttft = 1\n";
        let at = |needle: &str| src.find(needle).unwrap();
        assert_eq!(table_path(src, at("top")), None);
        assert_eq!(table_path(src, at("n_gen")).as_deref(), Some("sweep"));
        assert_eq!(
            table_path(src, at("name = \"a\"")).as_deref(),
            Some("model[0]")
        );
        assert_eq!(
            table_path(src, at("name = \"b\"")).as_deref(),
            Some("model[1]")
        );
        assert_eq!(
            table_path(src, at("bad")).as_deref(),
            Some("model[1].sweep")
        );
        assert_eq!(
            table_path(src, at("ttft")).as_deref(),
            Some("serving.targets")
        );
    }

    #[test]
    fn an_unknown_key_gets_its_path_and_a_suggestion() {
        let src = "[sweep]\nn_batches = 4\n";
        let (key, msg) = unknown_key(src, src.find("n_batches"), SERDE).unwrap();
        assert_eq!(key, "sweep.n_batches");
        assert_eq!(msg, "unknown field `n_batches`, did you mean `n_batch`?");
        // Nothing close: serde's message, with the keys it knows.
        let far = "unknown field `zzz`, expected one of `n_prompt`, `n_gen`";
        let (_, msg) = unknown_key("[sweep]\nzzz = 1\n", Some(8), far).unwrap();
        assert_eq!(msg, far);
        assert_eq!(unknown_key(src, Some(0), "expected an integer"), None);
    }
}
