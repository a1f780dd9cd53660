//! llama-server's flags for a test's settings: the one mapping, read by the launcher, by
//! `tune` (which refuses a served candidate whose settings cannot be told here) and by
//! `tune`'s printed command. The seven original axes are always passed (llama-server's
//! defaults are not llama-bench's); the newer ones only where they differ from the default.

use crate::config::knobs::{Knob, KnobValue, Level, PARAMS};
use crate::plan::TestParams;

/// The flags of `p`'s model- and context-level settings, in the table's order.
pub fn flags(p: &TestParams) -> Vec<String> {
    written(p)
        .flat_map(|(k, v)| flag(k.name, &v).unwrap_or_default())
        .collect()
}

/// The model- and context-level settings of `p` a command states, in the table's order:
/// the original axes always, the others where they differ from llama-bench's default.
pub fn written(p: &TestParams) -> impl Iterator<Item = (&'static Knob, KnobValue)> + '_ {
    PARAMS
        .iter()
        .filter(|k| k.level != Level::Test)
        .map(|k| (k, k.get(p)))
        .filter(|(k, v)| ALWAYS.contains(&k.name) || *v != k.default_value())
}

/// The settings of `p` that llama-server cannot be told (set, and not llama-bench's
/// default), with their values; empty when the launcher passes every one.
pub fn unpassed(p: &TestParams) -> Vec<(&'static Knob, KnobValue)> {
    written(p)
        .filter(|(k, v)| *v != k.default_value() && flag(k.name, v).is_none())
        .collect()
}

/// Passed whatever their value.
const ALWAYS: [&str; 7] = [
    "n_gpu_layers",
    "n_batch",
    "n_ubatch",
    "type_k",
    "type_v",
    "flash_attn",
    "n_threads",
];

/// llama-server's flag (with its value) for setting `name` at `v`; None where it has none
/// (or, for `devices`, `tensor_split` and `-ot`, separates items with commas, not `/`, `;`).
fn flag(name: &str, v: &KnobValue) -> Option<Vec<String>> {
    let pair = |f: &str, x: String| Some(vec![f.to_string(), x]);
    let word = |f: &str| Some(vec![f.to_string()]);
    match (name, v) {
        ("n_gpu_layers", v) => pair("--n-gpu-layers", v.show()),
        ("n_batch", v) => pair("--batch-size", v.show()),
        ("n_ubatch", v) => pair("--ubatch-size", v.show()),
        ("type_k", v) => pair("--cache-type-k", v.show()),
        ("type_v", v) => pair("--cache-type-v", v.show()),
        ("flash_attn", v) => pair(
            "--flash-attn",
            match v.as_i64() {
                0 => "off",
                1 => "on",
                _ => "auto",
            }
            .into(),
        ),
        // The batch's threads as the generation's, as llama-bench runs both with -t.
        ("n_threads", v) => Some(vec![
            "--threads".into(),
            v.show(),
            "--threads-batch".into(),
            v.show(),
        ]),
        ("split_mode", v) => pair("--split-mode", v.show()),
        ("main_gpu", v) => pair("--main-gpu", v.show()),
        ("no_kv_offload", KnobValue::Bool(true)) => word("--no-kv-offload"),
        ("cpu_mask", v) => pair("--cpu-mask", v.show()),
        ("cpu_strict", KnobValue::Bool(b)) => pair("--cpu-strict", u8::from(*b).to_string()),
        ("poll", v) => pair("--poll", v.show()),
        ("n_cpu_moe", v) => pair("--n-cpu-moe", v.show()),
        ("load_mode", v) => pair("--load-mode", v.show()),
        ("no_host", KnobValue::Bool(true)) => word("--no-host"),
        ("repack", KnobValue::Bool(false)) => word("--no-repack"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::knobs::knob;

    fn params() -> TestParams {
        let c = crate::config::parse(
            std::path::Path::new("m.toml"),
            "[sweep]\nn_threads = 2\nn_ubatch = 64\nflash_attn = \"on\"\n[[model]]\nname = \"m\"\npath = \"m.gguf\"\n",
            2,
        )
        .unwrap();
        crate::plan::expand(&c, &[])[0].params.clone()
    }

    #[test]
    fn the_original_axes_are_always_passed_in_llama_servers_spelling() {
        let f = flags(&params()).join(" ");
        assert_eq!(
            f,
            "--n-gpu-layers 99 --batch-size 2048 --ubatch-size 64 --cache-type-k f16 \
             --cache-type-v f16 --flash-attn on --threads 2 --threads-batch 2"
        );
    }

    #[test]
    fn newer_settings_are_passed_only_when_set_and_the_rest_are_named() {
        let mut p = params();
        let names =
            |p: &TestParams| -> Vec<&str> { unpassed(p).iter().map(|(k, _)| k.name).collect() };
        assert!(names(&p).is_empty());
        knob("n_cpu_moe").unwrap().set(&mut p, &KnobValue::Int(4));
        knob("repack").unwrap().set(&mut p, &KnobValue::Bool(false));
        let f = flags(&p).join(" ");
        assert!(f.ends_with("--n-cpu-moe 4 --no-repack"), "{f}");
        assert!(names(&p).is_empty());
        knob("embeddings")
            .unwrap()
            .set(&mut p, &KnobValue::Bool(true));
        assert_eq!(names(&p), ["embeddings"]);
        assert!(!flags(&p).join(" ").contains("embd"));
    }
}
