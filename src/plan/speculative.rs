//! Expands the `[speculative]` table into tests: per target model, one test per
//! drafter setting (type × draft × K × draft_min × p_min × the draft's n_gpu_layers). Pure.

use std::path::PathBuf;

use super::{PlanModel, PlannedTest, TestKind, TestParams};
use crate::config::speculative::{DraftRef, Drafter, SpeculativeConfig};
use crate::config::{Axes, Config};

#[derive(Debug, Clone, PartialEq)]
pub enum Draft {
    /// A model of the plan (a ladder variant, built on first use).
    Model(usize),
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpecTest {
    pub drafter: Drafter,
    pub draft: Option<Draft>,
    /// How ids and records name the draft (its type label or file name).
    pub draft_label: Option<String>,
    pub n_max: u32,
    pub n_min: u32,
    pub p_min: f64,
    pub draft_n_gpu_layers: i32,
    pub n_gen: u32,
    pub n_prompts: u32,
    pub rounds: u32,
    pub seed: u64,
    /// The number of the test's first round: which side goes first alternates by round
    /// number, so a tune that runs one round at a time still alternates. Not in
    /// the identity: it orders the work, it does not change it.
    pub first_round: u32,
}

impl SpecTest {
    /// Plain decoding only, no drafter (`drafter = "none"`): a tune's candidate without one.
    pub fn is_plain(&self) -> bool {
        self.drafter == Drafter::Plain
    }

    /// What the identity hashes beside the model and the prompts.
    fn line(&self, draft_key: &str) -> String {
        format!(
            "speculative\n{} draft {:?} {} K {} min {} p_min {} dngl {}\nn_gen {} prompts {} \
             rounds {} seed {}",
            self.drafter,
            self.draft_label,
            draft_key,
            self.n_max,
            self.n_min,
            self.p_min,
            self.draft_n_gpu_layers,
            self.n_gen,
            self.n_prompts,
            self.rounds,
            self.seed
        )
    }
}

/// The axes of model `mi` of the plan; None for a model with no file (served only).
fn axes_of<'a>(config: &'a Config, mi: usize, m: &PlanModel) -> Option<&'a Axes> {
    match m.source.ladder() {
        None => config
            .models
            .get(mi)
            .filter(|c| c.path.is_some())
            .map(|c| &c.axes),
        Some(l) => Some(&config.ladders[l].axes),
    }
}

fn is_target(sc: &SpeculativeConfig, m: &PlanModel) -> bool {
    sc.targets.is_empty() || sc.targets.iter().any(|t| *t == m.name || *t == m.label)
}

/// The model a self-draft names: the variant of `quant` in the target's own ladder, or of
/// the first ladder that builds it.
fn variant_of(models: &[PlanModel], target: &PlanModel, quant: &str) -> Option<usize> {
    let is = |m: &PlanModel| m.label == quant && m.source.ladder().is_some();
    models
        .iter()
        .position(|m| is(m) && m.source.ladder() == target.source.ladder())
        .or_else(|| models.iter().position(is))
}

/// The draft `d` names for target `m`, and what identities hash for it; None for a self-draft
/// no ladder builds (refused with the configuration).
fn draft_of(
    models: &[PlanModel],
    m: &PlanModel,
    d: Option<&DraftRef>,
) -> Option<(Option<Draft>, String)> {
    Some(match d {
        None => (None, String::new()),
        Some(DraftRef::Variant(q)) => {
            let i = variant_of(models, m, q)?;
            (Some(Draft::Model(i)), models[i].key.clone())
        }
        Some(DraftRef::File(p)) => (Some(Draft::File(p.clone())), p.display().to_string()),
    })
}

/// The speculative tests of every target in `models` (the plan's, in order);
/// `dataset_sha256` names the prompts in identities.
pub fn expand(
    config: &Config,
    models: &[PlanModel],
    dataset_sha256: Option<&str>,
) -> Vec<PlannedTest> {
    let Some(sc) = &config.speculative else {
        return Vec::new();
    };
    let seed = sc.seed.unwrap_or(config.settings.seed);
    let mut out = Vec::new();
    for (mi, m) in models.iter().enumerate() {
        let Some(axes) = axes_of(config, mi, m).filter(|_| is_target(sc, m)) else {
            continue;
        };
        let params = super::first_of_axes(axes, 0, sc.n_gen);
        for &drafter in &sc.drafters {
            let drafts: Vec<Option<&DraftRef>> = match drafter.needs_draft() {
                true => sc.draft.iter().map(Some).collect(),
                false => vec![None],
            };
            for d in drafts {
                let Some((draft, draft_key)) = draft_of(models, m, d) else {
                    continue;
                };
                let dngls: &[i32] = match draft {
                    Some(_) => &sc.draft_n_gpu_layers,
                    None => &[-1],
                };
                let mut push =
                    |s| out.push(planned(mi, m, s, sc, &params, &draft_key, dataset_sha256));
                for &n_max in &sc.draft_max {
                    for &n_min in &sc.draft_min {
                        for &p_min in &sc.p_min {
                            for &dngl in dngls {
                                push(SpecTest {
                                    drafter,
                                    draft: draft.clone(),
                                    draft_label: d.map(DraftRef::label),
                                    n_max,
                                    n_min,
                                    p_min,
                                    draft_n_gpu_layers: dngl,
                                    n_gen: sc.n_gen,
                                    n_prompts: sc.n_prompts,
                                    rounds: sc.rounds,
                                    seed,
                                    first_round: 0,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn planned(
    mi: usize,
    m: &PlanModel,
    s: SpecTest,
    sc: &SpeculativeConfig,
    params: &TestParams,
    draft_key: &str,
    dataset_sha256: Option<&str>,
) -> PlannedTest {
    // The settings the table varies are in the id.
    let varied = [
        sc.draft_min.len(),
        sc.p_min.len(),
        sc.draft_n_gpu_layers.len(),
    ]
    .map(|n| n > 1);
    let id = format!("{}/{}/{}", m.name, m.label, setting_id(&s, '/', varied));
    let (line, dataset) = (s.line(draft_key), dataset_sha256.unwrap_or(""));
    let spec = format!("\n{line}\ndataset {dataset}");
    let identity = super::identity(&m.key, params, &spec);
    PlannedTest {
        model: mi,
        id,
        params: params.clone(),
        kind: TestKind::Spec,
        identity,
        detail: super::Detail::Speculative(Box::new(s)),
    }
}

/// The record's `test` name: `spec draft-simple Q4_0 K4 tg128`.
pub fn name(s: &SpecTest) -> String {
    let draft: String = s.draft_label.iter().map(|l| format!(" {l}")).collect();
    if s.is_plain() {
        return format!("spec plain tg{}", s.n_gen);
    }
    format!("spec {}{draft} K{} tg{}", s.drafter, s.n_max, s.n_gen)
}

/// How a tune candidate's id names its decoding: "spec-plain", or the drafter
/// setting as a `[speculative]` test's id names it ("spec-draft-simple-Q4_0-K4", with
/// draft_min, p_min and the draft's n_gpu_layers when not llama.cpp's defaults).
pub fn tune_label(s: &SpecTest) -> String {
    if s.is_plain() {
        return "spec-plain".into();
    }
    let shown = [s.n_min > 0, s.p_min > 0.0, s.draft_n_gpu_layers != -1];
    setting_id(s, '-', shown)
}

/// "spec-draft-simple-Q4_0", then after `sep` K and those of draft_min, p_min and the
/// draft's n_gpu_layers that are `shown`.
fn setting_id(s: &SpecTest, sep: char, shown: [bool; 3]) -> String {
    let label: String = s.draft_label.iter().map(|l| format!("-{l}")).collect();
    let mut id = format!("spec-{}{label}", s.drafter);
    let dngl = shown[2] && s.draft.is_some();
    let parts = [
        (true, format!("K{}", s.n_max)),
        (shown[0], format!("min{}", s.n_min)),
        (shown[1], format!("p{}", s.p_min)),
        (dngl, format!("dngl{}", s.draft_n_gpu_layers)),
    ];
    for (_, p) in parts.iter().filter(|(show, _)| *show) {
        id.push(sep);
        id.push_str(p);
    }
    id
}
