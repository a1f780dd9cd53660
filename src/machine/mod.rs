//! Knowing the machine: bandwidth probe, roofline arithmetic, known-GPU table, NVML,
//! energy sampling and peak memory.

pub(crate) mod bandwidth;
pub(crate) mod energy;
pub(crate) mod gpus;
pub(crate) mod kv;
pub(crate) mod memory;
pub(crate) mod nvml;
pub(crate) mod roofline;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::gguf::reader::{Header, TensorInfo};
use crate::plan::TestParams;
use energy::{Energy, PowerSource, Sampler};
pub use kv::KvCacheSource;
use roofline::{DecodeRoofline, PrefillCompute, Shape};

/// The one-minute load average above which a machine of `logical_cpus` is busy: half a load
/// per CPU (a 2-CPU machine at 1.0 is half taken by something else; on a 16-CPU box, a load
/// of 3 left by the previous minute's run is not busy). The runner warns at start and the
/// leaderboard flags a run by this one rule.
pub fn busy_threshold(logical_cpus: u32) -> f64 {
    0.5 * f64::from(logical_cpus.max(1))
}

pub const POWER_PERIOD: Duration = Duration::from_millis(50);

/// What a test used and how close it came to the hardware's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Of the process during the test (Linux).
    pub peak_rss_bytes: Option<u64>,
    /// KV-cache bytes of the test's context: llama.cpp's own KV buffers (from the test's
    /// placement, its padded context included) where it logged them, else computed as
    /// n_ctx × layers × K and V widths × type sizes. `kv_cache_source` says which.
    pub kv_cache_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_source: Option<KvCacheSource>,
    /// Over the timed repetitions.
    pub energy: Option<Energy>,
    pub joules_per_token: Option<f64>,
    pub roofline: Option<DecodeRoofline>,
    pub prefill: Option<PrefillCompute>,
}

pub fn shape_of(h: &Header) -> Option<Shape> {
    let get = |k: &str| h.arch_u64(k);
    let n_layer = get("block_count")?;
    let n_embd = get("embedding_length")?;
    let n_head = get("attention.head_count").filter(|&n| n > 0)?;
    let n_head_kv = get("attention.head_count_kv").unwrap_or(n_head);
    let head_k = get("attention.key_length").unwrap_or(n_embd / n_head);
    let embd = h.tensors.iter().find(|t| t.name == "token_embd.weight");
    let expert = |t: &&TensorInfo| crate::engine::placement::expert_layer(&t.name).is_some();
    let experts = h.tensors.iter().filter(expert);
    Some(Shape {
        n_layer,
        n_embd_kv: n_head_kv * head_k,
        weight_bytes: h.tensors.iter().map(|t| t.n_bytes).sum(),
        input_embedding_bytes: embd.map_or(0, |t| t.n_bytes),
        tied_embeddings: !h.tensors.iter().any(|t| t.name == "output.weight"),
        n_vocab: embd.and_then(|t| t.dims.get(1).copied()).unwrap_or(0),
        n_params: h.n_elements(),
        expert_bytes: experts.map(|t| t.n_bytes).sum(),
        n_expert: get("expert_count").unwrap_or(0),
        n_expert_used: get("expert_used_count").unwrap_or(0),
    })
}

/// The memory bandwidths (GB/s, where the figure came from) a decode roofline can use: the
/// GPU's for a test whose layers are all offloaded, the host's for a test on the CPU. A
/// partly offloaded test has no single ceiling and gets no roofline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ceilings {
    /// Otherwise every test is a host test.
    pub gpu_build: bool,
    pub device: Option<(f64, String)>,
    pub host: Option<(f64, String)>,
}

impl Ceilings {
    /// The ceiling of a test with `n_gpu_layers` on a model of `n_layer` repeating layers.
    pub fn for_test(&self, n_gpu_layers: i32, n_layer: u64) -> Option<&(f64, String)> {
        let all = n_gpu_layers < 0 || n_gpu_layers as u64 >= n_layer;
        match (self.gpu_build, n_gpu_layers, all) {
            (false, _, _) | (true, 0, _) => self.host.as_ref(),
            (true, _, true) => self.device.as_ref(),
            (true, _, false) => None,
        }
    }
}

/// Per-run measurement context: the power source and the bandwidths the roofline uses.
pub struct Monitor {
    source: Option<Box<dyn PowerSource>>,
    pub ceilings: Ceilings,
    /// The host probe, when the roofline is the host's (picks DRAM or cache per test).
    pub host: Option<bandwidth::Bandwidth>,
}

pub struct Active {
    sampler: Option<Sampler>,
    rss: bool,
}

impl Monitor {
    pub fn new(source: Option<Box<dyn PowerSource>>, ceilings: Ceilings) -> Self {
        Monitor {
            source,
            ceilings,
            host: None,
        }
    }

    pub fn begin(&mut self) -> Active {
        Active {
            rss: memory::reset_peak_rss(),
            sampler: self.source.take().map(|s| Sampler::start(s, POWER_PERIOD)),
        }
    }

    /// Ends monitoring and works out the figures for a test that ran at `ts` tokens/s
    /// over `tokens` timed tokens; `placement` is where llama.cpp put the test's context
    /// (its KV buffer sizes beat the computed ones).
    pub fn end(
        &mut self,
        a: Active,
        p: &TestParams,
        shape: Option<&Shape>,
        placement: Option<&crate::engine::placement::Placement>,
        ts: Option<f64>,
        tokens: u64,
    ) -> Resources {
        let energy = a.sampler.and_then(|s| {
            let (e, source) = s.finish();
            self.source = source;
            e
        });
        let (kv, kv_source, kv_per_position) = kv::kv_cache(p, shape, placement);
        let (mut roof, mut pre) = (None, None);
        if let (Some(s), Some(ts), Some(kvp)) = (shape, ts, kv_per_position) {
            if p.n_gen > 0 && p.n_prompt == 0 {
                let ceiling = self.ceilings.for_test(p.n_gpu_layers, s.n_layer);
                let on_host = ceiling.is_some() && ceiling == self.ceilings.host.as_ref();
                roof = ceiling.map(|(gbs, src)| {
                    let r = roofline::decode(s, p.n_depth, p.n_gen, kvp, ts, *gbs, src);
                    match self.host.as_ref().filter(|_| on_host) {
                        // On the host, the memory level that holds the working set sets the ceiling.
                        Some(h) => {
                            let (gbs, src) = host_ceiling(h, r.bytes_per_token);
                            roofline::decode(s, p.n_depth, p.n_gen, kvp, ts, gbs, &src)
                        }
                        None => r,
                    }
                });
            } else if p.n_prompt > 0 && p.n_gen == 0 {
                pre = Some(roofline::prefill(s, ts));
            }
        }
        Resources {
            peak_rss_bytes: a.rss.then(memory::peak_rss_bytes).flatten(),
            kv_cache_bytes: kv,
            kv_cache_source: kv_source,
            joules_per_token: energy
                .as_ref()
                .filter(|_| tokens > 0)
                .map(|e| e.joules / tokens as f64),
            energy,
            roofline: roof,
            prefill: pre,
        }
    }
}

/// One line to warn with when a test asks for more threads than the machine has physical
/// cores; None otherwise (or when the core count is unknown).
pub fn oversubscription_warning(n_threads: u32, physical_cores: u32) -> Option<String> {
    (physical_cores != 0 && n_threads > physical_cores).then(|| {
        format!(
            "warning: n_threads {n_threads} exceeds the {physical_cores} physical cores: threads \
             share cores (hyper-threads or time slices) and llama.cpp's threads wait for the \
             slowest at every step, so t/s usually drops and varies; llama-bench's default is \
             {physical_cores}"
        )
    })
}

/// The ceiling for a working set of `bytes`: the cache-resident read rate when the working
/// set fits comfortably (three quarters) in the last-level cache, else DRAM.
pub fn host_ceiling(b: &bandwidth::Bandwidth, bytes: f64) -> (f64, String) {
    match (b.llc_bytes, b.llc_read_gbs) {
        (Some(llc), Some(gbs)) if bytes <= 0.75 * llc as f64 => (
            gbs,
            format!(
                "probe: cache-resident read ({} MiB LLC holds the working set)",
                llc >> 20
            ),
        ),
        _ => (
            b.read_gbs,
            format!("probe: host DRAM read, {} threads", b.threads),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ceilings(gpu_build: bool) -> Ceilings {
        Ceilings {
            gpu_build,
            device: Some((4800.0, "table: H200".into())),
            host: Some((20.0, "probe: host DRAM read, 2 threads".into())),
        }
    }

    #[test]
    fn a_test_gets_the_ceiling_of_the_memory_its_layers_are_in() {
        let g = ceilings(true);
        assert_eq!(g.for_test(0, 30).unwrap().0, 20.0, "ngl 0: host");
        assert_eq!(g.for_test(99, 30).unwrap().0, 4800.0, "all layers: GPU");
        assert_eq!(
            g.for_test(30, 30).unwrap().0,
            4800.0,
            "every repeating layer"
        );
        assert_eq!(g.for_test(-1, 30).unwrap().0, 4800.0, "-1: all");
        assert_eq!(
            g.for_test(10, 30),
            None,
            "partial offload: no single ceiling"
        );
        let c = ceilings(false);
        assert_eq!(
            c.for_test(99, 30).unwrap().0,
            20.0,
            "a CPU build runs on the host"
        );
        let unknown = Ceilings {
            device: None,
            ..ceilings(true)
        };
        assert_eq!(
            unknown.for_test(99, 30),
            None,
            "unknown GPU: none, not the host's"
        );
    }

    #[test]
    fn decode_rooflines_follow_each_tests_placement() {
        let shape = roofline::Shape {
            n_layer: 30,
            n_embd_kv: 192,
            weight_bytes: 96_000_000,
            input_embedding_bytes: 0,
            tied_embeddings: true,
            n_vocab: 49152,
            n_params: 135_000_000,
            expert_bytes: 0,
            n_expert: 0,
            n_expert_used: 0,
        };
        let mut m = Monitor::new(None, ceilings(true));
        let mut p =
            crate::plan::expand_axes(&crate::config::Axes::llama_bench_defaults(2))[0].clone();
        (p.n_prompt, p.n_gen) = (0, 128);
        let mut roof = |ngl: i32| {
            p.n_gpu_layers = ngl;
            let a = m.begin();
            m.end(a, &p, Some(&shape), None, Some(100.0), 128).roofline
        };
        let gpu = roof(99).expect("full offload");
        let host = roof(0).expect("on the host");
        assert!(gpu.bandwidth_source.contains("H200"), "{gpu:?}");
        assert!(host.bandwidth_source.contains("host"), "{host:?}");
        assert!(gpu.roofline_ts > 100.0 * host.roofline_ts);
        assert_eq!(roof(10), None);
    }

    #[test]
    fn more_threads_than_physical_cores_get_a_one_line_warning() {
        let w = oversubscription_warning(8, 4).expect("8 threads on 4 cores");
        assert_eq!(w.lines().count(), 1, "{w}");
        assert!(
            w.contains("n_threads 8") && w.contains("4 physical cores"),
            "{w}"
        );
        assert!(w.contains("t/s usually drops"), "says what it costs: {w}");
        assert_eq!(oversubscription_warning(4, 4), None);
        assert_eq!(oversubscription_warning(1, 4), None);
        assert_eq!(oversubscription_warning(5, 0), None, "unknown core count");
    }
}
