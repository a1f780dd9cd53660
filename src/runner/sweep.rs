//! The measuring loop of a run: model loads by load key, batches that share a context, one
//! test at a time, each in the result file's journal before the next starts. The work per
//! test does not grow with the sweep: tests are found by id in an index (`record::journal`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::prepare::Prepared;
use super::{RunOptions, RunOutcome, fault_injection, merge_models, new_test_record};
use crate::engine::{Engine, LoadParams, Model};
use crate::kinds::serving::Group;
use crate::kinds::{self, KindError, NoModel};
use crate::ladder::Reporter;
use crate::machine::Monitor;
use crate::machine::roofline::Shape;
use crate::output::progress::{Eta, Progress, Work, work_left};
use crate::plan::serving::Transport;
use crate::plan::{Detail, ModelSource, PlannedTest};
use crate::record::journal::Journal;
use crate::record::{ModelRecord, RecordError, RunRecord, Status, TestRecord};
use crate::util::system;

pub(super) struct Sweep<'a> {
    engine: &'a dyn Engine,
    opts: &'a RunOptions,
    prep: &'a Prepared,
    models: Vec<ModelRecord>,
    pub(super) record: RunRecord,
    /// Where each test of `record.tests` is, by id.
    pub(super) index: std::collections::HashMap<String, usize>,
    path: Option<PathBuf>,
    journal: Option<Journal>,
    monitor: Monitor,
    quality: kinds::quality::Cache,
    shapes: Vec<Option<Option<Shape>>>,
    rep: Reporter,
    /// Tests of the run's part done before this process started, and the part's size:
    /// the progress counter continues across resumes and `--isolate` children.
    numbering: (usize, usize),
    /// The time the tests done took, and the work left at each test of the list being run.
    eta: Eta,
    left: Vec<[Work; 2]>,
    started: Instant,
    /// Tests measured by this process so far, over every round: the progress counter.
    measured: usize,
    /// Tests whose model did not load: what a tune's bisection says of a failed probe.
    pub(super) load_failed: std::collections::HashSet<String>,
}

impl<'a> Sweep<'a> {
    pub(super) fn new(
        engine: &'a dyn Engine,
        opts: &'a RunOptions,
        prep: &'a Prepared,
        record: RunRecord,
        path: Option<PathBuf>,
        numbering: (usize, usize),
    ) -> Result<Sweep<'a>, RecordError> {
        // Each test's context allocates and frees large blocks: without this, the heap
        // fragments and a sweep's memory grows with its length (see the function).
        crate::machine::memory::keep_large_allocations_apart();
        let power = opts.power.then(crate::machine::energy::detect).flatten();
        let mut monitor = Monitor::new(power, opts.bandwidth.clone());
        monitor.host = record.run.host_bandwidth.clone();
        let journal = (path.as_ref())
            .map(|p| Journal::start(p, &record))
            .transpose()?;
        let index = (record.tests.iter().enumerate())
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        Ok(Sweep {
            engine,
            opts,
            prep,
            models: prep.models.clone(),
            record,
            index,
            path,
            journal,
            monitor,
            quality: Default::default(),
            shapes: vec![None; prep.models.len()],
            rep: Reporter::new(opts.quiet),
            numbering,
            eta: Eta::default(),
            left: Vec::new(),
            started: Instant::now(),
            measured: 0,
            load_failed: Default::default(),
        })
    }

    /// Runs `todo` in order; true when a stop request ended it early.
    pub(super) fn measure_all(
        &mut self,
        todo: &[PlannedTest],
        progress: &mut dyn Progress,
    ) -> Result<bool, RecordError> {
        self.left = work_left(todo.iter().map(|t| &t.params));
        let mut i = 0;
        while i < todo.len() {
            let first = &todo[i];
            let unit = todo[i..]
                .iter()
                .take_while(|t| t.model == first.model && t.load_key() == first.load_key())
                .count();
            self.ensure_built(first.model);
            // Free the previous model before loading the next (`loaded` drops per unit).
            let loaded = first.load_key().map(|_| self.load(first));
            let model: Result<&dyn Model, NoModel> = match &loaded {
                Some(Ok(m)) => Ok(m.as_ref()),
                Some(Err(e)) => {
                    let ids = todo[i..i + unit].iter().map(|t| t.id.clone());
                    self.load_failed.extend(ids);
                    Err(e.clone())
                }
                None => Err(NoModel::NotLoaded),
            };
            let mut j = i;
            while j < i + unit {
                let key = kinds::batch_key(&todo[j]);
                let n = todo[j..i + unit]
                    .iter()
                    .take_while(|t| key.is_some() && kinds::batch_key(t) == key)
                    .count()
                    .max(1);
                let (engine, opts, prep) = (self.engine, self.opts, self.prep);
                let (config, prompts) = (&opts.config, prep.prompts.as_ref());
                let results = self.path.as_deref();
                let mut shared =
                    kinds::serving::open(engine, config, prompts, model.clone(), &todo[j], results);
                for k in j..j + n {
                    if self.stop_requested() {
                        progress.note(&format!(
                            "interrupted: {} tests not run; continue with --resume",
                            todo.len() - k
                        ));
                        return Ok(true);
                    }
                    self.one(todo, k, model.clone(), &mut shared, progress)?;
                }
                j += n;
            }
            i += unit;
        }
        Ok(false)
    }

    fn stop_requested(&self) -> bool {
        self.opts
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Measures `todo[k]`, records it and writes the file.
    fn one(
        &mut self,
        todo: &[PlannedTest],
        k: usize,
        model: Result<&dyn Model, NoModel>,
        shared: &mut Option<Group>,
        progress: &mut dyn Progress,
    ) -> Result<(), RecordError> {
        let t = &todo[k];
        let (done, total) = self.numbering;
        progress.test_started(done + self.measured, total, &t.id);
        self.measured += 1;
        fault_injection(&t.id);
        let test_start = Instant::now();
        let mut rec = new_test_record(t, &self.models[t.model], &self.record.run);
        let line = self.measure(t, model, shared, &mut rec, progress);
        self.eta.done(&t.params, test_start.elapsed());
        let ci_target = self.opts.config.settings.ci_target;
        // A later round of a test joins its record; the line then shows the interval
        // between rounds.
        let (i, line) = match self.index.get(&rec.id) {
            Some(&i) => {
                let earlier = &mut self.record.tests[i];
                earlier.add_round(rec, ci_target);
                (i, round_line(earlier).unwrap_or(line))
            }
            None => {
                let i = self.record.tests.len();
                self.index.insert(rec.id.clone(), i);
                self.record.tests.push(rec);
                (i, line)
            }
        };
        progress.test_finished(
            &line,
            self.started.elapsed(),
            self.eta.left(&self.left[k + 1]),
        );
        let linked = link_served(&mut self.record.tests, &self.index, &todo[k]);
        // Only this test's model can have changed (`finish` merges them all again).
        let this = std::slice::from_ref(&self.record.tests[i]);
        merge_models(
            &mut self.record.models,
            &self.models[t.model..=t.model],
            this,
        );
        // On disk before the next test starts.
        if let Some(j) = &mut self.journal {
            j.test_done(&self.record, &self.record.tests[i])?;
            if let Some(l) = linked {
                j.test_changed(&self.record.tests[l])?;
            }
        }
        Ok(())
    }

    fn measure(
        &mut self,
        t: &PlannedTest,
        model: Result<&dyn Model, NoModel>,
        shared: &mut Option<Group>,
        rec: &mut TestRecord,
        progress: &mut dyn Progress,
    ) -> String {
        let (engine, opts, prep) = (self.engine, self.opts, self.prep);
        let config = &opts.config;
        match (&t.detail, model, shared) {
            (Detail::Serving(s), _, Some(g)) => {
                let prompts = prep.prompts.as_ref();
                kinds::serving::run(engine, config, prompts, g, s, rec, progress)
            }
            (Detail::Quality { ladder }, _, _) => {
                let at = (*ladder, &prep.plan.models[t.model].source);
                let mrec = &mut self.models[t.model];
                let (bases, cache) = (&prep.bases, &mut self.quality);
                kinds::quality::run(config, bases, cache, at, mrec, rec, &self.rep)
            }
            (Detail::Bench, Ok(m), _) => {
                let b = kinds::bench::Bench {
                    engine,
                    model: m,
                    settings: config.settings,
                    shape: self.shape(t.model),
                    mrec: &self.models[t.model],
                    text: prep.text.as_ref(),
                };
                kinds::bench::run(b, &mut self.monitor, rec, progress);
                match (rec.status, rec.avg_ts, rec.stddev_ts) {
                    (Status::Ok, Some(a), Some(s)) => format!("{a:.2} ± {s:.2} t/s"),
                    _ => failed_line(rec),
                }
            }
            (Detail::Speculative(s), Ok(m), _) => self.speculative(t, s, m, rec, progress),
            (_, Err(e), _) => failed(rec, e.to_string()),
            (Detail::Serving(_), Ok(_), _) => {
                failed(rec, "the serving group's context was not made")
            }
        }
    }

    /// A speculative test, refused when its draft does not fit the target.
    fn speculative(
        &mut self,
        t: &PlannedTest,
        s: &crate::plan::speculative::SpecTest,
        m: &dyn Model,
        rec: &mut TestRecord,
        progress: &mut dyn Progress,
    ) -> String {
        let header = |p: &Path| crate::gguf::reader::read_header(p).ok();
        let mrec = &self.models[t.model];
        let th = header(Path::new(&mrec.path));
        let target = kinds::speculative::Target {
            synthetic: mrec.provenance.as_ref().is_some_and(|p| p.synthetic),
            mtp_bytes: th.as_ref().map_or(0, kinds::speculative::mtp_bytes),
        };
        let draft = self.draft_file(s).and_then(|d| {
            let dh = d.as_ref().and_then(|d| header(&d.path));
            let why = (th.as_ref())
                .and_then(|th| kinds::speculative::refusal(s.drafter, th, dh.as_ref()));
            why.map_or(Ok(d), |why| Err(KindError::Refused(why)))
        });
        let prompts = self.prep.spec_prompts.as_ref();
        match draft {
            Ok(d) => kinds::speculative::run(m, prompts, s, d, target, rec, progress),
            Err(e) => failed(rec, e.to_string()),
        }
    }

    /// The draft model of a speculative test (a variant built now if missing), if any.
    fn draft_file(
        &mut self,
        s: &crate::plan::speculative::SpecTest,
    ) -> Result<Option<kinds::speculative::DraftFile>, KindError> {
        use crate::plan::speculative::Draft;
        match &s.draft {
            None => Ok(None),
            Some(Draft::Model(mi)) => {
                self.ensure_built(*mi);
                let m = &self.models[*mi];
                if let Some(e) = &m.error {
                    return Err(KindError::Refused(format!("the draft {}: {e}", m.name)));
                }
                Ok(Some(kinds::speculative::DraftFile {
                    path: PathBuf::from(&m.path),
                    sha256: Some(m.sha256.clone()).filter(|h| !h.is_empty()),
                    synthetic: m.provenance.as_ref().is_some_and(|p| p.synthetic),
                }))
            }
            Some(Draft::File(p)) => {
                // Through the GGUF validator first, as every model llama.cpp loads.
                let h = crate::gguf::reader::read_header(p)
                    .map_err(|e| KindError::Refused(format!("the draft {}: {e}", p.display())))?;
                Ok(Some(kinds::speculative::DraftFile {
                    path: p.clone(),
                    // What matches it to a served test's draft (report::speculative::served).
                    sha256: crate::util::system::sha256_file(p).ok(),
                    // A `tpsbench synth` draft (an Eagle3 preset) says so in its header:
                    // its drafts are noise, which the record must say.
                    synthetic: crate::ladder::cache::is_synthetic(&h),
                }))
            }
        }
    }

    fn ensure_built(&mut self, mi: usize) {
        let (opts, prep) = (self.opts, self.prep);
        super::prepare::ensure_variant(&opts.config, prep, &mut self.models, mi, &self.rep);
    }

    fn load(&mut self, t: &PlannedTest) -> Result<Box<dyn Model + 'a>, NoModel> {
        let engine = self.engine;
        let mrec = &mut self.models[t.model];
        if let Some(e) = &mrec.error {
            return Err(NoModel::Recorded(e.clone()));
        }
        let path = match &self.prep.plan.models[t.model].source {
            ModelSource::File(p) => p.clone(),
            ModelSource::Variant { .. } | ModelSource::LadderFile { .. } => {
                PathBuf::from(&mrec.path)
            }
        };
        let m = engine
            .load(&path, &LoadParams::of_test(t))
            .map_err(NoModel::Load)?;
        let mi = m.info();
        mrec.model_type = Some(mi.description.clone());
        mrec.model_size = Some(mi.size);
        mrec.model_n_params = Some(mi.n_params);
        if self.prep.plan.models[t.model].source.ladder().is_some() && mi.n_params > 0 {
            mrec.bits_per_weight = Some(mi.size as f64 * 8.0 / mi.n_params as f64);
        }
        Ok(m)
    }

    /// The model's shape for rooflines, read once from its header.
    fn shape(&mut self, mi: usize) -> Option<Shape> {
        let header = || crate::gguf::reader::read_header(Path::new(&self.models[mi].path));
        *self.shapes[mi]
            .get_or_insert_with(|| header().ok().and_then(|h| crate::machine::shape_of(&h)))
    }

    pub(super) fn finish(mut self, interrupted: bool) -> Result<RunOutcome, RecordError> {
        merge_models(&mut self.record.models, &self.models, &self.record.tests);
        if !interrupted {
            self.record.run.finished_at = Some(system::now_rfc3339());
        }
        if let Some(j) = self.journal.take() {
            j.finish(&self.record)?;
        }
        Ok(RunOutcome::new(self.record, self.path, interrupted))
    }
}

/// When `t` and its twin (served and in process, as the plan pairs them) are both measured,
/// the ratios into the served one's record; returns where it is.
fn link_served(
    tests: &mut [TestRecord],
    index: &std::collections::HashMap<String, usize>,
    t: &PlannedTest,
) -> Option<usize> {
    let Detail::Serving(s) = &t.detail else {
        return None;
    };
    let twin = s.twin.as_ref()?;
    let (served, in_process) = match s.transport {
        Transport::Http => (&t.id, twin),
        Transport::InProcess => (twin, &t.id),
    };
    // Goodput tests end at rates of their own: their figures do not pair.
    let ok = |t: &TestRecord| {
        t.status == Status::Ok
            && t.serving
                .as_ref()
                .is_some_and(|s| s.mode != crate::config::serving::Mode::Goodput)
    };
    let (&b, &s) = (index.get(in_process)?, index.get(served)?);
    if !ok(&tests[b]) || !ok(&tests[s]) {
        return None;
    }
    let base = tests[b].serving.clone().expect("ok() checked");
    let t = tests[s].serving.as_mut().expect("ok() checked");
    t.vs_in_process = Some(crate::serving::ratio::vs_in_process(t, &base, in_process));
    Some(s)
}

/// "701.3 t/s, 95% between 3 rounds [690.1, 712.8]" after a later round.
fn round_line(rec: &TestRecord) -> Option<String> {
    if rec.status != Status::Ok {
        return Some(failed_line(rec));
    }
    let median = rec.median_ts?;
    let ci = rec.stats.as_ref()?.interval?;
    Some(format!(
        "{median:.2} t/s (median), {} [{:.2}, {:.2}]",
        ci.label(),
        ci.lo,
        ci.hi
    ))
}

/// Fails `rec` with `why`; its line.
fn failed(rec: &mut TestRecord, why: impl Into<String>) -> String {
    rec.fail(why);
    failed_line(rec)
}

fn failed_line(rec: &TestRecord) -> String {
    format!("FAILED: {}", rec.error.as_deref().unwrap_or(""))
}
