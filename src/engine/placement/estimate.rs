//! Where a test's placement settings will put the model's weights and KV cache, from the
//! GGUF's tensor table before anything is loaded (`[tune]`'s memory limit prunes placements
//! before any speed is measured), by the rules the parser reads back from llama.cpp's log
//! (docs/tune.md, "Placement"). Compute buffers are not counted, so each figure is a lower
//! bound of what the device needs: a placement it says does not fit cannot fit.

use crate::config::knobs::{cpu_moe_patterns, override_pairs, pattern_matches};
use crate::engine::EngineError;
use crate::engine::{DeviceInfo, DeviceKind};
use crate::plan::TestParams;

use super::device_of_buffer;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceShare {
    pub name: String,
    /// Bytes of the tensors placed on it (in the file's types).
    pub weight_bytes: u64,
    /// Bytes of KV cache at the context asked.
    pub kv_bytes: u64,
}

impl DeviceShare {
    pub fn total(&self) -> u64 {
        self.weight_bytes + self.kv_bytes
    }
}

pub struct ModelTensors<'a> {
    pub tensors: &'a [(String, u64)],
    pub n_layer: u32,
    /// Bytes of K and V of one repeating layer for the whole cache (its cells, [`kv_cells`]).
    pub kv_bytes_per_layer: f64,
}

/// The devices `p` offloads to: every GPU for "auto" (integrated ones when there is no
/// discrete one), none for "none", else those named.
fn offload_devices<'a>(
    p: &TestParams,
    devices: &'a [DeviceInfo],
) -> Result<Vec<&'a DeviceInfo>, EngineError> {
    let asked = p.knobs.get("devices");
    let of = |kind| devices.iter().filter(move |d: &&DeviceInfo| d.kind == kind);
    match asked.as_ref().map_or("auto", |v| v.as_str()) {
        "none" => Ok(Vec::new()),
        "auto" => {
            let gpu = devices.iter().any(|d| d.kind == DeviceKind::Gpu);
            Ok(of(if gpu {
                DeviceKind::Gpu
            } else {
                DeviceKind::Igpu
            })
            .collect())
        }
        list => list
            .split('/')
            .filter(|n| *n != "CPU")
            .map(|n| {
                (devices.iter())
                    .find(|d| d.kind != DeviceKind::Cpu && d.name == n)
                    .ok_or_else(|| {
                        EngineError::Other(format!(
                            "devices = {list:?}: this build has no device {n}"
                        ))
                    })
            })
            .collect(),
    }
}

/// The cumulative shares of the offloaded layers per device: `tensor_split` where given
/// (not all zero), else the devices' free memory.
fn cumulative_split(p: &TestParams, devs: &[&DeviceInfo]) -> Vec<f64> {
    let given = p.knobs.get("tensor_split").map(|v| v.as_str().to_string());
    let given = given.unwrap_or_default();
    let given: Vec<f64> = given
        .split('/')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let mut shares: Vec<f64> = (0..devs.len())
        .map(|i| given.get(i).copied().unwrap_or(0.0))
        .collect();
    if shares.iter().all(|&x| x <= 0.0) {
        shares = devs.iter().map(|d| d.memory_free as f64).collect();
    }
    let sum: f64 = shares.iter().sum();
    let (mut acc, even) = (0.0, 1.0 / devs.len() as f64);
    let share = |x: &f64| if sum > 0.0 { x / sum } else { even };
    (shares.iter())
        .map(|x| {
            acc += share(x);
            acc
        })
        .collect()
}

/// The device of each layer `0..=n_layer` (the last: the output layer).
fn layer_devices(
    p: &TestParams,
    n_layer: u32,
    devs: &[&DeviceInfo],
) -> Result<Vec<String>, EngineError> {
    let layers = n_layer as i64 + 1;
    let cpu = || vec!["CPU".to_string(); layers as usize];
    if devs.is_empty() {
        return Ok(cpu());
    }
    let ngl = u32::try_from(p.n_gpu_layers).map_or(layers, |n| i64::from(n).min(layers));
    let first_offloaded = layers - ngl;
    let split = p.split_mode.as_str();
    let on = |il: i64| -> String {
        if il < first_offloaded {
            return "CPU".into();
        }
        if split == "none" {
            let i = (p.main_gpu.max(0) as usize).min(devs.len() - 1);
            return devs[i].name.clone();
        }
        // The device whose cumulative share first exceeds the layer's place among the
        // offloaded layers (llama.cpp's layer split).
        let at = (il - first_offloaded) as f64 / ngl as f64;
        let cum = cumulative_split(p, devs);
        let i = cum.iter().position(|&c| c > at).unwrap_or(devs.len() - 1);
        devs[i].name.clone()
    };
    if split == "row" && devs.len() > 1 {
        let why = "split_mode = \"row\" over several devices is not estimated";
        return Err(EngineError::Other(why.into()));
    }
    Ok((0..layers).map(on).collect())
}

/// The cells of the KV cache the pinned llama.cpp makes for `n_ctx` tokens over `n_seq_max`
/// sequences (src/llama-context.cpp, llama-kv-cache.cpp): `n_ctx` padded to a multiple of
/// 256, and without a unified cache one stream per sequence of its share, padded too. A
/// 64-token test's cache holds 256 cells.
pub fn kv_cells(n_ctx: u32, n_seq_max: u32, kv_unified: bool) -> u64 {
    const PAD: u64 = 256;
    let pad = |n: u64| n.div_ceil(PAD) * PAD;
    let n_ctx = pad(u64::from(n_ctx));
    let n_seq = u64::from(n_seq_max.max(1));
    if kv_unified {
        return n_ctx;
    }
    pad(n_ctx / n_seq) * n_seq
}

/// The one offload device that holds every layer (the output layer too) under `p`'s
/// placement; None when layers stay on the CPU or spread over several devices. Where it is
/// Some, `n_cpu_moe` only moves experts between that device and the CPU, so their memory
/// and speed change monotonically with it.
pub fn sole_device(p: &TestParams, n_layer: u32, devices: &[DeviceInfo]) -> Option<String> {
    let devs = offload_devices(p, devices).ok()?;
    let on = layer_devices(p, n_layer, &devs).ok()?;
    let first = on.first()?;
    (first != "CPU" && on.iter().all(|d| d == first)).then(|| first.clone())
}

/// The layer a tensor belongs to: `blk.N.*` is layer N, `output*` the output layer
/// (`n_layer`); None for the input layer and anything else (kept in host memory).
fn tensor_layer(name: &str, n_layer: u32) -> Option<u32> {
    if let Some(rest) = name.strip_prefix("blk.") {
        return rest.split('.').next()?.parse().ok();
    }
    (name.starts_with("output.") || name.starts_with("output_norm.")).then_some(n_layer)
}

/// Bytes per device of `model` under `p`'s placement, CPU first, then the devices holding
/// something in the build's order.
pub fn estimate(
    model: &ModelTensors,
    p: &TestParams,
    devices: &[DeviceInfo],
) -> Result<Vec<DeviceShare>, EngineError> {
    let devs = offload_devices(p, devices)?;
    let layer_dev = layer_devices(p, model.n_layer, &devs)?;
    let asked = p.knobs.get("tensor_buft_overrides");
    let mut overrides = asked.map_or_else(Vec::new, |v| override_pairs(v.as_str()));
    let ncmoe = p.knobs.get("n_cpu_moe").map_or(0, |v| v.as_i64());
    let moe = cpu_moe_patterns(ncmoe).into_iter();
    overrides.extend(moe.map(|pat| (pat, "CPU".to_string())));
    let mut out: Vec<DeviceShare> = Vec::new();
    let mut add = |name: String, w: u64, kv: u64| {
        let new = || DeviceShare {
            name: name.clone(),
            ..Default::default()
        };
        let d = crate::util::entry(&mut out, |d| d.name == name, new);
        d.weight_bytes += w;
        d.kv_bytes += kv;
    };
    add("CPU".into(), 0, 0);
    let tied = !model.tensors.iter().any(|(n, _)| n == "output.weight");
    let output_dev = &layer_dev[model.n_layer as usize];
    for (name, bytes) in model.tensors {
        let by_layer = tensor_layer(name, model.n_layer)
            .and_then(|il| layer_dev.get(il as usize))
            .cloned()
            .unwrap_or_else(|| "CPU".to_string());
        // Overrides apply to the tensors of the layers (experts above all); the input
        // layer stays in host memory whatever they say.
        let dev = match overrides.iter().find(|(pat, _)| pattern_matches(pat, name)) {
            Some((_, buf)) if tensor_layer(name, model.n_layer).is_some() => device_of_buffer(buf),
            _ => by_layer,
        };
        add(dev, *bytes, 0);
        if tied && name == "token_embd.weight" && output_dev != "CPU" {
            add(output_dev.clone(), *bytes, 0);
        }
    }
    let kv = model.kv_bytes_per_layer.max(0.0).round() as u64;
    for dev in &layer_dev[..model.n_layer as usize] {
        let dev = if p.no_kv_offload { "CPU" } else { dev.as_str() };
        add(dev.to_string(), 0, kv);
    }
    // CPU first, then the devices in the build's order (llama.cpp's).
    let rank = |n: &str| {
        devices
            .iter()
            .position(|x| x.name == n)
            .unwrap_or(devices.len())
    };
    out.sort_by_key(|d| {
        if d.name == "CPU" {
            0
        } else {
            1 + rank(&d.name)
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests;
