//! `[tune]`'s memory limits, per device: what a candidate's placement puts on each device
//! (`engine::placement::estimate`, from the GGUF's tensor table), against that device's
//! limit. Host memory holds the file less what the offload devices take, plus the KV cache
//! kept on the CPU, against `max_memory_gib` or the host's RAM less `memory_margin`; each
//! offload device holds its tensors and its layers' KV cache, against
//! `max_device_memory_gib` or the memory llama.cpp reports for it less `memory_margin`.

use std::path::{Path, PathBuf};

use crate::config::knobs::{self, TestParams};
use crate::config::tune::Tune;
use crate::engine::placement::estimate::{DeviceShare, ModelTensors, estimate, kv_cells};
use crate::engine::{DeviceInfo, DeviceKind};
use crate::machine::roofline::Shape;
use crate::plan::PlannedTest;
use crate::record::tune::Applied;
use crate::runner::RunnerError;
use crate::util::units::format_size;

/// [`format_size`], with KiB below 1 MiB: a tiny model's KV cache is not "0.00 MiB".
pub(super) fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format_size(bytes)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// The limits in bytes, each with how it is said.
pub(super) struct Limits {
    host: Option<(u64, String)>,
    /// Offload device name, its limit, how it is said.
    devices: Vec<(String, u64, String)>,
    /// This build's llama.cpp devices, which a placement fills.
    seen: Vec<DeviceInfo>,
}

/// The host's RAM (MemTotal), bytes.
fn host_memory() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    crate::machine::memory::parse_kib_field(&m, "MemTotal:")
}

/// The limits `t` (of configuration `file`) sets on this machine, whose llama.cpp devices
/// are `devices`. Refused: the table names a device this build does not have (a limit
/// nothing would check).
pub(super) fn limits(t: &Tune, devices: &[DeviceInfo], file: &Path) -> Result<Limits, RunnerError> {
    let margin = t.limits.memory_margin;
    let (less, pct) = (|m: u64| (m as f64 * (1.0 - margin)) as u64, margin * 100.0);
    let host = match t.limits.max_memory_bytes {
        Some(b) => Some((b, format!("{} (max_memory_gib)", size(b)))),
        None => host_memory().map(less).map(|b| {
            let said = format!("{}: the host's RAM less {pct:.0}% (memory_margin)", size(b));
            (b, said)
        }),
    };
    let offload: Vec<&DeviceInfo> = (devices.iter())
        .filter(|d| d.kind != DeviceKind::Cpu)
        .collect();
    for n in t.device_memory.named() {
        if !offload.iter().any(|d| d.name == n) {
            let has: Vec<&str> = offload.iter().map(|d| d.name.as_str()).collect();
            let has = if has.is_empty() {
                "it has no offload device".to_string()
            } else {
                format!("its offload devices: {}", has.join(", "))
            };
            return Err(RunnerError::Refused(format!(
                "{}: tune.max_device_memory_gib names {n}, which this build of llama.cpp does not have ({has})",
                file.display()
            )));
        }
    }
    let out = offload.into_iter().filter_map(|d| {
        let (name, total) = (&d.name, d.memory_total);
        let (b, said) = match t.device_memory.given(name) {
            Some(b) => (b, format!("{name} {} (max_device_memory_gib)", size(b))),
            None if total > 0 => {
                let b = less(total);
                let said = format!(
                    "{name} {}: its {} less {pct:.0}% (memory_margin)",
                    size(b),
                    size(total)
                );
                (b, said)
            }
            None => return None,
        };
        Some((name.clone(), b, said))
    });
    Ok(Limits {
        host,
        devices: out.collect(),
        seen: devices.to_vec(),
    })
}

/// The models' tensor tables and shapes, read once per file.
#[derive(Default)]
pub(in crate::runner::race) struct Shapes(Vec<(PathBuf, Option<Model>)>);

pub(in crate::runner::race) struct Model {
    file: u64,
    pub shape: Shape,
    tensors: Vec<(String, u64)>,
}

impl Shapes {
    pub(in crate::runner::race) fn of(&mut self, path: &Path) -> Option<&Model> {
        if !self.0.iter().any(|(p, _)| p == path) {
            let read = || -> Option<Model> {
                let file = std::fs::metadata(path).ok()?.len();
                let h = crate::gguf::reader::read_header(path).ok()?;
                let shape = crate::machine::shape_of(&h)?;
                let tensors = h.tensors.iter().map(|t| (t.name.clone(), t.n_bytes));
                Some(Model {
                    file,
                    shape,
                    tensors: tensors.collect(),
                })
            };
            self.0.push((path.to_path_buf(), read()));
        }
        self.0.iter().find(|(p, _)| p == path)?.1.as_ref()
    }
}

impl Limits {
    pub(super) fn said(&self) -> Vec<Applied> {
        let host = self.host.iter().map(|(_, s)| s);
        let devices = self.devices.iter().map(|(_, _, s)| s);
        Vec::from_iter(host.chain(devices).map(|s| Applied::Memory(s.clone())))
    }

    /// Why candidate `c` of model `name` (file `path`) cannot fit at context `at`, with
    /// `draft` beside it: the first device, host first, its estimate exceeds. None: it fits,
    /// or is not computable (the candidate stays).
    pub(super) fn excludes(
        &self,
        shapes: &mut Shapes,
        path: &Path,
        name: &str,
        c: &PlannedTest,
        at: Context,
        draft: Option<&DraftModel>,
    ) -> Option<String> {
        let devices = &self.seen;
        let ctx = at.per_seq.max(c.params.n_ctx());
        let seqs = at.seqs.max(1);
        // The cells llama.cpp makes for `seqs` sequences of `ctx` tokens.
        let cells = kv_cells(ctx.saturating_mul(seqs), seqs, at.unified);
        let at = context_said(ctx, seqs, cells);
        let target = held(shapes.of(path)?, &c.params, cells, devices)?;
        let draft = match draft {
            Some(d) => {
                let h = held(shapes.of(d.path)?, &d.params(&c.params), cells, devices)?;
                Some((d.label, h))
            }
            None => None,
        };
        let bytes = |h: &Held, dev: &str| {
            h.share(dev)
                .map_or((0, 0), |d| (d.weight_bytes, d.kv_bytes))
        };
        let offloaded = target.offloaded || draft.as_ref().is_some_and(|(_, h)| h.offloaded);
        let host = self.host.as_ref().map(|(limit, _)| ("CPU", *limit));
        let devices = self
            .devices
            .iter()
            .map(|(dev, limit, _)| (dev.as_str(), *limit));
        for (dev, limit) in host.into_iter().chain(devices) {
            let (w, kv) = bytes(&target, dev);
            // The draft's part of the figure: "; draft q4: weights 1.00 MiB + KV 2.0 KiB".
            let (dw, dkv) = draft.as_ref().map_or((0, 0), |(_, h)| bytes(h, dev));
            let total = w + kv + dw + dkv;
            if total <= limit {
                continue;
            }
            let drafted = draft.as_ref().map_or(String::new(), |(label, _)| {
                format!("; draft {label}: weights {} + KV {}", size(dw), size(dkv))
            });
            // Everything on the CPU: said as before devices were counted.
            let (who, placed) = match (dev, offloaded) {
                ("CPU", false) => (String::new(), String::new()),
                _ => (
                    format!("{dev} "),
                    format!("; {}", knobs::placement(&c.params)),
                ),
            };
            return Some(format!(
                "{name}: {who}{} (weights {} + KV {} at {at}{placed}{drafted}) > {}",
                size(total),
                size(w),
                size(kv),
                size(limit)
            ));
        }
        None
    }
}

/// "64 tokens (256 cells)", "2 × 64 tokens": the padding said where it makes the figure.
fn context_said(ctx: u32, seqs: u32, cells: u64) -> String {
    let tokens = match seqs {
        1 => format!("{ctx} tokens"),
        _ => format!("{seqs} × {ctx} tokens"),
    };
    if cells == u64::from(ctx) * u64::from(seqs) {
        tokens
    } else {
        format!("{tokens} ({cells} cells)")
    }
}

/// What the model at `path` placed as `p` holds per device at the test's context, the host
/// first: the figure a dry run prints. None: the file or its shape unreadable, or a
/// placement not estimated.
pub(crate) fn per_device(
    path: &Path,
    p: &TestParams,
    devices: &[DeviceInfo],
) -> Option<Vec<DeviceShare>> {
    let mut shapes = Shapes::default();
    let h = held(shapes.of(path)?, p, kv_cells(p.n_ctx(), 1, false), devices)?;
    Some(std::iter::once(h.host).chain(h.devices).collect())
}

/// The context a candidate's KV cache holds: `per_seq` tokens for each of `seqs` sequences,
/// one cache for all (`unified`) or a stream each.
#[derive(Debug, Clone, Copy)]
pub(super) struct Context {
    pub per_seq: u32,
    pub seqs: u32,
    pub unified: bool,
}

impl Context {
    /// One sequence of `per_seq` tokens.
    pub(super) fn one(per_seq: u32) -> Context {
        Context {
            per_seq,
            seqs: 1,
            unified: false,
        }
    }
}

/// A draft model a drafted candidate loads beside its target.
pub(super) struct DraftModel<'a> {
    pub path: &'a Path,
    /// How the exclusion names it.
    pub label: &'a str,
    /// Its n_gpu_layers (negative: every layer, as llama.cpp reads -1 for a draft).
    pub n_gpu_layers: i32,
}

impl DraftModel<'_> {
    /// The draft's placement beside a target placed as `target`, as the pinned llama.cpp's
    /// `common_base_params_to_speculative` builds it: the global device list and split (the
    /// target's own are not passed on), no buffer overrides, its own n_gpu_layers, an f16 KV
    /// cache offloaded with its layers, at the target's context.
    fn params(&self, target: &TestParams) -> TestParams {
        let mut p = target.clone();
        p.n_gpu_layers = self.n_gpu_layers;
        p.type_k = "f16".into();
        p.type_v = "f16".into();
        p.split_mode = Default::default();
        p.main_gpu = 0;
        p.no_kv_offload = false;
        for name in [
            "devices",
            "tensor_split",
            "tensor_buft_overrides",
            "n_cpu_moe",
        ] {
            if let Some(k) = knobs::knob(name) {
                p.knobs.set(name, k.default_value());
            }
        }
        p
    }
}

/// What one model holds on each device at a placement: the host (the file, which llama.cpp
/// maps, less what went to the devices, plus the KV cache kept on the CPU) and each offload
/// device (its tensors and its layers' KV cache).
struct Held {
    host: DeviceShare,
    devices: Vec<DeviceShare>,
    offloaded: bool,
}

impl Held {
    fn share(&self, name: &str) -> Option<&DeviceShare> {
        if name == "CPU" {
            return Some(&self.host);
        }
        self.devices.iter().find(|d| d.name == name)
    }
}

/// `m` placed as `p` with a KV cache of `cells`; None when the placement is not estimated.
fn held(m: &Model, p: &TestParams, cells: u64, devices: &[DeviceInfo]) -> Option<Held> {
    let kv_all = m.shape.kv_bytes_per_position(&p.type_k, &p.type_v) * cells as f64;
    let model = ModelTensors {
        tensors: &m.tensors,
        n_layer: m.shape.n_layer as u32,
        kv_bytes_per_layer: kv_all / m.shape.n_layer.max(1) as f64,
    };
    let shares = estimate(&model, p, devices).ok()?;
    let (cpu, offload): (Vec<DeviceShare>, Vec<DeviceShare>) =
        shares.into_iter().partition(|d| d.name == "CPU");
    let on_devices: u64 = offload.iter().map(|d| d.weight_bytes).sum();
    Some(Held {
        host: DeviceShare {
            name: "CPU".into(),
            weight_bytes: m.file.saturating_sub(on_devices),
            kv_bytes: cpu.first().map_or(0, |d| d.kv_bytes),
        },
        offloaded: offload.iter().any(|d| d.total() > 0),
        devices: offload,
    })
}

#[cfg(test)]
mod tests;
