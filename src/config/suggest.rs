//! The known key a mistyped one most likely meant. A leaf of its own: the tables' checks
//! (`serving/slo.rs`) and `unknown_key` both use it, and `unknown_key` imports the tables.

/// The known key closest to `unknown`, when close enough to be the one meant: at most a
/// third of its length away (at least 1; a swap of neighbours is one edit), or one contains
/// the other (`batch` → `n_batch`).
pub fn suggest<'a>(unknown: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (unknown.chars().count() / 3).max(1);
    known
        .iter()
        .map(|&k| (strsim::damerau_levenshtein(unknown, k), k))
        .filter(|&(d, k)| {
            d <= limit || (unknown.len() >= 4 && (k.contains(unknown) || unknown.contains(k)))
        })
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// serde's refusal of `unknown` with the known key meant, when one is close enough.
pub fn did_you_mean(unknown: &str, known: &[&str]) -> Option<String> {
    suggest(unknown, known).map(|s| format!("unknown field `{unknown}`, did you mean `{s}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_keys_are_suggested_and_far_ones_are_not() {
        let known = ["n_prompt", "n_gen", "n_batch", "n_ubatch", "repetitions"];
        assert_eq!(suggest("n_batches", &known), Some("n_batch"));
        assert_eq!(suggest("repetition", &known), Some("repetitions"));
        assert_eq!(suggest("n_ganerate", &known), None);
        assert_eq!(suggest("npromt", &known), Some("n_prompt"));
        assert_eq!(suggest("n_ubacth", &known), Some("n_ubatch"), "a swap");
        assert_eq!(suggest("bogus", &known), None);
        assert_eq!(suggest("x", &[]), None);
    }
}
