//! The knob table's values against this build and the model files: a device or buffer type
//! that does not exist, or a tensor_split longer than the devices, is bad input; n_cpu_moe
//! without expert tensors, or an override pattern that matches no tensor, is a warning.
//! Pure: the caller passes what the engine lists.

use std::path::Path;

use super::error::KnobError;
use crate::config::Config;
use crate::config::knobs::{KnobValue, override_pairs, pattern_matches};

pub struct Offer<'a> {
    /// Device names, e.g. "CPU", "Vulkan0".
    pub devices: &'a [String],
    /// Buffer type names, e.g. "CPU", "Vulkan0", "Vulkan_Host".
    pub buffer_types: &'a [String],
    /// How many of the devices are not the CPU.
    pub offload_devices: usize,
}

/// Every sweep of the configuration with a name for messages, its values by knob, and the
/// model file it runs on (None for a ladder, whose variants are built later).
pub(crate) fn sweeps(config: &Config) -> Vec<(String, &crate::config::Axes, Option<&Path>)> {
    let models = (config.models.iter())
        .filter(|m| m.path.is_some())
        .map(|m| (format!("model {:?}", m.name), &m.axes, m.path.as_deref()));
    let ladders = config
        .ladders
        .iter()
        .map(|l| (format!("ladder {:?}", l.name), &l.axes, None));
    models.chain(ladders).collect()
}

fn values<'a>(a: &'a crate::config::Axes, name: &str) -> &'a [KnobValue] {
    a.knobs.get(name).map(Vec::as_slice).unwrap_or(&[])
}

/// Bad input as one line (`Err`), else the warnings to print.
pub fn check(config: &Config, offer: &Offer) -> Result<Vec<String>, KnobError> {
    let mut warnings = Vec::new();
    let file = || config.file.clone();
    for (table, axes, path) in sweeps(config) {
        for v in values(axes, "devices") {
            let names = v.as_str().split('/');
            for name in names.filter(|n| !matches!(*n, "auto" | "none")) {
                if !offer.devices.iter().any(|d| d == name) {
                    return Err(KnobError::NoDevice {
                        file: file(),
                        table,
                        device: name.to_string(),
                        devices: offer.devices.to_vec(),
                    });
                }
            }
        }
        for v in values(axes, "tensor_split") {
            let n = v.as_str().split('/').count();
            let most = offer.offload_devices.max(1);
            if n > most {
                return Err(KnobError::TooManyProportions {
                    file: file(),
                    table,
                    split: v.as_str().to_string(),
                    proportions: n,
                    offload_devices: offer.offload_devices,
                    devices: offer.devices.to_vec(),
                });
            }
        }
        let tensors: Option<Vec<String>> = path.and_then(|p| {
            crate::gguf::reader::read_header(p)
                .ok()
                .map(|h| h.tensors.into_iter().map(|t| t.name).collect())
        });
        let shown = path.map(|p| p.display().to_string()).unwrap_or_default();
        for v in values(axes, "tensor_buft_overrides") {
            for (pattern, buft) in override_pairs(v.as_str()) {
                if !offer.buffer_types.contains(&buft) {
                    return Err(KnobError::NoBufferType {
                        file: file(),
                        table,
                        buffer_type: buft,
                        buffer_types: offer.buffer_types.to_vec(),
                    });
                }
                if let Some(names) = &tensors
                    && !names.iter().any(|n| pattern_matches(&pattern, n))
                {
                    warnings.push(format!(
                        "{table}: tensor_buft_overrides: the pattern {pattern:?} matches no \
                         tensor of {shown}"
                    ));
                }
            }
        }
        if values(axes, "n_cpu_moe").iter().any(|v| v.as_i64() > 0)
            && let Some(names) = &tensors
            && !names.iter().any(|n| is_expert_tensor(n))
        {
            warnings.push(format!(
                "{table}: n_cpu_moe: {shown} has no expert tensors (ffn_*_exps): n_cpu_moe \
                 changes nothing"
            ));
        }
    }
    Ok(warnings)
}

/// An expert tensor of a mixture-of-experts layer, as llama.cpp names them.
pub fn is_expert_tensor(name: &str) -> bool {
    pattern_matches(r"\.ffn_(up|down|gate|gate_up)_(ch|)exps", name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sweep: &str) -> Config {
        let src = format!(
            "[sweep]\nn_prompt = 8\nn_gen = 0\n{sweep}\n[[model]]\nname = \"m\"\npath = \"/nonexistent.gguf\"\n"
        );
        crate::config::parse(Path::new("models.toml"), &src, 2).unwrap()
    }

    fn offer() -> (Vec<String>, Vec<String>) {
        (
            vec!["CPU".to_string()],
            vec!["CPU".to_string(), "CPU_REPACK".to_string()],
        )
    }

    fn run(sweep: &str) -> Result<Vec<String>, KnobError> {
        let (d, b) = offer();
        let o = Offer {
            devices: &d,
            buffer_types: &b,
            offload_devices: 0,
        };
        check(&config(sweep), &o)
    }

    #[test]
    fn unknown_devices_and_buffer_types_name_the_key_and_list_what_exists() {
        let e = run("devices = \"Vulkan0\"").unwrap_err();
        assert!(matches!(&e, KnobError::NoDevice { device, .. } if device == "Vulkan0"));
        let e = e.to_string();
        assert!(
            e.contains("model \"m\": key `devices`") && e.contains("CPU"),
            "{e}"
        );
        let e = run("tensor_buft_overrides = \"exps=CUDA0\"").unwrap_err();
        assert!(matches!(e, KnobError::NoBufferType { .. }));
        let e = e.to_string();
        assert!(
            e.contains("key `tensor_buft_overrides`") && e.contains("CPU_REPACK"),
            "{e}"
        );
        let e = run("tensor_split = \"1/1\"").unwrap_err();
        assert!(matches!(
            e,
            KnobError::TooManyProportions { proportions: 2, .. }
        ));
        assert!(e.to_string().contains("2 proportions"), "{e}");
        assert!(run("devices = \"CPU\"\ntensor_buft_overrides = \"exps=CPU\"").is_ok());
        assert!(run("devices = [\"auto\", \"none\"]\ntensor_split = \"1\"").is_ok());
    }

    #[test]
    fn expert_tensors_are_recognised_by_llama_cpp_names() {
        assert!(is_expert_tensor("blk.0.ffn_up_exps.weight"));
        assert!(is_expert_tensor("blk.12.ffn_gate_up_exps.weight"));
        assert!(!is_expert_tensor("blk.0.ffn_up.weight"));
        assert!(!is_expert_tensor("blk.0.ffn_gate_inp.weight"));
    }
}
