//! Where llama.cpp actually put a test's model layers, KV cache and compute buffers (the
//! `ngl` a test asks for is only a request), read from the lines it logs while loading a
//! model and creating a context (src/llama-model.cpp, llama-kv-cache.cpp, llama-context.cpp):
//!
//! ```text
//! load_tensors: layer   0 assigned to device CUDA0, is_swa = 0        (debug level)
//! load_tensors: offloaded 31/31 layers to GPU                         (GPU builds only)
//! load_tensors:        CUDA0 model buffer size =  1234.56 MiB
//! llama_kv_cache:      CUDA0 KV buffer size =    64.00 MiB
//! llama_kv_cache: size =   64.00 MiB (   512 cells,  32 layers,  1/1 seqs), K (f16): ...
//! sched_reserve:       CUDA0 compute buffer size =   300.01 MiB
//! llama_context:  CUDA_Host  output buffer size =     0.19 MiB
//! tensor blk.0.ffn_up_exps.weight (8 MiB q4_0) buffer type overridden to CPU_REPACK   (debug)
//! ```
//!
//! Sizes are in MiB with two decimals (bytes exact to about ±5 KiB). A MoE model's expert
//! tensors are where their layer is unless an override moved them, logged per tensor in
//! whole MiB only: their bytes come from the GGUF's tensor table, their device from the log.

use serde::{Deserialize, Serialize};

use crate::util::entry;

pub mod estimate;

#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Layers on a device other than the CPU. llama.cpp counts the repeating layers plus the
    /// output layer, so a 30-layer model fully offloaded reads 31/31.
    pub layers_offloaded: u32,
    pub layers_total: u32,
    /// Per device: layers assigned and bytes of weights, KV cache and compute buffers. Host
    /// buffer types (`CPU_Mapped`, `CPU_REPACK`, `CUDA_Host`, ...) count as `CPU`.
    pub devices: Vec<DevicePlacement>,
    pub buffers: Vec<Buffer>,
    /// Cells (token positions) of the context's KV cache as llama.cpp made it: n_ctx rounded
    /// up to its padding (256 in the pinned llama.cpp). None when not logged, or when the
    /// context has several caches (an SWA cache beside the base one) of different sizes.
    pub kv_cells: Option<u64>,
    /// A MoE model's expert tensors, per layer and device holding some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub experts: Vec<ExpertPlacement>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<TensorOverride>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mismatch: Vec<String>,
    pub fit: Option<FitChoice>,
}

/// What llama.cpp's fit (`common_fit_params`, llama-bench's `-fitt`/`-fitc`) chose for a
/// model load: it replaces what the test asked of these settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitChoice {
    /// MiB fit was asked to leave free on every device.
    pub target_mib: u64,
    /// The smallest context fit was allowed.
    pub min_ctx: u32,
    pub n_gpu_layers: i32,
    /// Proportions per device, in llama.cpp's device order; empty when fit set none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_split: Vec<f32>,
    /// `pattern=buffer`, llama-bench's `-ot` form: tensors fit moved (experts to the CPU).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The context size fit projected (it may shrink it towards `min_ctx`).
    pub n_ctx: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpertPlacement {
    pub layer: u32,
    pub device: String,
    pub bytes: u64,
    pub tensors: u32,
}

/// `tensor NAME (N MiB TYPE) buffer type overridden to BUFFER`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorOverride {
    pub tensor: String,
    pub buffer: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DevicePlacement {
    pub name: String,
    pub layers: u32,
    pub model_bytes: u64,
    pub kv_bytes: u64,
    pub compute_bytes: u64,
    /// Bytes (in the file) of the expert tensors this device holds.
    #[serde(default, skip_serializing_if = "crate::util::is_default")]
    pub expert_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    /// "model", "kv", "compute" or "output".
    pub kind: String,
    pub name: String,
    pub bytes: u64,
}

impl Placement {
    /// Bytes of KV cache (and recurrent state).
    pub fn kv_bytes(&self) -> Option<u64> {
        let total: u64 = self.devices.iter().map(|d| d.kv_bytes).sum();
        (total > 0).then_some(total)
    }

    /// KV-cache bytes per cell (one token position, all layers, K and V).
    pub fn kv_bytes_per_cell(&self) -> Option<f64> {
        let cells = self.kv_cells.filter(|&c| c > 0)?;
        Some(self.kv_bytes()? as f64 / cells as f64)
    }
}

/// The device a buffer type lives on: host buffer types are `CPU`, others keep their name
/// (`CUDA0`, `CUDA_Split`).
pub fn device_of_buffer(name: &str) -> String {
    let mut host_suffix = "_Mapped _REPACK _Host _AARCH64 _KLEIDIAI _AMX _HBM".split(' ');
    if name == "CPU" || name.starts_with("CPU_") || host_suffix.any(|s| name.ends_with(s)) {
        "CPU"
    } else {
        name
    }
    .to_string()
}

/// `expert_tensors` (`(name, bytes)` from the GGUF header) are placed on the device of the
/// buffer an override moved them to, else on their layer's; None when the log holds none of
/// the lines above, so that an unknown placement is never reported as "all on the CPU".
pub fn parse_with_experts(log: &str, expert_tensors: &[(String, u64)]) -> Option<Placement> {
    let mut layers: Vec<(u32, String)> = Vec::new();
    let mut offloaded_line: Option<(u32, u32)> = None;
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut cells: Vec<u64> = Vec::new();
    let mut overrides: Vec<TensorOverride> = Vec::new();
    for line in log.lines() {
        if let Some(o) = override_line(line) {
            // A tensor is loaded once: a repeated line (a second load's log) replaces it.
            overrides.retain(|x| x.tensor != o.tensor);
            overrides.push(o);
        } else if let Some((il, dev)) = layer_line(line) {
            entry(&mut layers, |x| x.0 == il, || (il, String::new())).1 = dev;
        } else if let Some(x) = offloaded(line) {
            offloaded_line = Some(x);
        } else if let Some(c) = kv_cells_line(line) {
            cells.push(c);
        } else if let Some(b) = buffer_line(line) {
            // A re-run of the scheduler's reservation re-logs the compute buffers: the last wins.
            if b.kind == "compute" {
                buffers.retain(|x| !(x.kind == "compute" && x.name == b.name));
            }
            buffers.push(b);
        }
    }
    if layers.is_empty() && offloaded_line.is_none() && buffers.is_empty() && overrides.is_empty() {
        return None;
    }
    let (layers_offloaded, layers_total) = if layers.is_empty() {
        offloaded_line.unwrap_or((0, 0))
    } else {
        let on_gpu = layers.iter().filter(|(_, d)| device_of_buffer(d) != "CPU");
        (on_gpu.count() as u32, layers.len() as u32)
    };

    let mut devices: Vec<DevicePlacement> = Vec::new();
    layers.sort_by_key(|(il, _)| *il);
    for (_, dev) in &layers {
        device(&mut devices, device_of_buffer(dev)).layers += 1;
    }
    for b in &buffers {
        let d = device(&mut devices, device_of_buffer(&b.name));
        match b.kind.as_str() {
            "model" => d.model_bytes += b.bytes,
            "kv" => d.kv_bytes += b.bytes,
            "compute" => d.compute_bytes += b.bytes,
            _ => {}
        }
    }
    let experts = place_experts(&layers, &overrides, expert_tensors);
    for e in &experts {
        device(&mut devices, e.device.clone()).expert_bytes += e.bytes;
    }
    cells.dedup();
    Some(Placement {
        layers_offloaded,
        layers_total,
        devices,
        buffers,
        kv_cells: (cells.len() == 1).then(|| cells[0]),
        experts,
        overrides,
        ..Default::default()
    })
}

fn place_experts(
    layers: &[(u32, String)],
    overrides: &[TensorOverride],
    tensors: &[(String, u64)],
) -> Vec<ExpertPlacement> {
    let mut out: Vec<ExpertPlacement> = Vec::new();
    for (name, bytes) in tensors {
        let Some(layer) = expert_layer(name) else {
            continue;
        };
        let moved = (overrides.iter())
            .find(|o| &o.tensor == name)
            .map(|o| &o.buffer);
        let layer_device = || layers.iter().find(|(il, _)| *il == layer).map(|(_, d)| d);
        let Some(buffer) = moved.or_else(layer_device) else {
            continue;
        };
        let device = device_of_buffer(buffer);
        let e = entry(
            &mut out,
            |e| e.layer == layer && e.device == device,
            || ExpertPlacement {
                layer,
                device: device.clone(),
                bytes: 0,
                tensors: 0,
            },
        );
        e.bytes = e.bytes.saturating_add(*bytes);
        e.tensors += 1;
    }
    out.sort_by(|a, b| (a.layer, &a.device).cmp(&(b.layer, &b.device)));
    out
}

fn device(devices: &mut Vec<DevicePlacement>, name: String) -> &mut DevicePlacement {
    entry(
        devices,
        |d| d.name == name,
        || DevicePlacement {
            name: name.clone(),
            ..Default::default()
        },
    )
}

/// The lines of a log that [`parse_with_experts`] reads, so that a loaded model keeps
/// kilobytes of its load log rather than every tensor's line.
pub fn relevant_lines(log: &str) -> String {
    log.lines()
        .filter(|l| {
            l.contains(" buffer size = ")
                || l.contains(" layers to GPU")
                || l.contains(" assigned to device ")
                || l.contains(" buffer type overridden to ")
                || kv_cells_line(l).is_some()
        })
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// `load_tensors: layer  12 assigned to device CUDA0, is_swa = 0`
fn layer_line(line: &str) -> Option<(u32, String)> {
    let (_, rest) = line.split_once(" layer ")?;
    let (num, rest) = rest.trim_start().split_once(' ')?;
    let dev = rest.trim_start().strip_prefix("assigned to device ")?;
    let dev = dev.split(',').next()?.trim();
    Some((num.parse().ok()?, dev.to_string()))
}

/// `tensor blk.3.ffn_up_exps.weight (0 MiB q4_0) buffer type overridden to CPU_REPACK`
fn override_line(line: &str) -> Option<TensorOverride> {
    let rest = line.trim_start().strip_prefix("tensor ")?;
    let (tensor, rest) = rest.split_once(" (")?;
    let (_, buffer) = rest.split_once(") buffer type overridden to ")?;
    let buffer = buffer.trim();
    let bad =
        tensor.is_empty() || buffer.is_empty() || buffer.contains(' ') || tensor.contains(' ');
    (!bad).then(|| TensorOverride {
        tensor: tensor.to_string(),
        buffer: buffer.to_string(),
    })
}

/// The layer of an expert tensor, `blk.N.ffn_(up|gate|down|gate_up)_exps[.suffix]`: the
/// tensors `n_cpu_moe` moves (llama.cpp's `LLM_FFN_EXPS_REGEX`, `\.ffn_(up|down|gate)_(ch|)exps`).
pub fn expert_layer(tensor: &str) -> Option<u32> {
    let rest = tensor.strip_prefix("blk.")?;
    let (num, rest) = rest.split_once('.')?;
    let kind = rest.split('.').next()?;
    let is_expert =
        kind.starts_with("ffn_") && (kind.ends_with("_exps") || kind.ends_with("_chexps"));
    if is_expert { num.parse().ok() } else { None }
}

/// `load_tensors: offloaded 31/31 layers to GPU`
fn offloaded(line: &str) -> Option<(u32, u32)> {
    let (_, rest) = line
        .split_once(" offloaded ")
        .filter(|(_, r)| r.contains(" layers to GPU"))?;
    let (a, b) = rest.split_whitespace().next()?.split_once('/')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// `llama_kv_cache: size =   80.00 MiB (   640 cells,  32 layers,  1/1 seqs), ...`
fn kv_cells_line(line: &str) -> Option<u64> {
    let (_, rest) = line
        .split_once(": size = ")
        .filter(|(h, _)| h.contains("kv_cache"))?;
    let (_, rest) = rest.split_once('(')?;
    let (num, rest) = rest.trim_start().split_once(' ')?;
    num.parse().ok().filter(|_| rest.starts_with("cells"))
}

/// `<func>: <name> (model|KV|RS|compute|output) buffer size = <MiB> MiB`
fn buffer_line(line: &str) -> Option<Buffer> {
    let (head, tail) = line.split_once(" buffer size = ")?;
    let mib: f64 = tail.trim().strip_suffix("MiB")?.trim().parse().ok()?;
    let mut words = head.rsplit(' ').filter(|w| !w.is_empty());
    let kind = match words.next()? {
        "model" => "model",
        "KV" | "RS" => "kv",
        "compute" => "compute",
        "output" => "output",
        _ => return None,
    };
    // No buffer name: not a line of the expected shape.
    let name = words.next().filter(|n| !n.ends_with(':'))?;
    Some(Buffer {
        kind: kind.to_string(),
        name: name.to_string(),
        bytes: (mib * 1024.0 * 1024.0).round() as u64,
    })
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    pub n_gpu_layers: i32,
    pub no_kv_offload: bool,
    /// llama-bench's `-ncmoe`: the experts of the first N layers on the CPU.
    pub n_cpu_moe: u32,
    /// llama.cpp's fit chooses the layers itself: `n_gpu_layers` is then not a request.
    pub fit: bool,
    /// Tensor overrides were asked (`-ot`): experts may then be anywhere they name.
    pub tensor_overrides: bool,
}

impl Asked {
    pub fn of(p: &crate::plan::TestParams) -> Self {
        let knob = |name: &str| p.knobs.get(name);
        // With fit, llama.cpp chooses the layers, the split and the overrides itself (as in
        // llama-bench, what the test asked of them is replaced): none is a firm request.
        let fit = p.knobs.asks_fit();
        Asked {
            n_gpu_layers: p.n_gpu_layers,
            no_kv_offload: p.no_kv_offload,
            n_cpu_moe: (knob("n_cpu_moe").filter(|_| !fit))
                .map_or(0, |v| v.as_i64().clamp(0, u32::MAX as i64) as u32),
            fit,
            tensor_overrides: fit
                || knob("tensor_buft_overrides").is_some_and(|v| v.as_str() != "none"),
        }
    }
}

/// Where llama.cpp's placement differs from what the test asked, one line each. Checked only
/// where the log shows a device besides the CPU: a build or machine without one cannot
/// offload, which the run warns of once, not per test.
pub fn mismatches(asked: &Asked, p: &Placement) -> Vec<String> {
    let mut out = Vec::new();
    let gpu_seen =
        p.devices.iter().any(|d| d.name != "CPU" && d.layers > 0) || p.layers_offloaded > 0;
    if gpu_seen && !asked.fit && p.layers_total > 0 {
        let want =
            u32::try_from(asked.n_gpu_layers).map_or(p.layers_total, |n| n.min(p.layers_total));
        if p.layers_offloaded != want {
            out.push(format!(
                "n_gpu_layers = {} asks for {want} of {} layers on a GPU; llama.cpp put {} there",
                asked.n_gpu_layers, p.layers_total, p.layers_offloaded
            ));
        }
    }
    let kv_gpu: Vec<&str> = (p.devices.iter())
        .filter(|d| d.name != "CPU" && d.kv_bytes > 0)
        .map(|d| d.name.as_str())
        .collect();
    if asked.no_kv_offload && !kv_gpu.is_empty() {
        out.push(format!(
            "no_kv_offload = true, but llama.cpp put KV cache on {}",
            kv_gpu.join(", ")
        ));
    }
    // llama.cpp offloads the output layer first, and it has no KV cache: the repeating
    // layers offloaded are one fewer.
    let repeating = p.layers_offloaded.saturating_sub(1);
    if !asked.no_kv_offload && repeating > 0 && kv_gpu.is_empty() && p.kv_bytes().is_some() {
        out.push(format!(
            "no_kv_offload = false, but the KV cache of the {repeating} offloaded repeating \
             layers is on the CPU"
        ));
    }
    let n = asked.n_cpu_moe;
    let wrong: Vec<u32> = (p.experts.iter())
        .filter(|e| e.layer < n && e.device != "CPU")
        .map(|e| e.layer)
        .collect();
    if !wrong.is_empty() {
        out.push(format!(
            "n_cpu_moe = {n} asks for the experts of layers 0-{} on the CPU; those of layer(s) {} are not",
            n - 1,
            list(&wrong)
        ));
    }
    // And only those, unless overrides were asked: the others follow their layer.
    if !asked.tensor_overrides && gpu_seen {
        let overridden = |l| {
            p.overrides
                .iter()
                .any(|o| expert_layer(&o.tensor) == Some(l))
        };
        let moved: Vec<u32> = (p.experts.iter())
            .filter(|e| e.layer >= n && e.device == "CPU" && overridden(e.layer))
            .map(|e| e.layer)
            .collect();
        if !moved.is_empty() {
            out.push(format!(
                "n_cpu_moe = {n}, but the experts of layer(s) {} were moved to the CPU too",
                list(&moved)
            ));
        }
    }
    out
}

/// `0, 1, 5` (sorted, deduplicated, at most 12 shown).
fn list(layers: &[u32]) -> String {
    let v = crate::util::sorted_unique(layers.iter().copied());
    let shown: Vec<String> = v.iter().take(12).map(u32::to_string).collect();
    let more = v.len().saturating_sub(12);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub fn parse(log: &str) -> Option<Placement> {
    parse_with_experts(log, &[])
}
