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
use crate::stats::ties::{Figure, pareto_front};
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
            mark_front(&mut rows);
            mark_unrepacked_gaps(&mut rows);
            let host = b.machines.get(machine).map_or("?", |m| m.hostname.as_str());
            let sentence = sentence(&model, host, &rows, kld_budget);
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

/// Marks the Pareto front of decode against KLD (rows with both) and the speed ties on it.
fn mark_front(rows: &mut [Row]) {
    let idx: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].decode.is_some() && rows[i].kld.is_some())
        .collect();
    let points: Vec<(Figure, Figure)> = idx
        .iter()
        .map(|&i| {
            (
                rows[i].decode.as_ref().unwrap().figure,
                kld_figure(rows[i].kld.unwrap()),
            )
        })
        .collect();
    let front = pareto_front(&points);
    for (k, &i) in idx.iter().enumerate() {
        rows[i].front = front[k];
    }
    for &i in &idx {
        if !rows[i].front {
            continue;
        }
        let me = rows[i].decode.as_ref().unwrap().figure;
        rows[i].tied_with = idx
            .iter()
            .filter(|&&j| j != i && rows[j].front)
            .filter(|&&j| rows[j].decode.as_ref().unwrap().figure.ties(&me))
            .map(|&j| rows[j].quant.clone())
            .collect();
    }
}

/// "X" or "X, tied with Y and Z": `best` and the rows among `among` whose decode ties.
fn with_ties(best: &Row, among: &[&Row]) -> String {
    let me = best.decode.as_ref().unwrap().figure;
    let tied: Vec<String> = among
        .iter()
        .filter(|r| r.quant != best.quant)
        .filter(|r| r.decode.as_ref().unwrap().figure.ties(&me))
        .map(|r| r.quant.clone())
        .collect();
    if tied.is_empty() {
        best.quant.clone()
    } else {
        format!("{}, tied with {}", best.quant, and_list(&tied))
    }
}

/// The one-line answer above the table.
pub fn sentence(model: &str, host: &str, rows: &[Row], budget: f64) -> String {
    let head = format!("For {model} on {host}");
    let decoded: Vec<&Row> = rows.iter().filter(|r| r.decode.is_some()).collect();
    let fastest = |rs: &[&Row]| -> Option<Row> {
        rs.iter()
            .max_by(|a, b| {
                let v = |r: &Row| r.decode.as_ref().unwrap().figure.value;
                v(a).total_cmp(&v(b))
            })
            .map(|r| (*r).clone())
    };
    let Some(top) = fastest(&decoded) else {
        return format!(
            "{head}, no decode rate was measured, so there is no fastest quantization."
        );
    };
    let with_kld: Vec<&Row> = decoded
        .iter()
        .copied()
        .filter(|r| r.kld.is_some())
        .collect();
    if with_kld.is_empty() {
        return format!(
            "{head}, no quantization has a KLD measurement, so none can be held to a KLD budget; \
             the fastest decode is {}.",
            with_ties(&top, &decoded)
        );
    }
    let within: Vec<&Row> = with_kld
        .iter()
        .copied()
        .filter(|r| r.kld.unwrap().0 <= budget)
        .collect();
    let b = budget;
    match fastest(&within) {
        Some(best) => format!(
            "{head}, the fastest quantization within a KLD budget of {b} nats is {}.",
            with_ties(&best, &within)
        ),
        None => {
            let closest = with_kld
                .iter()
                .min_by(|a, b| a.kld.unwrap().0.total_cmp(&b.kld.unwrap().0))
                .unwrap();
            format!(
                "{head}, no quantization meets a KLD budget of {b} nats (the lowest KLD is {}'s, {:.4}).",
                closest.quant,
                closest.kld.unwrap().0
            )
        }
    }
}

/// "230 (225–236)": the rate and its interval, without spaces breaking inside.
fn rate_text(r: &Rate, nbsp: &str) -> String {
    let f = r.figure;
    if r.covers.is_none() {
        return fmt_num(f.value);
    }
    format!(
        "{}{nbsp}({}–{})",
        fmt_num(f.value),
        fmt_num(f.lo),
        fmt_num(f.hi)
    )
}

/// What the intervals of an answer cover: "1 launch", "3 rounds", or both.
pub fn covers(a: &Answer) -> Vec<String> {
    let mut v: Vec<String> = a
        .rows
        .iter()
        .flat_map(|r| [&r.decode, &r.prefill])
        .filter_map(|x| x.as_ref()?.covers.clone())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The model's identity as the page's filters name it: "SmolLM2-135M (llama)" (as
/// `charts::identity`).
pub fn identity_label(a: &Answer) -> String {
    match &a.architecture {
        Some(x) => format!("{} ({x})", a.model),
        None => a.model.clone(),
    }
}

/// The answer as a table: quantization and decode first (so a phone shows them), then
/// prefill, KLD, the trade-off, the roofline, bits per weight and size. `nbsp` joins the
/// parts of a figure (" " in HTML, where CSS keeps cells on one line; U+00A0 in Markdown).
pub fn table(a: &Answer, nbsp: &str) -> Table {
    let cell = |text: String, sort: Option<f64>| Cell {
        text,
        sort,
        badges: vec![],
    };
    let mut headers = vec!["quant".to_string()];
    let mut numeric = vec![false];
    let has = |f: &dyn Fn(&Row) -> bool| a.rows.iter().any(f);
    let cols_decode = a.decode_test.is_some();
    let cols_prefill = a.prefill_test.is_some();
    let cols_kld = has(&|r| r.kld.is_some());
    let cols_roof = has(&|r| r.roofline.is_some());
    let cols_bpw = has(&|r| r.bits_per_weight.is_some());
    let cols_size = has(&|r| r.size.is_some());
    let t_s = |t: &Option<String>| format!("{} t/s", t.as_deref().unwrap_or(""));
    if cols_decode {
        headers.push(format!("decode {}", t_s(&a.decode_test)));
        numeric.push(true);
    }
    if cols_prefill {
        headers.push(format!("prefill {}", t_s(&a.prefill_test)));
        numeric.push(true);
    }
    if cols_kld {
        headers.push("KLD ± se".into());
        numeric.push(true);
        headers.push("best trade-off".into());
        numeric.push(false);
    }
    if cols_roof {
        headers.push("% of roofline".into());
        numeric.push(true);
    }
    if cols_bpw {
        headers.push("bits/weight".into());
        numeric.push(true);
    }
    if cols_size {
        headers.push("size".into());
        numeric.push(true);
    }
    let rows = a
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![Cell {
                text: r.quant.clone(),
                sort: None,
                badges: r.badges.clone(),
            }];
            let rate_cell = |x: &Option<Rate>| match x {
                Some(x) => cell(rate_text(x, nbsp), Some(x.figure.value)),
                None => cell(String::new(), None),
            };
            if cols_decode {
                row.push(rate_cell(&r.decode));
            }
            if cols_prefill {
                let mut c = rate_cell(&r.prefill);
                if r.unrepacked_gap {
                    c.badges.push(NO_REPACK.into());
                }
                row.push(c);
            }
            if cols_kld {
                row.push(match r.kld {
                    Some((k, Some(se))) if se > 0.0 => {
                        cell(format!("{k:.4}{nbsp}±{nbsp}{se:.4}"), Some(k))
                    }
                    Some((k, _)) if k == 0.0 => cell("0 (reference)".into(), Some(k)),
                    Some((k, _)) => cell(format!("{k:.4}"), Some(k)),
                    None => cell(String::new(), None),
                });
                let text = match (r.front, r.tied_with.is_empty()) {
                    (false, _) => String::new(),
                    (true, true) => "★ front".to_string(),
                    (true, false) => format!("★ front, ties {}", r.tied_with.join(", ")),
                };
                row.push(cell(text, None));
            }
            if cols_roof {
                row.push(match r.roofline {
                    Some((p, bad, estimated)) => Cell {
                        text: format!("{}{p:.0}%", if estimated { "≥" } else { "" }),
                        sort: Some(p),
                        badges: if bad {
                            vec!["implausible".into()]
                        } else {
                            vec![]
                        },
                    },
                    None => cell(String::new(), None),
                });
            }
            if cols_bpw {
                row.push(match r.bits_per_weight {
                    Some(b) => cell(format!("{b:.2}"), Some(b)),
                    None => cell(String::new(), None),
                });
            }
            if cols_size {
                row.push(match r.size {
                    Some(s) => cell(format_size(s).replace(' ', nbsp), Some(s as f64)),
                    None => cell(String::new(), None),
                });
            }
            row
        })
        .collect();
    let model = identity_label(a);
    let meta = a
        .rows
        .iter()
        .map(|r| RowMeta {
            id: anchor("a", &[&a.machine_key, &model, &r.quant]),
            model: model.clone(),
            machine: a.machine.to_string(),
            backend: r.backend.clone(),
            quant: r.quant_name.clone(),
            file: String::new(),
        })
        .collect();
    Table {
        headers,
        numeric,
        rows,
        meta,
    }
}

/// The badge on a prefill far below the others' for want of repacked weights.
pub const NO_REPACK: &str = "no repack";

/// The sentence on rows marked `unrepacked_gap`: which, and the repacked sizes of the others.
fn repack_note(a: &Answer) -> Option<String> {
    let gaps: Vec<String> = a
        .rows
        .iter()
        .filter(|r| r.unrepacked_gap)
        .map(|r| r.quant.clone())
        .collect();
    if gaps.is_empty() {
        return None;
    }
    let mib: Vec<f64> = a
        .rows
        .iter()
        .filter_map(|r| r.repacked.filter(|&b| b > 0))
        .map(|b| b as f64 / (1u64 << 20) as f64)
        .collect();
    let lo = mib.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = mib.iter().copied().fold(0.0, f64::max);
    let range = if (hi - lo).abs() < 0.5 {
        format!("{hi:.0} MiB")
    } else {
        format!("{lo:.0}–{hi:.0} MiB")
    };
    Some(format!(
        " {NO_REPACK}: {} prefill{} far below the others' with no repacked weights (0 MiB; \
         llama.cpp's CPU_REPACK buffer, which its fast CPU kernels read, holds {range} for \
         other rows).",
        and_list(&gaps),
        if gaps.len() == 1 { "s" } else { "" }
    ))
}

/// The note under an answer table: what the intervals cover and what the front means.
pub fn note(a: &Answer) -> String {
    let cov = covers(a);
    // When rows differ, the most common level is named for the table and the others per row.
    let label = |r: &Row| {
        r.decode
            .as_ref()
            .or(r.prefill.as_ref())
            .and_then(|x| x.covers.clone())
    };
    let main = cov
        .iter()
        .max_by_key(|c| {
            a.rows
                .iter()
                .filter(|r| label(r).as_ref() == Some(c))
                .count()
        })
        .cloned();
    let cov_text = match &main {
        None => "no interval (a single sample)".to_string(),
        Some(m) => {
            let others: Vec<String> = a
                .rows
                .iter()
                .filter_map(|r| {
                    let l = label(r)?;
                    (l != *m).then(|| format!("{}: {l}", r.quant))
                })
                .collect();
            if others.is_empty() {
                format!("its 95% interval over {m}")
            } else {
                format!("its 95% interval over {m} ({})", others.join("; "))
            }
        }
    };
    let mut s = format!(
        "t/s: mean with {cov_text}; each quantization at its fastest setting.{}",
        if cov.iter().any(|c| c == "1 launch") {
            " An interval over 1 launch leaves the launch-to-launch noise out (docs/methodology.md)."
        } else {
            ""
        }
    );
    if a.rows.iter().any(|r| r.roofline.is_some_and(|x| x.2)) {
        s.push_str(
            " ≥ roofline: a lower bound from the weights' size and the measured host \
             bandwidth, where the file records no roofline.",
        );
    }
    if let Some(n) = repack_note(a) {
        s.push_str(&n);
    }
    if a.rows.iter().any(|r| r.kld.is_some()) {
        s.push_str(
            " KLD: mean ± standard error, nats. ★ front: the Pareto front of decode against \
             KLD with ties kept (±1.96 se); \"ties\": decode intervals overlap.",
        );
    }
    s
}

#[cfg(test)]
mod tests;
