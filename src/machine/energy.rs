//! Power and energy during a test: a background thread samples a power source (NVML on
//! NVIDIA machines, RAPL counters where readable, nothing otherwise), and the samples are
//! summarised into joules, joules per token, clocks, temperature and a throttling flag.

use std::ops::Add;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One reading, summed over the devices the source covers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Seconds since sampling started.
    pub t: f64,
    pub power_w: Option<f64>,
    /// A cumulative energy counter, joules, if the source has one (preferred over integrating).
    pub energy_j: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    pub temp_c: Option<f64>,
    pub memory_used: Option<u64>,
}

pub trait PowerSource: Send {
    fn name(&self) -> String;
    fn read(&mut self) -> Sample;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Energy {
    pub source: String,
    pub joules: f64,
    pub seconds: f64,
    pub avg_power_w: f64,
    pub max_temp_c: Option<f64>,
    pub min_sm_clock_mhz: Option<f64>,
    pub max_sm_clock_mhz: Option<f64>,
    /// The SM clock fell below 90% of its peak during the test.
    pub throttled: bool,
    pub peak_memory_used: Option<u64>,
    pub samples: usize,
}

/// Samples in time order; None with fewer than two.
pub fn summarize(source: &str, s: &[Sample]) -> Option<Energy> {
    let [first, .., last] = s else {
        return None;
    };
    let seconds = last.t - first.t;
    let counter = match (first.energy_j, last.energy_j) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    let joules = counter.or_else(|| {
        // Trapezoid rule over the power readings.
        let parts = s
            .windows(2)
            .filter_map(|w| Some((w[0].power_w? + w[1].power_w?) / 2.0 * (w[1].t - w[0].t)));
        parts.reduce(|a, b| a + b)
    })?;
    let fold = |f: fn(&Sample) -> Option<f64>, pick: fn(f64, f64) -> f64| {
        s.iter().filter_map(f).reduce(pick)
    };
    let min_clock = fold(|x| x.sm_clock_mhz, f64::min);
    let max_clock = fold(|x| x.sm_clock_mhz, f64::max);
    Some(Energy {
        source: source.to_string(),
        joules,
        seconds,
        avg_power_w: if seconds > 0.0 { joules / seconds } else { 0.0 },
        max_temp_c: fold(|x| x.temp_c, f64::max),
        min_sm_clock_mhz: min_clock,
        max_sm_clock_mhz: max_clock,
        throttled: matches!((min_clock, max_clock), (Some(lo), Some(hi)) if lo < 0.9 * hi),
        peak_memory_used: s.iter().filter_map(|x| x.memory_used).max(),
        samples: s.len(),
    })
}

/// Samples a source every `period` on a thread until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    handle: Option<std::thread::JoinHandle<Box<dyn PowerSource>>>,
    name: String,
}

impl Sampler {
    pub fn start(mut source: Box<dyn PowerSource>, period: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let name = source.name();
        let (s2, v2) = (stop.clone(), samples.clone());
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            loop {
                let mut x = source.read();
                x.t = t0.elapsed().as_secs_f64();
                v2.lock().map(|mut v| v.push(x)).ok();
                if s2.load(Ordering::SeqCst) {
                    break; // the last reading closes the interval
                }
                std::thread::sleep(period);
            }
            source
        });
        Sampler {
            stop,
            samples,
            handle: Some(handle),
            name,
        }
    }

    /// Also hands the source back for the next test.
    pub fn finish(mut self) -> (Option<Energy>, Option<Box<dyn PowerSource>>) {
        self.stop.store(true, Ordering::SeqCst);
        let source = self.handle.take().and_then(|h| h.join().ok());
        let samples = self.samples.lock().map(|v| v.clone()).unwrap_or_default();
        (summarize(&self.name, &samples), source)
    }
}

/// NVML over all GPUs (power and energy summed, clocks and temperature of the hottest).
pub struct NvmlSource(pub super::nvml::Nvml);

impl PowerSource for NvmlSource {
    fn name(&self) -> String {
        "nvml".into()
    }

    fn read(&mut self) -> Sample {
        let mut s = Sample::default();
        for i in 0..self.0.device_count() {
            let r = self.0.read(i);
            s.power_w = either(s.power_w, r.power_w, f64::add);
            s.energy_j = either(s.energy_j, r.energy_j, f64::add);
            s.sm_clock_mhz = r.sm_clock_mhz.or(s.sm_clock_mhz);
            s.temp_c = either(s.temp_c, r.temp_c, f64::max);
            s.memory_used = either(s.memory_used, r.memory_used, u64::add);
        }
        s
    }
}

/// `f` of both when both are there, else whichever is.
pub(crate) fn either<T>(a: Option<T>, b: Option<T>, f: impl FnOnce(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, y) => x.or(y),
    }
}

/// Intel/AMD RAPL package energy counters under /sys/class/powercap (often root-only).
pub struct RaplSource {
    files: Vec<std::path::PathBuf>,
}

impl RaplSource {
    pub fn open() -> Option<RaplSource> {
        let files: Vec<_> = std::fs::read_dir("/sys/class/powercap")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().matches(':').count() == 1)
            })
            .map(|p| p.join("energy_uj"))
            .filter(|f| std::fs::read_to_string(f).is_ok())
            .collect();
        (!files.is_empty()).then_some(RaplSource { files })
    }
}

impl PowerSource for RaplSource {
    fn name(&self) -> String {
        "rapl".into()
    }

    fn read(&mut self) -> Sample {
        // Counters wrap at max_energy_range_uj; a wrap during a test shows as no counter.
        let total: Option<f64> = (self.files.iter())
            .map(|f| std::fs::read_to_string(f).ok()?.trim().parse::<f64>().ok())
            .sum();
        Sample {
            energy_j: total.map(|uj| uj / 1e6),
            ..Default::default()
        }
    }
}

/// The best source on this machine: NVML, then RAPL, else none.
pub fn detect() -> Option<Box<dyn PowerSource>> {
    if let Some(n) = super::nvml::Nvml::load().filter(|n| n.device_count() > 0) {
        return Some(Box::new(NvmlSource(n)));
    }
    RaplSource::open().map(|r| Box::new(r) as Box<dyn PowerSource>)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake GPU: constant power, a clock that drops halfway, a counter in step.
    struct Fake {
        n: u32,
        watts: f64,
        counter: bool,
    }

    impl PowerSource for Fake {
        fn name(&self) -> String {
            "fake".into()
        }
        fn read(&mut self) -> Sample {
            self.n += 1;
            Sample {
                power_w: Some(self.watts),
                energy_j: self.counter.then_some(1000.0 + f64::from(self.n)),
                sm_clock_mhz: Some(if self.n > 3 { 1200.0 } else { 1980.0 }),
                temp_c: Some(60.0 + f64::from(self.n)),
                ..Default::default()
            }
        }
    }

    fn samples(watts: f64, n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| Sample {
                t: i as f64 * 0.1,
                power_w: Some(watts),
                sm_clock_mhz: Some(1980.0),
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn constant_power_integrates_to_power_times_time() {
        let e = summarize("fake", &samples(300.0, 11)).unwrap();
        assert!((e.joules - 300.0).abs() < 1e-9, "{e:?}");
        assert!((e.avg_power_w - 300.0).abs() < 1e-9);
        assert!(!e.throttled);
    }

    #[test]
    fn an_energy_counter_is_preferred_over_integration() {
        let mut s = samples(300.0, 11);
        s[0].energy_j = Some(5000.0);
        s[10].energy_j = Some(5250.0);
        assert_eq!(summarize("fake", &s).unwrap().joules, 250.0);
    }

    #[test]
    fn a_clock_drop_is_throttling_and_nothing_is_summarised_from_nothing() {
        let mut s = samples(100.0, 5);
        s[3].sm_clock_mhz = Some(1500.0);
        assert!(summarize("fake", &s).unwrap().throttled);
        assert!(summarize("fake", &s[..1]).is_none());
        let none: Vec<Sample> = (0..3)
            .map(|i| Sample {
                t: i as f64,
                ..Default::default()
            })
            .collect();
        assert!(
            summarize("fake", &none).is_none(),
            "no power and no counter: no figure"
        );
    }

    #[test]
    fn the_sampler_thread_reads_the_source_until_finished() {
        let s = Sampler::start(
            Box::new(Fake {
                n: 0,
                watts: 200.0,
                counter: true,
            }),
            Duration::from_millis(5),
        );
        std::thread::sleep(Duration::from_millis(60));
        let (e, source) = s.finish();
        let e = e.unwrap();
        assert!(source.is_some());
        assert!(e.samples >= 4, "{e:?}");
        assert_eq!(
            e.joules,
            (e.samples - 1) as f64,
            "counter delta: one joule per read"
        );
        assert!(e.throttled, "the fake clock drops after three reads");
        assert!(e.max_temp_c.unwrap() > 60.0);
    }
}
