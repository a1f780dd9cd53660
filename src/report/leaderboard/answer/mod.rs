//! The answer per model and machine: its quantizations with what a choice needs, the
//! Pareto front of decode against KLD with ties kept (overlapping variants named together),
//! and the fastest quantization within a KLD budget.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::load::Board;
use super::load::entry::{Entry, base_name, is_speed, plain_d0, ts};
use crate::plan::TestKind;
use crate::stats::compare::NoiseFloor;
use crate::stats::pairs::Design;
use crate::stats::resolve::{Choice, Run, resolve_runs};
use crate::stats::ties::Figure;

mod parts;
mod text;
pub use parts::{Answer, Rate, Resolved, Row};
pub use text::{identity_label, note, sentence, table};

/// The rate with its recorded interval (older files: computed from the repetitions).
pub fn rate(e: &Entry) -> Option<Rate> {
    let (figure, i) = crate::report::fastest::figure(&e.test, e.test.avg_ts?);
    let covers = i.map(|i| crate::report::covers_text(&i));
    Some(Rate { figure, covers })
}

/// The test most models ran of a kind at depth 0 (ties: the first by name): one per table.
pub fn common_test(es: &[&Entry], kind: TestKind) -> Option<String> {
    let mut count: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in es.iter().filter(|e| plain_d0(e, kind)) {
        count.entry(&e.test.test).or_default().insert(&e.test.model);
    }
    (count.iter())
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))
        .map(|(t, _)| t.to_string())
}

fn pick<'a>(es: &[&'a Entry], model: &str, test: Option<&str>) -> Option<&'a Entry> {
    let test = test?;
    (es.iter().copied())
        .filter(|e| is_speed(e) && e.test.model == model && e.test.test == test)
        .max_by(|a, b| ts(a).total_cmp(&ts(b)))
}

/// The answers per (machine, model identity); unpaired rows are judged against the assumed
/// noise floor, so that a page reads the same wherever it is built.
pub fn answers(b: &Board, kld_budget: f64) -> Vec<Answer> {
    answers_with(b, kld_budget, &NoiseFloor::assumed())
}

pub fn answers_with(b: &Board, kld_budget: f64, floor: &NoiseFloor) -> Vec<Answer> {
    // Files of one model meet by their recorded identity (architecture, shapes, vocabulary)
    // whatever models.toml named them; older files without one, by name and architecture.
    let mut groups: BTreeMap<(usize, String, Option<String>), Vec<&Entry>> = BTreeMap::new();
    for e in b.entries.iter().filter(|e| is_speed(e)) {
        let name = base_name(&e.test.model, &e.quant);
        let key = e.model.identity.clone().unwrap_or(name);
        let arch = e.model.architecture.clone();
        groups.entry((e.machine, key, arch)).or_default().push(e);
    }
    (groups.into_iter())
        .filter_map(|((machine, _, arch), es)| {
            let name = base_name(&es[0].test.model, &es[0].quant);
            answer(b, (machine, name, arch), &es, kld_budget, floor)
        })
        .collect()
}

fn answer(
    b: &Board,
    (machine, model, architecture): (usize, String, Option<String>),
    es: &[&Entry],
    kld_budget: f64,
    floor: &NoiseFloor,
) -> Option<Answer> {
    let decode_test = common_test(es, TestKind::Tg);
    let prefill_test = common_test(es, TestKind::Pp);
    if decode_test.is_none() && prefill_test.is_none() {
        return None;
    }
    let models =
        crate::util::sorted_unique(es.iter().map(|e| (e.test.model.as_str(), e.quant.as_str())));
    let shared_quant = |q: &str| models.iter().filter(|m| m.1 == q).count() > 1;
    let mut rows: Vec<Row> = (models.iter())
        .filter_map(|&(name, quant)| {
            let d = pick(es, name, decode_test.as_deref());
            let p = pick(es, name, prefill_test.as_deref());
            let mut r = row(d, p)?;
            if shared_quant(quant) {
                r.quant = format!("{} ({name})", r.quant);
            }
            r.quant_name = quant.to_string();
            Some(r)
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
    let mut resolved = mark_front(&mut rows, kld_budget, floor);
    // A busy machine gets no verdict: its rows shared the cores with other work, and no
    // design here can say how much that moved each of them.
    let busy: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].decode.is_some() && rows[i].badges.iter().any(|b| b == "busy"))
        .collect();
    if !busy.is_empty() {
        resolved.busy = busy;
        resolved.best = None;
        resolved.best_ties.clear();
        clear_front(&mut rows);
    }
    mark_unrepacked_gaps(&mut rows);
    let m = b.machines.get(machine);
    let host = m.map_or("?", |m| m.hostname.as_str());
    let sentence = sentence(&model, host, &rows, kld_budget, &resolved);
    Some(Answer {
        model,
        architecture,
        machine,
        machine_key: m.map_or(String::new(), |m| m.key.clone()),
        decode_test,
        prefill_test,
        rows,
        sentence,
        rule: resolved.rule,
        open: resolved.open_names,
    })
}

/// One run per result file, with its design (auto rounds or fixed); None without a file.
fn runs_by_file<'a>(of: impl Iterator<Item = (Option<&'a Path>, Option<u32>)>) -> Vec<Option<Run>> {
    let mut files: Vec<&Path> = Vec::new();
    of.map(|(file, auto)| {
        let file = file?;
        let id = files.iter().position(|f| *f == file).unwrap_or_else(|| {
            files.push(file);
            files.len() - 1
        });
        let design = auto.map_or(Design::Fixed, Design::sequential);
        Some(Run { id, design })
    })
    .collect()
}

pub fn runs_of(es: &[&Entry]) -> Vec<Option<Run>> {
    runs_by_file(
        es.iter()
            .map(|e| (Some(e.file.as_path()), e.auto_max_rounds)),
    )
}

fn row(d: Option<&Entry>, p: Option<&Entry>) -> Option<Row> {
    let any = d.or(p)?;
    let mut badges: Vec<String> = (any.badges.iter())
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
    Some(Row {
        quant: any.quant_label(),
        quant_name: any.quant.clone(),
        backend: any.test.backends.clone(),
        badges,
        bits_per_weight,
        size,
        decode: d.and_then(rate),
        prefill: p.and_then(rate),
        kld: any
            .quality()
            .map(|q| (q.kld_mean, Some(q.kld_mean_uncertainty))),
        kld_p999: any.quality().and_then(|q| Some(q.kld_percentiles?.p99_9)),
        roofline: d.and_then(roofline),
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
}

fn roofline(e: &Entry) -> Option<(f64, bool, bool)> {
    match e.test.resources.as_ref().and_then(|r| r.roofline.as_ref()) {
        Some(r) => Some((
            r.percent_of_roofline,
            r.above_ceiling || r.percent_of_roofline >= 100.0,
            false,
        )),
        None => e.roofline_estimate.map(|p| (p, p >= 100.0, true)),
    }
}

const PREFILL_GAP: f64 = 0.7;

/// Marks the rows whose prefill is far below the others' with no repacked CPU weights where
/// others have some: llama.cpp's fast CPU kernels read the repacked layouts.
fn mark_unrepacked_gaps(rows: &mut [Row]) {
    if !rows.iter().any(|r| r.repacked.is_some_and(|b| b > 0)) {
        return;
    }
    let mut pp: Vec<f64> = (rows.iter().filter_map(|r| r.prefill.as_ref()))
        .map(|p| p.figure.value)
        .collect();
    if pp.len() < 3 {
        return;
    }
    pp.sort_by(f64::total_cmp);
    let median = pp[pp.len() / 2];
    for r in rows.iter_mut() {
        let slow = matches!(&r.prefill, Some(p) if p.figure.value < PREFILL_GAP * median);
        r.unrepacked_gap = slow && r.repacked == Some(0);
    }
}

fn clear_front(rows: &mut [Row]) {
    for r in rows.iter_mut() {
        r.front = false;
        r.tied_with.clear();
    }
}

/// Marks the Pareto front of decode against KLD and its ties, and resolves the fastest
/// within `budget`: rows of one file with rounds paired by round, others against `floor`.
pub fn mark_front(rows: &mut [Row], budget: f64, floor: &NoiseFloor) -> Resolved {
    let decoded: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].decode.is_some())
        .collect();
    let choices: Vec<Choice> = (decoded.iter())
        .map(|&i| Choice {
            speed: rows[i].decode.as_ref().unwrap().figure,
            rounds: rows[i].decode_rounds.clone(),
            error: (rows[i].kld).map(|(k, se)| Figure::around(k, 1.96 * se.unwrap_or(0.0))),
        })
        .collect();
    let runs = runs_by_file(
        decoded
            .iter()
            .map(|&i| (rows[i].decode_file.as_deref(), rows[i].auto_max_rounds)),
    );
    let r = resolve_runs(&choices, &runs, budget, 0.05, floor);
    clear_front(rows);
    // Ties by the quantization's name alone (a narrow column), unless two rows share it.
    let short: Vec<String> = (rows.iter())
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
        rows[i].tied_with = (r.front_ties[k].iter())
            .map(|&m| short[decoded[m]].clone())
            .collect();
    }
    Resolved {
        rule: r.rule,
        busy: Vec::new(),
        best: r.best.map(|k| decoded[k]),
        best_ties: r.best_ties.iter().map(|&k| decoded[k]).collect(),
        open_names: (r.open.iter())
            .map(|&(a, b)| format!("{} vs {}", short[decoded[a]], short[decoded[b]]))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
