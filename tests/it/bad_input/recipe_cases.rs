//! Bad input in a ladder's recipe variants (`types = [{ name, type, imatrix, tensor_types,
//! ... }]`): one line naming the variant and what is wrong, before anything is built.

use std::ffi::OsString;
use std::path::Path;

use super::cases::{Case, SWEEP, case, config_text, tiny_bytes};

/// `tpsbench run` on a ladder over the tiny model whose types are Q8_0 and `recipe`.
fn ladder(d: &Path, recipe: &str) -> Vec<OsString> {
    std::fs::write(d.join("tiny.gguf"), tiny_bytes()).unwrap();
    config_text(
        d,
        &format!(
            "{SWEEP}\n[[ladder]]\nname = \"tiny\"\nbase = \"tiny.gguf\"\n\
             types = [\"Q8_0\", {recipe}]\ncache_dir = \"cache\"\n"
        ),
    )
}

/// A legacy imatrix with one entry for blk.0.attn_q.weight, 64 wide (the tiny model's is 256).
fn narrow_imatrix(d: &Path) {
    let mut b = 1i32.to_le_bytes().to_vec();
    let name = b"blk.0.attn_q.weight";
    b.extend((name.len() as i32).to_le_bytes());
    b.extend(name);
    b.extend(1i32.to_le_bytes());
    b.extend(64i32.to_le_bytes());
    b.extend([0u8; 256]);
    std::fs::write(d.join("other.imatrix"), b).unwrap();
}

pub fn recipe_cases() -> Vec<Case> {
    vec![
        case(
            "recipe: a tensor_types pattern that matches no tensor",
            |d| {
                ladder(
                    d,
                    "{ name = \"v\", type = \"Q4_K_M\", tensor_types = [\"attn_zz=Q6_K\"] }",
                )
            },
            2,
            "tiny-v: tensor_types pattern \"attn_zz\" matches no tensor of the model",
        ),
        case(
            "recipe: an imatrix of another model",
            |d| {
                narrow_imatrix(d);
                ladder(
                    d,
                    "{ name = \"v\", type = \"IQ4_XS\", imatrix = \"other.imatrix\" }",
                )
            },
            2,
            "holds 64 values, the model's tensor takes 256: an imatrix of another model",
        ),
        case(
            "recipe: an unknown tensor type name",
            |d| {
                ladder(
                    d,
                    "{ name = \"v\", type = \"Q4_K_M\", tensor_types = [\"attn_v=Q9_K\"] }",
                )
            },
            2,
            "unknown tensor type \"Q9_K\"",
        ),
        case(
            "recipe: an IQ type without an imatrix",
            |d| ladder(d, "{ name = \"v\", type = \"IQ3_XXS\" }"),
            2,
            "IQ3_XXS needs an importance matrix (imatrix)",
        ),
    ]
}
