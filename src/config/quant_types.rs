//! The quantization types a ladder can build: llama.cpp's file types (`enum llama_ftype`);
//! those its quantizer makes only with an importance matrix only in a recipe that gives one
//! (`config::recipe`). Pure: names, numbers, order.

use crate::config::Invalid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuantType {
    /// The usual label, as `llama-quantize` prints it: `Q4_K_M`.
    pub name: &'static str,
    /// `enum llama_ftype` value (written to `general.file_type`).
    pub ftype: u32,
}

/// Every type a ladder may list, most precise first. The order ranks expected quality
/// (llama-quantize's published perplexity increases), not bits: `Q5_K_M` beats `Q5_1`.
/// Their `enum llama_ftype` values are the labels' of `gguf::file_type_name`.
pub(crate) const LADDER_TYPES: &[&str] = &[
    "F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S",
    "IQ4_XS", "Q4_1", "IQ4_NL", "Q4_0", "Q3_K_L", "Q3_K_M", "IQ3_M", "IQ3_S", "Q3_K_S", "IQ3_XS",
    "IQ3_XXS", "Q2_K", "IQ2_M", "Q2_K_S", "IQ2_S", "IQ2_XS", "IQ2_XXS", "IQ1_M", "IQ1_S",
];

/// Types llama.cpp refuses to produce without an importance matrix (tensor_requires_imatrix
/// in src/llama-quant.cpp).
const NEEDS_IMATRIX: &[&str] = &[
    "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "Q2_K_S",
];

impl QuantType {
    /// Looks a type up by name, case-insensitively; the error lists what is supported.
    pub fn parse(name: &str) -> Result<QuantType, Invalid> {
        Self::parse_recipe(name, false)
    }

    /// [`parse`](Self::parse) for a variant that has an importance matrix or not.
    pub fn parse_recipe(name: &str, imatrix: bool) -> Result<QuantType, Invalid> {
        let upper = name.trim().to_ascii_uppercase();
        if NEEDS_IMATRIX.contains(&upper.as_str()) && !imatrix {
            return Err(Invalid(format!(
                "{upper} needs an importance matrix (imatrix): give it as {{ name = \"{upper}\", type = \"{upper}\", imatrix = \"x.imatrix\" }}"
            )));
        }
        let known = LADDER_TYPES.iter().find(|&&t| t == upper);
        let ftype = |&name: &&'static str| {
            let ftype =
                (0..64).find(|&f| crate::gguf::file_type_name(u64::from(f)) == Some(name))?;
            Some(QuantType { name, ftype })
        };
        known.and_then(ftype).ok_or_else(|| {
            Invalid(format!(
                "unknown quantization type {name:?}: use one of {}",
                LADDER_TYPES.join(", ")
            ))
        })
    }

    /// Position in [`LADDER_TYPES`]: lower is more precise.
    pub fn rank(self) -> usize {
        LADDER_TYPES
            .iter()
            .position(|&t| t == self.name)
            .unwrap_or(usize::MAX)
    }
}

/// The most precise of `types` (the default reference of a ladder).
pub(crate) fn most_precise(types: &[QuantType]) -> Option<QuantType> {
    types.iter().copied().min_by_key(|t| t.rank())
}

/// True when a ggml tensor type id holds quantized data (anything but F32, F16, BF16 and
/// the integer types).
pub(crate) fn is_quantized_ggml_type(id: u32) -> bool {
    !matches!(id, 0 | 1 | 30 | 24..=28)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_case_insensitively_and_unknown_ones_say_why() {
        assert_eq!(QuantType::parse("q4_k_m").unwrap().ftype, 15);
        assert_eq!(QuantType::parse("F16").unwrap().ftype, 1);
        let e = QuantType::parse("IQ2_XS").unwrap_err();
        assert!(e.0.contains("importance matrix"), "{e}");
        let e = QuantType::parse("Q9_9").unwrap_err();
        assert!(e.0.contains("Q8_0") && e.0.contains("unknown"), "{e}");
    }

    #[test]
    fn every_type_has_an_ftype_whose_gguf_label_it_is() {
        for name in LADDER_TYPES {
            let t = QuantType::parse_recipe(name, true).unwrap();
            assert_eq!(crate::gguf::file_type_name(u64::from(t.ftype)), Some(*name));
        }
        assert_eq!(QuantType::parse("Q4_K_M").unwrap().ftype, 15);
        assert_eq!(QuantType::parse_recipe("IQ3_XXS", true).unwrap().ftype, 23);
    }

    #[test]
    fn the_most_precise_type_is_the_reference_default() {
        let ts: Vec<_> = ["Q2_K", "Q8_0", "Q4_K_M"]
            .iter()
            .map(|n| QuantType::parse(n).unwrap())
            .collect();
        assert_eq!(most_precise(&ts).unwrap().name, "Q8_0");
        assert!(QuantType::parse("F16").unwrap().rank() < ts[1].rank());
    }

    #[test]
    fn quantized_tensor_types_are_told_from_float_ones() {
        assert!(!is_quantized_ggml_type(0));
        assert!(!is_quantized_ggml_type(1));
        assert!(!is_quantized_ggml_type(30));
        assert!(is_quantized_ggml_type(3));
        assert!(is_quantized_ggml_type(12));
    }
}
