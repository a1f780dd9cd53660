//! The answer first: for each model (its name without the quantization suffix, and its
//! architecture) on each machine, one table of its quantizations with what a choice needs
//! (decode and prefill rates with their 95% intervals, KLD with its error, the real bits
//! per weight, size, % of the bandwidth roofline) and the best trade-off as a set: the
//! Pareto front of decode speed against KLD with ties (`stats::ties`), so two variants whose
//! intervals overlap are named together. Above the table, one sentence: the fastest
//! quantization within a KLD budget, with the ones it ties with.

use std::collections::BTreeMap;

use super::charts::is_speed;
use super::load::{Board, Entry};
use super::svg::fmt_num;
use super::table::{Cell, RowMeta, Table, anchor};
use crate::plan::TestKind;
use crate::stats::analysis::{Covers, LevelInterval};
use crate::stats::pairs::Design;
use crate::stats::resolve::{Choice, Rule, resolve};
use crate::stats::ties::Figure;
use crate::util::units::format_size;

/// The default KLD budget (`--kld-budget`), in nats: the mean KL divergence from the
/// reference model's token distribution that a quantization may cost. 0.05 keeps the
/// K-quants of 4 bits and up on most models and leaves out the 2- and 3-bit ones.
pub const DEFAULT_KLD_BUDGET: f64 = 0.05;

/// A rate with its 95% interval and what the interval covers ("1 launch", "3 rounds").
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    pub figure: Figure,
    /// None when no interval could be computed (a single sample).
    pub covers: Option<String>,
}

/// One quantization of the model on the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The quantization as the file really is ("Q4_K_M (mostly Q5_0)").
    pub quant: String,
    /// The quantization's name alone, as the filters select it.
    pub quant_name: String,
    /// The backends the row was measured with (`tests[].backends`).
    pub backend: String,
    /// "synthetic", then the plausibility flags of its decode and prefill rows.
    pub badges: Vec<String>,
    /// Real bits per weight: models[].bits_per_weight, else size × 8 / parameters.
    pub bits_per_weight: Option<f64>,
    pub size: Option<u64>,
    pub decode: Option<Rate>,
    pub prefill: Option<Rate>,
    /// KLD mean and its standard error.
    pub kld: Option<(f64, Option<f64>)>,
    /// % of the decode bandwidth roofline, whether it is implausible (≥ 100%), and whether
    /// it is a lower bound estimated from the size (the file records no roofline).
    pub roofline: Option<(f64, bool, bool)>,
    /// On the Pareto front of decode speed against KLD (ties kept).
    pub front: bool,
    /// Other front rows whose decode rates tie with this one.
    pub tied_with: Vec<String>,
    /// Bytes of weights llama.cpp repacked for the CPU in the prefill test (`CPU_REPACK`),
    /// when its placement is recorded.
    pub repacked: Option<u64>,
    /// Prefill far below the table's (under 70% of the median) with no repacked weights,
    /// where faster rows have some: what explains the gap.
    pub unrepacked_gap: bool,
    /// The decode test's round medians (empty for one round), its result file and its
    /// run's auto budget: rows of one file with rounds are compared paired by round.
    pub decode_rounds: Vec<f64>,
    pub decode_file: Option<std::path::PathBuf>,
    pub auto_max_rounds: Option<u32>,
}

/// The answer for one model on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The model's name without its quantization suffix.
    pub model: String,
    pub architecture: Option<String>,
    /// Index into `Board::machines`.
    pub machine: usize,
    /// The machine's fingerprint: what the rows' permalinks are made from.
    pub machine_key: String,
    pub decode_test: Option<String>,
    pub prefill_test: Option<String>,
    /// Fastest decode first.
    pub rows: Vec<Row>,
    pub sentence: String,
    /// How the decode ties were judged, with the rounds behind them.
    pub rule: Rule,
    /// The comparisons the sentence and the front depend on that are not established.
    pub open: Vec<String>,
}

/// A model name without its quantization suffix: `SmolLM2-135M-Q4_K_M` → `SmolLM2-135M`.
pub fn base_name(model: &str, quant: &str) -> String {
    let (m, q) = (model.to_lowercase(), quant.to_lowercase());
    if !q.is_empty() && m.len() > q.len() + 1 && m.ends_with(&q) {
        let cut = model.len() - quant.len();
        if model[..cut].ends_with(['-', '.', '_']) {
            return model[..cut - 1].to_string();
        }
    }
    model.to_string()
}

fn covers_text(i: &LevelInterval) -> String {
    match i.covers {
        Covers::WithinLaunch => "1 launch".into(),
        Covers::BetweenRounds => format!("{} rounds", i.n),
    }
}

/// The rate of an entry with the interval its test records (`stats.interval`), or, in files
/// written before that field, the same interval computed from its repetitions.
pub fn rate(e: &Entry) -> Option<Rate> {
    let v = e.test.avg_ts?;
    let interval = e
        .test
        .stats
        .as_ref()
        .and_then(|s| s.interval)
        .or_else(|| LevelInterval::of(Covers::WithinLaunch, &e.test.samples_ts));
    Some(match interval {
        Some(i) => Rate {
            figure: Figure {
                value: v,
                lo: i.lo.min(v),
                hi: i.hi.max(v),
            },
            covers: Some(covers_text(&i)),
        },
        None => Rate {
            figure: Figure::point(v),
            covers: None,
        },
    })
}

/// The test name most models of the group ran of a kind at depth 0 (ties: the first by
/// name), so that all rows show the same test.
pub fn common_test(es: &[&Entry], kind: TestKind) -> Option<String> {
    let mut count: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in es
        .iter()
        .filter(|e| is_speed(e) && e.test.kind == kind && e.test.params.n_depth == 0)
    {
        let v = count.entry(e.test.test.as_str()).or_default();
        if !v.contains(&e.test.model.as_str()) {
            v.push(e.test.model.as_str());
        }
    }
    count
        .iter()
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))
        .map(|(t, _)| t.to_string())
}

/// The fastest entry of `model` for `test` (each quantization at its fastest setting).
fn pick<'a>(es: &[&'a Entry], model: &str, test: Option<&str>) -> Option<&'a Entry> {
    let test = test?;
    es.iter()
        .copied()
        .filter(|e| is_speed(e) && e.test.model == model && e.test.test == test)
        .max_by(|a, b| {
            a.test
                .avg_ts
                .unwrap_or(0.0)
                .total_cmp(&b.test.avg_ts.unwrap_or(0.0))
        })
}

/// "A", "A and B", "A, B and C".
pub fn and_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [a] => a.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The answers, one per (machine, model identity), in board order.
pub fn answers(b: &Board, kld_budget: f64) -> Vec<Answer> {
    let mut groups: BTreeMap<(usize, String, Option<String>), Vec<&Entry>> = BTreeMap::new();
    for e in b.entries.iter().filter(|e| is_speed(e)) {
        groups
            .entry((
                e.machine,
                base_name(&e.test.model, &e.quant),
                e.model.architecture.clone(),
            ))
            .or_default()
            .push(e);
    }
    groups
        .into_iter()
        .filter_map(|((machine, model, architecture), es)| {
            let decode_test = common_test(&es, TestKind::Tg);
            let prefill_test = common_test(&es, TestKind::Pp);
            if decode_test.is_none() && prefill_test.is_none() {
                return None;
            }
            let mut models: Vec<(&str, &str)> = es
                .iter()
                .map(|e| (e.test.model.as_str(), e.quant.as_str()))
                .collect();
            models.sort();
            models.dedup();
            let shared_quant = |q: &str| models.iter().filter(|m| m.1 == q).count() > 1;
            let mut rows: Vec<Row> = models
                .iter()
                .filter_map(|&(name, quant)| {
                    let d = pick(&es, name, decode_test.as_deref());
                    let p = pick(&es, name, prefill_test.as_deref());
                    let any = d.or(p)?;
                    let mut badges: Vec<String> = any
                        .badges
                        .iter()
                        .filter(|x| *x == "synthetic")
                        .cloned()
                        .collect();
                    for f in d.iter().chain(p.iter()).flat_map(|e| &e.flags) {
                        let s = f.badge().to_string();
                        if !badges.contains(&s) {
                            badges.push(s);
                        }
                    }
                    let size = any.test.model_size;
                    let bits_per_weight = any.model.bits_per_weight.or_else(|| {
                        let (s, n) = (size?, any.test.model_n_params?);
                        (n > 0).then(|| s as f64 * 8.0 / n as f64)
                    });
                    let label = any.quant_label();
                    Some(Row {
                        quant: if shared_quant(quant) {
                            format!("{label} ({name})")
                        } else {
                            label
                        },
                        quant_name: quant.to_string(),
                        backend: any.test.backends.clone(),
                        badges,
                        bits_per_weight,
                        size,
                        decode: d.and_then(rate),
                        prefill: p.and_then(rate),
                        kld: any.model.kld_mean.map(|k| (k, any.model.kld_uncertainty)),
                        roofline: d.and_then(|e| {
                            match e.test.resources.as_ref().and_then(|r| r.roofline.as_ref()) {
                                Some(r) => Some((
                                    r.percent_of_roofline,
                                    r.above_ceiling || r.percent_of_roofline >= 100.0,
                                    false,
                                )),
                                None => e.roofline_estimate.map(|p| (p, p >= 100.0, true)),
                            }
                        }),
                        front: false,
                        tied_with: vec![],
                        repacked: p.and_then(Entry::repacked_bytes),
                        unrepacked_gap: false,
                        decode_rounds: d
                            .map(|e| e.test.round_medians())
                            .filter(|r| r.len() >= 2)
                            .unwrap_or_default(),
                        decode_file: d.map(|e| e.file.clone()),
                        auto_max_rounds: d.and_then(|e| e.auto_max_rounds),
                    })
                })
                .collect();
            rows.sort_by(|a, b| {
                let v = |r: &Row| {
                    r.decode
                        .as_ref()
                        .map_or(f64::NEG_INFINITY, |d| d.figure.value)
                };
                v(b).total_cmp(&v(a)).then_with(|| a.quant.cmp(&b.quant))
            });
            let resolved = mark_front(&mut rows, kld_budget);
            mark_unrepacked_gaps(&mut rows);
            let host = b.machines.get(machine).map_or("?", |m| m.hostname.as_str());
            let sentence = sentence(&model, host, &rows, kld_budget, &resolved);
            Some(Answer {
                model,
                architecture,
                machine,
                machine_key: b
                    .machines
                    .get(machine)
                    .map_or(String::new(), |m| m.key.clone()),
                decode_test,
                prefill_test,
                rows,
                sentence,
                rule: resolved.rule,
                open: resolved.open_names,
            })
        })
        .collect()
}

/// A prefill under this share of the table's median is a gap worth explaining.
const PREFILL_GAP: f64 = 0.7;

/// Marks the rows whose prefill is far below the others' and for which llama.cpp made no
/// repacked CPU weights while it did for others: the repacked layouts are what its fast
/// CPU matrix kernels read, so their absence explains the gap (on a CPU machine; a GPU
/// run records no repack and is never marked).
fn mark_unrepacked_gaps(rows: &mut [Row]) {
    if !rows.iter().any(|r| r.repacked.is_some_and(|b| b > 0)) {
        return;
    }
    let mut pp: Vec<f64> = rows
        .iter()
        .filter_map(|r| Some(r.prefill.as_ref()?.figure.value))
        .collect();
    if pp.len() < 3 {
        return;
    }
    pp.sort_by(f64::total_cmp);
    let median = pp[pp.len() / 2];
    for r in rows.iter_mut() {
        let slow = r
            .prefill
            .as_ref()
            .is_some_and(|p| p.figure.value < PREFILL_GAP * median);
        r.unrepacked_gap = slow && r.repacked == Some(0);
    }
}

fn kld_figure(k: (f64, Option<f64>)) -> Figure {
    Figure::around(k.0, 1.96 * k.1.unwrap_or(0.0))
}

/// The answer's resolution over the rows with a decode rate (`decoded`: their indices).
pub struct Resolved {
    pub decoded: Vec<usize>,
    pub rule: Rule,
    /// The fastest within the budget and the rows it ties with (indices into the rows).
    pub best: Option<usize>,
    pub best_ties: Vec<usize>,
    /// "Q4_K_M vs Q8_0": comparisons the answer depends on, not established.
    pub open_names: Vec<String>,
}

/// Marks the Pareto front of decode against KLD (rows with both) and the speed ties on it,
/// and resolves the fastest within `budget` (`stats::resolve`). Rows of one result file whose
/// decode has 2 or more rounds were interleaved: they are compared paired by round, Holm
/// over the answer's pairs (sequentially for an auto-rounds run); other rows, from separate
/// runs or of one launch each, tie when their intervals overlap.
pub fn mark_front(rows: &mut [Row], budget: f64) -> Resolved {
    let decoded: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].decode.is_some())
        .collect();
    let choices: Vec<Choice> = decoded
        .iter()
        .map(|&i| Choice {
            speed: rows[i].decode.as_ref().unwrap().figure,
            rounds: rows[i].decode_rounds.clone(),
            error: rows[i].kld.map(kld_figure),
        })
        .collect();
    let one_file = decoded.iter().all(|&i| {
        rows[i].decode_file.is_some() && rows[i].decode_file == rows[decoded[0]].decode_file
    });
    let design = one_file.then(
        || match decoded.first().and_then(|&i| rows[i].auto_max_rounds) {
            Some(m) => Design::Sequential {
                max_rounds: m as usize,
            },
            None => Design::Fixed,
        },
    );
    let r = resolve(&choices, budget, design, 0.05);
    for row in rows.iter_mut() {
        row.front = false;
        row.tied_with.clear();
    }
    // Ties by the quantization's name alone ("Q4_K_M", its row says "(mostly Q5_0)"), which
    // keeps the column narrow; the full label where two rows share the name.
    let short: Vec<String> = rows
        .iter()
        .map(|r| {
            if rows.iter().filter(|o| o.quant_name == r.quant_name).count() > 1 {
                r.quant.clone()
            } else {
                r.quant_name.clone()
            }
        })
        .collect();
    for (k, &i) in decoded.iter().enumerate() {
        rows[i].front = r.front[k];
        rows[i].tied_with = r.front_ties[k]
            .iter()
            .map(|&m| short[decoded[m]].clone())
            .collect();
    }
    Resolved {
        rule: r.rule,
        best: r.best.map(|k| decoded[k]),
        best_ties: r.best_ties.iter().map(|&k| decoded[k]).collect(),
        open_names: r
            .open
            .iter()
            .map(|&(a, b)| format!("{} vs {}", short[decoded[a]], short[decoded[b]]))
            .collect(),
        decoded,
    }
}

mod text;
pub use text::{NO_REPACK, covers, identity_label, note, sentence, table, ties_text};

#[cfg(test)]
mod tests;
