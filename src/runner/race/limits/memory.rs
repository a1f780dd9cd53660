//! `[tune]`'s memory limits, per device: what a candidate's placement puts on each device
//! (`engine::placement::estimate`, from the GGUF's tensor table), against that device's
//! limit. Host memory holds the file less what the offload devices take, plus the KV cache
//! kept on the CPU, against `max_memory_gib` or the host's RAM less `memory_margin`; each
//! offload device holds its tensors and its layers' KV cache, against
//! `max_device_memory_gib` or the memory llama.cpp reports for it less `memory_margin`.

use std::path::{Path, PathBuf};

use crate::config::tune::Tune;
use crate::engine::DeviceInfo;
use crate::engine::placement::estimate::{DeviceShare, ModelTensors, estimate, kv_cells};
use crate::machine::roofline::Shape;
use crate::plan::PlannedTest;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Bytes as GiB, or MiB or KiB when smaller (a tiny model's 5 MiB is not "0.00 GiB").
pub(super) fn size(bytes: f64) -> String {
    if bytes >= GIB {
        format!("{:.2} GiB", bytes / GIB)
    } else if bytes >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", bytes / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KiB", bytes / 1024.0)
    }
}

/// The limits in bytes, each with how it is said.
pub(super) struct Limits {
    host: Option<(u64, String)>,
    /// Offload device name, its limit, how it is said.
    devices: Vec<(String, u64, String)>,
}

/// The host's RAM (MemTotal), bytes.
fn host_memory() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    crate::machine::memory::parse_kib_field(&m, "MemTotal:")
}

/// The limits `t` sets on this machine, whose llama.cpp devices are `devices`. Err: the
/// table names a device this build does not have (a limit nothing would check).
pub(super) fn limits(t: &Tune, devices: &[DeviceInfo]) -> Result<Limits, String> {
    let margin = t.limits.memory_margin;
    let host = match t.limits.max_memory_bytes {
        Some(b) => Some((b, format!("memory {} (max_memory_gib)", size(b as f64)))),
        None => host_memory().map(|h| {
            let b = (h as f64 * (1.0 - margin)) as u64;
            let said = format!(
                "memory {}: the host's RAM less {:.0}% (memory_margin)",
                size(b as f64),
                margin * 100.0
            );
            (b, said)
        }),
    };
    let offload: Vec<&DeviceInfo> = devices.iter().filter(|d| d.kind != "cpu").collect();
    for n in t.device_memory.named() {
        if !offload.iter().any(|d| d.name == n) {
            let has: Vec<&str> = offload.iter().map(|d| d.name.as_str()).collect();
            let has = if has.is_empty() {
                "it has no offload device".to_string()
            } else {
                format!("its offload devices: {}", has.join(", "))
            };
            return Err(format!(
                "tune.max_device_memory_gib names {n}, which this build of llama.cpp does not have ({has})"
            ));
        }
    }
    let mut out = Vec::new();
    for d in offload {
        match t.device_memory.given(&d.name) {
            Some(b) => out.push((
                d.name.clone(),
                b,
                format!("{} {} (max_device_memory_gib)", d.name, size(b as f64)),
            )),
            None if d.memory_total > 0 => {
                let b = (d.memory_total as f64 * (1.0 - margin)) as u64;
                out.push((
                    d.name.clone(),
                    b,
                    format!(
                        "{} {}: its {} less {:.0}% (memory_margin)",
                        d.name,
                        size(b as f64),
                        size(d.memory_total as f64),
                        margin * 100.0
                    ),
                ));
            }
            None => {}
        }
    }
    Ok(Limits { host, devices: out })
}

/// The models' tensor tables and shapes, read once per file.
#[derive(Default)]
pub(super) struct Shapes(Vec<(PathBuf, Option<Model>)>);

struct Model {
    file: u64,
    shape: Shape,
    tensors: Vec<(String, u64)>,
}

impl Shapes {
    fn of(&mut self, path: &Path) -> Option<&Model> {
        if !self.0.iter().any(|(p, _)| p == path) {
            let read = || -> Option<Model> {
                let file = std::fs::metadata(path).ok()?.len();
                let h = crate::gguf::reader::read_header(path).ok()?;
                let shape = crate::machine::shape_of(&h)?;
                let tensors = h
                    .tensors
                    .iter()
                    .map(|t| (t.name.clone(), t.n_bytes))
                    .collect();
                Some(Model {
                    file,
                    shape,
                    tensors,
                })
            };
            self.0.push((path.to_path_buf(), read()));
        }
        self.0.iter().find(|(p, _)| p == path)?.1.as_ref()
    }
}

/// "ngl 99, ncmoe 2": the candidate's placement settings, for the exclusion's figure.
fn placement_said(c: &PlannedTest) -> String {
    let p = &c.params;
    let mut s = format!("ngl {}", p.n_gpu_layers);
    for (name, flag) in [
        ("n_cpu_moe", "ncmoe"),
        ("tensor_buft_overrides", "ot"),
        ("devices", "dev"),
        ("tensor_split", "ts"),
    ] {
        let Some(k) = crate::config::knobs::knob(name) else {
            continue;
        };
        let v = k.get(p);
        if v != k.default_value() {
            s.push_str(&format!(", {flag} {}", v.show()));
        }
    }
    if p.no_kv_offload {
        s.push_str(", nkvo");
    }
    s
}

impl Limits {
    /// The limits as applied, one line each.
    pub(super) fn said(&self) -> Vec<String> {
        let mut v: Vec<String> = self.host.iter().map(|(_, s)| s.clone()).collect();
        v.extend(self.devices.iter().map(|(_, _, s)| format!("memory {s}")));
        v
    }

    /// Why candidate `c` of model `name` (file `path`) cannot fit at context `ctx`: the
    /// first device, host first, its estimate exceeds. None: it fits, or is not computable
    /// (the file or its shape unknown, a placement not estimated: the candidate stays).
    pub(super) fn excludes(
        &self,
        shapes: &mut Shapes,
        path: &Path,
        name: &str,
        c: &PlannedTest,
        ctx: u32,
        devices: &[DeviceInfo],
    ) -> Option<String> {
        let m = shapes.of(path)?;
        let ctx = ctx.max(c.params.n_ctx());
        // One sequence (a llama-bench test's context): the cells llama.cpp makes for it.
        let cells = kv_cells(ctx, 1, false);
        let kv_all = m
            .shape
            .kv_bytes_per_position(&c.params.type_k, &c.params.type_v)
            * cells as f64;
        // "at 64 tokens (256 cells)": the padding said where it makes the figure.
        let at = if cells == u64::from(ctx) {
            format!("{ctx} tokens")
        } else {
            format!("{ctx} tokens ({cells} cells)")
        };
        let model = ModelTensors {
            tensors: &m.tensors,
            n_layer: m.shape.n_layer as u32,
            kv_bytes_per_layer: kv_all / m.shape.n_layer.max(1) as f64,
        };
        let shares = estimate(&model, &c.params, devices).ok()?;
        let on_devices: u64 = (shares.iter())
            .filter(|d| d.name != "CPU")
            .map(|d| d.weight_bytes)
            .sum();
        let cpu_kv = shares
            .iter()
            .find(|d| d.name == "CPU")
            .map_or(0, |d| d.kv_bytes);
        // Host memory: the file (llama.cpp maps it) less what went to the devices.
        let host = DeviceShare {
            name: "CPU".into(),
            weight_bytes: m.file.saturating_sub(on_devices),
            kv_bytes: cpu_kv,
        };
        let offloaded = shares.iter().any(|d| d.name != "CPU" && d.total() > 0);
        if let Some((limit, _)) = self.host {
            if host.total() > limit {
                // Everything on the CPU: said as before devices were counted.
                let who = if offloaded { "CPU " } else { "" };
                let placed = if offloaded {
                    format!("; {}", placement_said(c))
                } else {
                    String::new()
                };
                return Some(format!(
                    "{name}: {who}{} (weights {} + KV {} at {at}{placed}) > {}",
                    size(host.total() as f64),
                    size(host.weight_bytes as f64),
                    size(host.kv_bytes as f64),
                    size(limit as f64)
                ));
            }
        }
        for d in shares.iter().filter(|d| d.name != "CPU") {
            let Some((_, limit, _)) = self.devices.iter().find(|(n, _, _)| *n == d.name) else {
                continue;
            };
            if d.total() > *limit {
                return Some(format!(
                    "{name}: {} {} (weights {} + KV {} at {at}; {}) > {}",
                    d.name,
                    size(d.total() as f64),
                    size(d.weight_bytes as f64),
                    size(d.kv_bytes as f64),
                    placement_said(c),
                    size(*limit as f64)
                ));
            }
        }
        None
    }
}
