//! Where llama.cpp actually put a test's model layers, KV cache and compute buffers, read
//! from the log lines it prints while loading a model and creating a context. The `ngl` a
//! test asks for is a request: layers the backend cannot take stay on the CPU, and the KV
//! cache follows `no_kv_offload`. Pure: the engine captures the text, this parses it.
//!
//! The lines used (llama.cpp's src/llama-model.cpp, llama-kv-cache.cpp, llama-context.cpp):
//!
//! ```text
//! load_tensors: layer   0 assigned to device CUDA0, is_swa = 0        (debug level)
//! load_tensors: offloaded 31/31 layers to GPU                         (GPU builds only)
//! load_tensors:        CUDA0 model buffer size =  1234.56 MiB
//! llama_kv_cache:      CUDA0 KV buffer size =    64.00 MiB
//! llama_kv_cache: size =   64.00 MiB (   512 cells,  32 layers,  1/1 seqs), K (f16): ...
//! sched_reserve:       CUDA0 compute buffer size =   300.01 MiB
//! llama_context:  CUDA_Host  output buffer size =     0.19 MiB
//! ```
//!
//! Sizes are printed in MiB with two decimals, so bytes are exact to about ±5 KiB.

use serde::{Deserialize, Serialize};

/// A test's placement: which devices held what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Layers on a device other than the CPU. llama.cpp counts the repeating layers plus the
    /// output layer, so a 30-layer model fully offloaded reads 31/31.
    pub layers_offloaded: u32,
    pub layers_total: u32,
    /// Per device: layers assigned and bytes of weights, KV cache and compute buffers. Host
    /// buffer types (`CPU_Mapped`, `CPU_REPACK`, `CUDA_Host`, ...) count as `CPU`.
    pub devices: Vec<DevicePlacement>,
    /// Every buffer as llama.cpp named it, in log order.
    pub buffers: Vec<Buffer>,
    /// Cells (token positions) of the context's KV cache as llama.cpp made it: n_ctx rounded
    /// up to its padding (256 in the pinned llama.cpp). None when not logged, or when the
    /// context has several caches (an SWA cache beside the base one) of different sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cells: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicePlacement {
    /// llama.cpp's device name: `CPU`, `CUDA0`, `Vulkan0`, ...
    pub name: String,
    pub layers: u32,
    pub model_bytes: u64,
    pub kv_bytes: u64,
    pub compute_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Buffer {
    /// "model", "kv", "compute" or "output".
    pub kind: String,
    /// llama.cpp's buffer type name, e.g. `CUDA0`, `CPU_Mapped`, `CUDA_Host`.
    pub name: String,
    pub bytes: u64,
}

impl Placement {
    /// Bytes of KV cache (and recurrent state) llama.cpp allocated, over every device; None
    /// when it logged no KV buffer.
    pub fn kv_bytes(&self) -> Option<u64> {
        let total: u64 = self.devices.iter().map(|d| d.kv_bytes).sum();
        (total > 0).then_some(total)
    }

    /// KV-cache bytes per cell (one token position, all layers, K and V), from llama.cpp's
    /// own figures: `kv_bytes / kv_cells`.
    pub fn kv_bytes_per_cell(&self) -> Option<f64> {
        let cells = self.kv_cells.filter(|&c| c > 0)?;
        Some(self.kv_bytes()? as f64 / cells as f64)
    }

    /// The devices holding KV cache bytes, e.g. `["CUDA0"]`.
    pub fn kv_devices(&self) -> Vec<&str> {
        self.devices
            .iter()
            .filter(|d| d.kv_bytes > 0)
            .map(|d| d.name.as_str())
            .collect()
    }

    /// One line for humans: `31/31 layers on CUDA0; KV on CUDA0`.
    pub fn summary(&self) -> String {
        let layer_devs: Vec<String> = self
            .devices
            .iter()
            .filter(|d| d.layers > 0)
            .map(|d| format!("{} {}", d.name, d.layers))
            .collect();
        let kv = self.kv_devices();
        format!(
            "{}/{} layers offloaded ({}); KV on {}",
            self.layers_offloaded,
            self.layers_total,
            layer_devs.join(", "),
            if kv.is_empty() {
                "-".to_string()
            } else {
                kv.join(", ")
            }
        )
    }
}

/// The device a buffer type lives on: host buffer types are `CPU`, device buffer types are
/// named after their device (`CUDA0`); anything else (e.g. `CUDA_Split`) keeps its name.
pub fn device_of_buffer(name: &str) -> String {
    let host_suffix = [
        "_Mapped",
        "_REPACK",
        "_Host",
        "_AARCH64",
        "_KLEIDIAI",
        "_AMX",
        "_HBM",
    ];
    if name == "CPU" || name.starts_with("CPU_") || host_suffix.iter().any(|s| name.ends_with(s)) {
        "CPU".to_string()
    } else {
        name.to_string()
    }
}

/// Parses the text llama.cpp logged while loading the model and creating the context.
/// `None` when the text holds none of the lines above (another log format, or no capture),
/// so that an unknown placement is never reported as "all on the CPU".
pub fn parse(log: &str) -> Option<Placement> {
    let mut layers: Vec<(u32, String)> = Vec::new();
    let mut offloaded_line: Option<(u32, u32)> = None;
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut cells: Vec<u64> = Vec::new();
    for line in log.lines() {
        if let Some((il, dev)) = layer_line(line) {
            match layers.iter_mut().find(|(i, _)| *i == il) {
                Some(x) => x.1 = dev,
                None => layers.push((il, dev)),
            }
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
    if layers.is_empty() && offloaded_line.is_none() && buffers.is_empty() {
        return None;
    }
    let (layers_offloaded, layers_total) = if layers.is_empty() {
        offloaded_line.unwrap_or((0, 0))
    } else {
        let on_gpu = layers.iter().filter(|(_, d)| device_of_buffer(d) != "CPU");
        (on_gpu.count() as u32, layers.len() as u32)
    };

    let mut devices: Vec<DevicePlacement> = Vec::new();
    for (_, dev) in &layers {
        let i = device_index(&mut devices, device_of_buffer(dev));
        devices[i].layers += 1;
    }
    let buffer_idx: Vec<usize> = buffers
        .iter()
        .map(|b| device_index(&mut devices, device_of_buffer(&b.name)))
        .collect();
    for (b, i) in buffers.iter().zip(buffer_idx) {
        let d = &mut devices[i];
        match b.kind.as_str() {
            "model" => d.model_bytes += b.bytes,
            "kv" => d.kv_bytes += b.bytes,
            "compute" => d.compute_bytes += b.bytes,
            _ => {}
        }
    }
    cells.dedup();
    Some(Placement {
        layers_offloaded,
        layers_total,
        devices,
        buffers,
        kv_cells: match cells[..] {
            [one] => Some(one),
            _ => None,
        },
    })
}

/// The index of the device named `name`, appended if new.
fn device_index(devices: &mut Vec<DevicePlacement>, name: String) -> usize {
    if let Some(i) = devices.iter().position(|d| d.name == name) {
        return i;
    }
    devices.push(DevicePlacement {
        name,
        layers: 0,
        model_bytes: 0,
        kv_bytes: 0,
        compute_bytes: 0,
    });
    devices.len() - 1
}

/// The lines of a log that [`parse`] reads, so that a loaded model keeps kilobytes of its
/// load log rather than every tensor's line.
pub fn relevant_lines(log: &str) -> String {
    log.lines()
        .filter(|l| {
            l.contains(" buffer size = ")
                || l.contains(" layers to GPU")
                || l.contains(" assigned to device ")
                || kv_cells_line(l).is_some()
        })
        .fold(String::new(), |mut s, l| {
            s.push_str(l);
            s.push('\n');
            s
        })
}

/// `load_tensors: layer  12 assigned to device CUDA0, is_swa = 0`
fn layer_line(line: &str) -> Option<(u32, String)> {
    let (_, rest) = line.split_once(" layer ")?;
    let (num, rest) = rest.trim_start().split_once(' ')?;
    let dev = rest.trim_start().strip_prefix("assigned to device ")?;
    let dev = dev.split(',').next()?.trim();
    Some((num.parse().ok()?, dev.to_string()))
}

/// `load_tensors: offloaded 31/31 layers to GPU`
fn offloaded(line: &str) -> Option<(u32, u32)> {
    let (_, rest) = line.split_once(" offloaded ")?;
    if !rest.contains(" layers to GPU") {
        return None;
    }
    let (a, b) = rest.split_whitespace().next()?.split_once('/')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// `llama_kv_cache: size =   80.00 MiB (   640 cells,  32 layers,  1/1 seqs), ...`
fn kv_cells_line(line: &str) -> Option<u64> {
    let (head, rest) = line.split_once(": size = ")?;
    if !head.contains("kv_cache") {
        return None;
    }
    let (_, rest) = rest.split_once('(')?;
    let (num, rest) = rest.trim_start().split_once(' ')?;
    rest.starts_with("cells")
        .then(|| num.parse().ok())
        .flatten()
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
    let name = words.next()?;
    if name.ends_with(':') {
        return None; // no buffer name: not a line of the expected shape
    }
    Some(Buffer {
        kind: kind.to_string(),
        name: name.to_string(),
        bytes: (mib * 1024.0 * 1024.0).round() as u64,
    })
}

#[cfg(test)]
mod tests;
