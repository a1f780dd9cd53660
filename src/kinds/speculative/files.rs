//! What a speculative test needs of its target's and draft's files, read before llama.cpp
//! sees them: the draft file, the target's MTP layers' bytes, and the refusals of a drafter
//! its files cannot serve (llama.cpp would assert or abort on them).

use crate::config::speculative::Drafter;
use crate::gguf::header::Header;

/// The draft model's file, and its SHA-256 when known.
pub struct DraftFile {
    pub path: std::path::PathBuf,
    pub sha256: Option<String>,
    /// The draft is random weights (a synthetic model): acceptance means nothing.
    pub synthetic: bool,
}

/// What a speculative test needs to know of its target beyond the loaded model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Target {
    /// Random weights (`tpsbench synth`), which the record says.
    pub synthetic: bool,
    /// Bytes of the target's MTP (nextn) layers in its file: draft-mtp's weights, which live
    /// inside the target and so are in no draft file ([`mtp_bytes`]).
    pub mtp_bytes: u64,
}

/// The bytes of every block of `target` that holds a nextn tensor: the MTP layers, which
/// draft-mtp drafts with and plain decoding never reads.
pub fn mtp_bytes(target: &Header) -> u64 {
    let block =
        |name: &str| -> Option<u64> { name.strip_prefix("blk.")?.split('.').next()?.parse().ok() };
    let mtp: Vec<u64> = target
        .tensors
        .iter()
        .filter(|t| t.name.contains(".nextn."))
        .filter_map(|t| block(&t.name))
        .collect();
    target
        .tensors
        .iter()
        .filter(|t| block(&t.name).is_some_and(|b| mtp.contains(&b)))
        .map(|t| t.n_bytes)
        .sum()
}

/// Why `drafter` cannot run on this target and draft (from their GGUF headers): llama.cpp's
/// own detection asserts on files it does not expect, or fails deep inside the drafter.
pub fn refusal(drafter: Drafter, target: &Header, draft: Option<&Header>) -> Option<String> {
    let has = |h: &Header, part: &str| h.tensors.iter().any(|t| t.name.contains(part));
    let arch = |h: &Header| h.architecture().unwrap_or("unknown").to_string();
    match (drafter, draft) {
        (Drafter::DraftMtp, _) if !has(target, ".nextn.") => Some(format!(
            "draft-mtp drafts with the model's own multi-token-prediction (nextn) layers, and \
             this {} model has none",
            arch(target)
        )),
        (Drafter::DraftEagle3, Some(d)) if arch(d) != "eagle3" => Some(format!(
            "draft-eagle3 needs an Eagle3 draft GGUF (architecture eagle3); the draft is {}",
            arch(d)
        )),
        (Drafter::DraftEagle3, Some(d)) => eagle3_misfit(target, d),
        (Drafter::DraftDflash | Drafter::DraftDspark, Some(d)) if arch(d) != "dflash" => {
            Some(format!(
                "{drafter} needs a DFlash draft GGUF (architecture dflash); the draft is {}",
                arch(d)
            ))
        }
        (Drafter::DraftDspark, Some(d)) if !has(d, "markov_w1") => Some(
            "draft-dspark needs a DFlash draft with a Markov head (markov_w1); this one has \
             none: use draft-dflash"
                .to_string(),
        ),
        _ => None,
    }
}

/// The target architectures whose llama.cpp graph hands out its layers' inputs
/// (`t_layer_inp` in the pinned sources' src/models): the hidden states an Eagle3 draft
/// reads. On any other, llama.cpp asserts ("layer input tensor is null") in the first decode.
const LAYER_INPUTS: &[&str] = &[
    "llama",
    "qwen3",
    "qwen3moe",
    "qwen35",
    "qwen35moe",
    "qwen3next",
    "qwen4exp",
    "gpt-oss",
    "gemma4",
    "lfm2",
    "hunyuan_vl",
    "minimax-01",
    "minimax-m2",
    "mimo2",
    "muse-glimmer",
    "nanbeige",
    "nemotron_h",
    "bailingmoe3",
    "deepseek4",
];

/// Why Eagle3 draft `d` does not fit `target`, from their headers: llama.cpp checks none of
/// this before it aborts (a target layer it cannot extract, an encoder fed rows of the wrong
/// width, a borrowed embedding of another width).
fn eagle3_misfit(target: &Header, d: &Header) -> Option<String> {
    let ta = target.architecture().unwrap_or("unknown");
    let key = Header::arch_u64;
    if !LAYER_INPUTS.contains(&ta) {
        return Some(format!(
            "draft-eagle3 reads the target's hidden states, and llama.cpp's {ta} graph does not \
             hand them out"
        ));
    }
    let n_layer = key(target, "block_count")?
        .saturating_sub(key(target, "nextn_predict_layers").unwrap_or(0));
    let layers: Vec<u64> = match d.get("eagle3.target_layers") {
        Some(crate::gguf::Value::Array(a)) => a.iter().filter_map(|v| v.as_u64()).collect(),
        _ => Vec::new(),
    };
    if layers.len() != 3 {
        return Some(
            "the Eagle3 draft names no 3 target layers (eagle3.target_layers), which llama.cpp \
             requires"
                .into(),
        );
    }
    // Layer n_layer would be the target's final hidden state, which llama.cpp takes from an
    // MTP output that these graphs do not make: only layer inputs are read here.
    if let Some(l) = layers.iter().find(|&&l| l >= n_layer) {
        return Some(format!(
            "the Eagle3 draft reads the target's layer {l}, and the target has {n_layer} layers \
             (0 to {})",
            n_layer.saturating_sub(1)
        ));
    }
    let n_embd = key(target, "embedding_length")?;
    match key(d, "target_hidden_size") {
        Some(w) if w == n_embd => {}
        w => {
            return Some(format!(
                "the Eagle3 draft was made for a target of width {}, and this one's is {n_embd}",
                w.map_or("(none)".to_string(), |w| w.to_string())
            ));
        }
    }
    // Without its own embedding or head the draft borrows the target's, which must then be
    // as wide as the draft's layer.
    let own = |name: &str| d.tensors.iter().any(|t| t.name == name);
    let width = key(d, "embedding_length")?;
    if width != n_embd && !(own("token_embd.weight") && own("output.weight")) {
        return Some(format!(
            "the Eagle3 draft (width {width}) borrows the target's token embedding or head, \
             of width {n_embd}"
        ));
    }
    None
}
