//! A candidate's model file, and its load time, cold and warm, per model file and
//! model-level settings (`load_mode` among them): cold after
//! `posix_fadvise(POSIX_FADV_DONTNEED)` drops the file's clean pages (the race holds no
//! model then), warm loaded again at once. The figure is the median of three, with the range
//! beside it; `max_load_seconds` limits the cold median.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engine::{Engine, LoadParams};
use crate::plan::{ModelSource, PlannedTest};
use crate::record::tune::LoadTime;
use crate::runner::RunOptions;
use crate::runner::prepare::Prepared;

/// What one load loads: the model and its model-level settings (`PlannedTest::load_key`).
pub(super) type LoadKey = Option<(usize, Vec<crate::config::knobs::KnobValue>, bool)>;

/// Loads of each kind per model: enough for a median and a range, few enough for big files.
const LOADS: usize = 3;

/// Drops the file's pages from the page cache (what a fresh boot would find). False where
/// the file cannot be opened or the kernel refuses.
fn evict(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    // Dirty pages are not dropped: a file written moments ago (a variant just built) is
    // synced first.
    let _ = f.sync_all();
    // SAFETY: a valid open descriptor; offset 0 and length 0 cover the whole file.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
}

/// Seconds to load `path` with `params`, the model dropped at once; None if it fails.
fn timed_load(engine: &dyn Engine, path: &Path, params: &LoadParams) -> Option<f64> {
    let t0 = Instant::now();
    let _model = engine.load(path, params).ok()?;
    Some(t0.elapsed().as_secs_f64())
}

/// The load times of each distinct (model file, model-level settings) of `candidates`.
pub(super) fn measure(
    engine: &dyn Engine,
    opts: &RunOptions,
    prep: &Prepared,
    candidates: &[PlannedTest],
) -> Vec<(LoadKey, LoadTime)> {
    let mut out: Vec<(LoadKey, LoadTime)> = Vec::new();
    for c in candidates {
        let key = c.load_key();
        // A variant not built yet has no file of its own to load: not timed.
        if out.iter().any(|(k, _)| *k == key) || unbuilt(opts, prep, c) {
            continue;
        }
        let path = header_path(opts, prep, c);
        let params = LoadParams::of_test(c);
        let mut cold = Vec::new();
        let mut evicted = true;
        for _ in 0..LOADS {
            evicted &= evict(&path);
            cold.extend(timed_load(engine, &path, &params));
        }
        let warm: Vec<f64> = (0..LOADS)
            .filter_map(|_| timed_load(engine, &path, &params))
            .collect();
        let load_mode = crate::config::knobs::knob("load_mode")
            .map(|k| k.get(&c.params).show())
            .unwrap_or_default();
        out.push((
            key,
            LoadTime {
                model: prep.plan.models[c.model].name.clone(),
                placement: crate::config::knobs::placement_of(&c.params),
                load_mode,
                cold_s: cold,
                warm_s: warm,
                evicted,
            },
        ));
    }
    out
}

/// A ladder variant not built yet: its size is not known (the base's would mislead).
pub(super) fn unbuilt(opts: &RunOptions, prep: &Prepared, c: &PlannedTest) -> bool {
    matches!(
        prep.plan.models[c.model].source,
        ModelSource::Variant { .. }
    ) && header_path(opts, prep, c) != Path::new(&prep.models[c.model].path)
}

/// The GGUF file of a candidate's model: the file, or a ladder variant's (its base until
/// it is built: the same shape and context).
pub(super) fn header_path(opts: &RunOptions, prep: &Prepared, c: &PlannedTest) -> PathBuf {
    match prep.plan.models[c.model].source {
        ModelSource::File(ref p) => p.clone(),
        ModelSource::LadderFile { ladder, file } => {
            opts.config.ladders[ladder].files[file].path.clone()
        }
        ModelSource::Variant { ladder, .. } => {
            let built = Some(PathBuf::from(&prep.models[c.model].path)).filter(|b| b.is_file());
            built.unwrap_or_else(|| opts.config.ladders[ladder].base.clone())
        }
    }
}

/// The load times, each figure once.
pub(super) fn distinct(timed: Vec<(LoadKey, LoadTime)>) -> Vec<LoadTime> {
    crate::runner::unique(timed.into_iter().map(|(_, l)| l))
}
