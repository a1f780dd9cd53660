//! The answer in words: the one-line sentence above the table, the table itself (rates
//! with their intervals, KLD, bits per weight, roofline, the front marked) and the note
//! under it (what the intervals cover, the prefill gaps that missing repacked weights
//! explain). What the answer is, is `answer`'s.

use std::fmt::Write as _;

use super::parts::{Answer, Rate, Resolved, Row, and_list};
use crate::report::leaderboard::svg::fmt_num;
use crate::report::leaderboard::table::{Cell, RowMeta, Table, anchor};
use crate::stats::resolve::Rule;
use crate::util::units::format_size;

/// "X" or "X, tied with Y and Z": the resolution's best and the rows it ties with.
fn with_ties(rows: &[Row], r: &Resolved) -> String {
    let Some(best) = r.best else {
        return String::new();
    };
    let tied: Vec<String> = r.best_ties.iter().map(|&i| rows[i].quant.clone()).collect();
    if tied.is_empty() {
        rows[best].quant.clone()
    } else {
        format!("{}, tied with {}", rows[best].quant, and_list(&tied))
    }
}

/// What would settle the ties of `resolved`: interleaved rounds where nothing paired the
/// rows, a larger budget where rounds did.
fn settle(resolved: &Resolved) -> &'static str {
    match resolved.rule {
        Rule::Paired { .. } => {
            "more interleaved rounds settle them (`tpsbench run --rounds auto --max-rounds-seconds 900`), unless they are within 2% of each other"
        }
        _ => "interleaved rounds pair them and settle more (`tpsbench run --rounds auto`)",
    }
}

/// The one-line answer above the table (`resolved` by `answer::mark_front`): the leader and
/// the rows not established slower than it, named as ties with what would settle them.
pub fn sentence(model: &str, host: &str, rows: &[Row], budget: f64, resolved: &Resolved) -> String {
    let head = format!("For {model} on {host}");
    if !rows.iter().any(|r| r.decode.is_some()) {
        return format!(
            "{head}, no decode rate was measured, so there is no fastest quantization."
        );
    }
    if !resolved.busy.is_empty() {
        let busy: Vec<String> = resolved
            .busy
            .iter()
            .map(|&i| rows[i].quant.clone())
            .collect();
        return format!(
            "{head}, no verdict: {} {} measured on a busy machine (a 1-minute load average at \
             the start above 1, or above 0.5 per logical CPU on a larger machine), which moves \
             each row by more than any interval here shows. A run on \
             a quiet machine settles it (`scripts/bench` waits for one).",
            and_list(&busy),
            if busy.len() == 1 { "was" } else { "were" }
        );
    }
    let answer = sentence_answer(&head, rows, budget, resolved);
    if resolved.best.is_some() && !resolved.best_ties.is_empty() {
        format!(
            "{answer} The ties are not established apart; {}.",
            settle(resolved)
        )
    } else {
        answer
    }
}

/// The sentence's claim: the fastest within the budget with its ties.
fn sentence_answer(head: &str, rows: &[Row], budget: f64, resolved: &Resolved) -> String {
    let with_kld = rows.iter().any(|r| r.decode.is_some() && r.kld.is_some());
    if !with_kld {
        return format!(
            "{head}, no quantization has a KLD measurement, so none can be held to a KLD budget; \
             the fastest decode is {}.",
            with_ties(rows, resolved)
        );
    }
    let b = budget;
    match resolved.best {
        Some(_) => format!(
            "{head}, the fastest quantization within a KLD budget of {b} nats is {}.",
            with_ties(rows, resolved)
        ),
        None => {
            let closest = rows
                .iter()
                .filter(|r| r.kld.is_some())
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
/// `entry::identity`).
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
    let cols = Columns::of(a);
    let (headers, numeric) = cols.headers(a);
    let rows = a.rows.iter().map(|r| cols.cells(r, nbsp)).collect();
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

/// The answer table's optional columns: those some row (or the answer) has a figure for.
struct Columns {
    decode: bool,
    prefill: bool,
    kld: bool,
    roof: bool,
    bpw: bool,
    size: bool,
}

fn cell(text: String, sort: Option<f64>) -> Cell {
    Cell {
        text,
        sort,
        badges: vec![],
    }
}

impl Columns {
    fn of(a: &Answer) -> Columns {
        let has = |f: &dyn Fn(&Row) -> bool| a.rows.iter().any(f);
        Columns {
            decode: a.decode_test.is_some(),
            prefill: a.prefill_test.is_some(),
            kld: has(&|r| r.kld.is_some()),
            roof: has(&|r| r.roofline.is_some()),
            bpw: has(&|r| r.bits_per_weight.is_some()),
            size: has(&|r| r.size.is_some()),
        }
    }

    /// The headers, and which of them are numeric.
    fn headers(&self, a: &Answer) -> (Vec<String>, Vec<bool>) {
        let t_s = |t: &Option<String>| format!("{} t/s", t.as_deref().unwrap_or(""));
        let mut h: Vec<(String, bool)> = vec![("quant".into(), false)];
        if self.decode {
            h.push((format!("decode {}", t_s(&a.decode_test)), true));
        }
        if self.prefill {
            h.push((format!("prefill {}", t_s(&a.prefill_test)), true));
        }
        if self.kld {
            h.push(("KLD ± se".into(), true));
            h.push(("best trade-off".into(), false));
        }
        if self.roof {
            h.push(("% of roofline".into(), true));
        }
        if self.bpw {
            h.push(("bits/weight".into(), true));
        }
        if self.size {
            h.push(("size".into(), true));
        }
        h.into_iter().unzip()
    }

    /// One row's cells, in the headers' order.
    fn cells(&self, r: &Row, nbsp: &str) -> Vec<Cell> {
        let mut row = vec![Cell {
            text: r.quant.clone(),
            sort: None,
            badges: r.badges.clone(),
        }];
        let rate_cell = |x: &Option<Rate>| match x {
            Some(x) => cell(rate_text(x, nbsp), Some(x.figure.value)),
            None => cell(String::new(), None),
        };
        if self.decode {
            row.push(rate_cell(&r.decode));
        }
        if self.prefill {
            let mut c = rate_cell(&r.prefill);
            if r.unrepacked_gap {
                c.badges.push(NO_REPACK.into());
            }
            row.push(c);
        }
        if self.kld {
            row.push(kld_cell(r.kld, nbsp));
            let text = match (r.front, r.tied_with.is_empty()) {
                (false, _) => String::new(),
                (true, true) => "★ front".to_string(),
                (true, false) => format!("★ front, ties {}", r.tied_with.join(", ")),
            };
            row.push(cell(text, None));
        }
        if self.roof {
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
        if self.bpw {
            row.push(match r.bits_per_weight {
                Some(b) => cell(format!("{b:.2}"), Some(b)),
                None => cell(String::new(), None),
            });
        }
        if self.size {
            row.push(match r.size {
                Some(s) => cell(format_size(s).replace(' ', nbsp), Some(s as f64)),
                None => cell(String::new(), None),
            });
        }
        row
    }
}

/// "0.0123 ± 0.0004", "0 (reference)", or empty without a KLD.
fn kld_cell(kld: Option<(f64, Option<f64>)>, nbsp: &str) -> Cell {
    match kld {
        Some((k, Some(se))) if se > 0.0 => cell(format!("{k:.4}{nbsp}±{nbsp}{se:.4}"), Some(k)),
        Some((k, _)) if k == 0.0 => cell("0 (reference)".into(), Some(k)),
        Some((k, _)) => cell(format!("{k:.4}"), Some(k)),
        None => cell(String::new(), None),
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
             KLD with ties kept (±1.96 se).",
        );
    }
    let _ = write!(s, " {}.", ties_text(a));
    s
}

/// How the answer's ties were judged and what stayed open: "ties: ... paired by round ...".
pub fn ties_text(a: &Answer) -> String {
    let mut s = a.rule.describe();
    if !a.open.is_empty() {
        let how = match a.rule {
            Rule::Paired {
                design: crate::stats::pairs::Design::Sequential { .. },
                ..
            } => {
                "a larger budget may settle them (`tpsbench run --rounds auto --max-rounds-seconds 900`); a true gap within 2% stays a tie"
            }
            _ => "more rounds would settle them (`tpsbench run --rounds auto`)",
        };
        let _ = write!(s, ". Not established: {}; {how}", a.open.join(", "));
    }
    s
}
