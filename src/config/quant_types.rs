//! The quantization types a ladder can build: llama.cpp's file types (`enum llama_ftype`);
//! those its quantizer makes only with an importance matrix only in a recipe that gives one
//! (`config::recipe`). Pure: names, numbers, order.

/// One llama.cpp file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuantType {
    /// The usual label, as `llama-quantize` prints it: `Q4_K_M`.
    pub name: &'static str,
    /// `enum llama_ftype` value (written to `general.file_type`).
    pub ftype: u32,
}

/// Every type a ladder may list, most precise first. The order ranks expected quality
/// (llama-quantize's published perplexity increases), not bits: `Q5_K_M` beats `Q5_1`.
pub(crate) const LADDER_TYPES: &[QuantType] = &[
    QuantType {
        name: "F32",
        ftype: 0,
    },
    QuantType {
        name: "F16",
        ftype: 1,
    },
    QuantType {
        name: "BF16",
        ftype: 32,
    },
    QuantType {
        name: "Q8_0",
        ftype: 7,
    },
    QuantType {
        name: "Q6_K",
        ftype: 18,
    },
    QuantType {
        name: "Q5_K_M",
        ftype: 17,
    },
    QuantType {
        name: "Q5_K_S",
        ftype: 16,
    },
    QuantType {
        name: "Q5_1",
        ftype: 9,
    },
    QuantType {
        name: "Q5_0",
        ftype: 8,
    },
    QuantType {
        name: "Q4_K_M",
        ftype: 15,
    },
    QuantType {
        name: "Q4_K_S",
        ftype: 14,
    },
    QuantType {
        name: "IQ4_XS",
        ftype: 30,
    },
    QuantType {
        name: "Q4_1",
        ftype: 3,
    },
    QuantType {
        name: "IQ4_NL",
        ftype: 25,
    },
    QuantType {
        name: "Q4_0",
        ftype: 2,
    },
    QuantType {
        name: "Q3_K_L",
        ftype: 13,
    },
    QuantType {
        name: "Q3_K_M",
        ftype: 12,
    },
    QuantType {
        name: "IQ3_M",
        ftype: 27,
    },
    QuantType {
        name: "IQ3_S",
        ftype: 26,
    },
    QuantType {
        name: "Q3_K_S",
        ftype: 11,
    },
    QuantType {
        name: "IQ3_XS",
        ftype: 22,
    },
    QuantType {
        name: "IQ3_XXS",
        ftype: 23,
    },
    QuantType {
        name: "Q2_K",
        ftype: 10,
    },
    QuantType {
        name: "IQ2_M",
        ftype: 29,
    },
    QuantType {
        name: "Q2_K_S",
        ftype: 21,
    },
    QuantType {
        name: "IQ2_S",
        ftype: 28,
    },
    QuantType {
        name: "IQ2_XS",
        ftype: 20,
    },
    QuantType {
        name: "IQ2_XXS",
        ftype: 19,
    },
    QuantType {
        name: "IQ1_M",
        ftype: 31,
    },
    QuantType {
        name: "IQ1_S",
        ftype: 24,
    },
];

/// Types llama.cpp refuses to produce without an importance matrix (tensor_requires_imatrix
/// in src/llama-quant.cpp).
const NEEDS_IMATRIX: &[&str] = &[
    "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "Q2_K_S",
];

impl QuantType {
    /// Looks a type up by name, case-insensitively; the error lists what is supported.
    pub fn parse(name: &str) -> Result<QuantType, String> {
        Self::parse_recipe(name, false)
    }

    /// [`parse`](Self::parse) for a variant that has an importance matrix or not.
    pub fn parse_recipe(name: &str, imatrix: bool) -> Result<QuantType, String> {
        let upper = name.trim().to_ascii_uppercase();
        if NEEDS_IMATRIX.contains(&upper.as_str()) && !imatrix {
            return Err(format!(
                "{upper} needs an importance matrix (imatrix): give it as {{ name = \"{upper}\", type = \"{upper}\", imatrix = \"x.imatrix\" }}"
            ));
        }
        if let Some(t) = LADDER_TYPES.iter().find(|t| t.name == upper) {
            return Ok(*t);
        }
        Err(format!(
            "unknown quantization type {name:?}: use one of {}",
            LADDER_TYPES
                .iter()
                .map(|t| t.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Position in [`LADDER_TYPES`]: lower is more precise.
    pub fn rank(self) -> usize {
        LADDER_TYPES
            .iter()
            .position(|t| t.name == self.name)
            .unwrap_or(usize::MAX)
    }

    /// Unquantized floating point (F32, F16, BF16).
    pub fn is_float(self) -> bool {
        matches!(self.name, "F32" | "F16" | "BF16")
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
        assert!(e.contains("importance matrix"), "{e}");
        let e = QuantType::parse("Q9_9").unwrap_err();
        assert!(e.contains("Q8_0") && e.contains("unknown"), "{e}");
    }

    #[test]
    fn ftype_numbers_match_the_gguf_labels() {
        for t in LADDER_TYPES {
            assert_eq!(
                crate::gguf::file_type_name(u64::from(t.ftype)),
                Some(t.name),
                "{t:?}"
            );
        }
    }

    #[test]
    fn the_most_precise_type_is_the_reference_default() {
        let ts: Vec<_> = ["Q2_K", "Q8_0", "Q4_K_M"]
            .iter()
            .map(|n| QuantType::parse(n).unwrap())
            .collect();
        assert_eq!(most_precise(&ts).unwrap().name, "Q8_0");
        assert!(QuantType::parse("F16").unwrap().rank() < ts[1].rank());
        assert!(QuantType::parse("F16").unwrap().is_float());
        assert!(!ts[0].is_float());
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
