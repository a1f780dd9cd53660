//! The answer in words: the sentence above the table, the table and the note under it.

use std::fmt::Write as _;

use super::parts::{Answer, Rate, Resolved, Row, and_list};
use crate::report::leaderboard::charts::svg::{Tags, fmt_num};
use crate::report::leaderboard::table::{Cell, RowMeta, Table, anchor, opt};
use crate::stats::resolve::Rule;
use crate::util::units::format_size;

/// "X" or "X, tied with Y and Z".
fn with_ties(rows: &[Row], r: &Resolved) -> String {
    let Some(best) = r.best else {
        return String::new();
    };
    let tied: Vec<String> = r.best_ties.iter().map(|&i| rows[i].quant.clone()).collect();
    let ties = crate::report::wrapped(", tied with ", &and_list(&tied), "");
    format!("{}{ties}", rows[best].quant)
}

fn settle(resolved: &Resolved) -> &'static str {
    match resolved.rule {
        Rule::Paired { .. } => {
            "more rounds settle them unless within 2% (`tpsbench run --rounds auto --max-rounds-seconds 900`)"
        }
        _ => "`tpsbench run --rounds auto` settles more",
    }
}

/// The sentence above the table: the leader, and the rows not established slower as ties.
pub fn sentence(model: &str, host: &str, rows: &[Row], budget: f64, resolved: &Resolved) -> String {
    let head = format!("For {model} on {host}");
    if !rows.iter().any(|r| r.decode.is_some()) {
        return format!(
            "{head}, no decode rate was measured, so there is no fastest quantization."
        );
    }
    if !resolved.busy.is_empty() {
        let busy: Vec<String> = (resolved.busy.iter())
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
        let (among, how) = (among_ties(rows, resolved), settle(resolved));
        format!("{answer}{among} Not established apart: {how}.")
    } else {
        answer
    }
}

/// Among the leader and its ties: the lowest measured KLD and the smallest file (no verdict
/// on the KLD intervals). Short: on a phone the table must still start in the first view.
fn among_ties(rows: &[Row], r: &Resolved) -> String {
    let tied: Vec<&Row> = (r.best.iter().chain(&r.best_ties))
        .map(|&i| &rows[i])
        .collect();
    let faithful = (tied.iter())
        .filter_map(|x| Some((x, x.kld?.0)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let smallest = (tied.iter().filter_map(|x| Some((x, x.size?)))).min_by_key(|x| x.1);
    match (faithful, smallest) {
        (Some((f, _)), Some((s, _))) if f.quant == s.quant => {
            format!(
                " Of these, {} has the lowest KLD and is the smallest.",
                f.quant
            )
        }
        (Some((f, _)), Some((s, _))) => {
            format!(" Of these: lowest KLD {}, smallest {}.", f.quant, s.quant)
        }
        _ => String::new(),
    }
}

fn sentence_answer(head: &str, rows: &[Row], budget: f64, resolved: &Resolved) -> String {
    let with_kld = rows.iter().any(|r| r.decode.is_some() && r.kld.is_some());
    if !with_kld {
        return format!(
            "{head}, no quantization has a KLD measurement, so none can be held to a KLD budget; \
             the fastest decode is {}.",
            with_ties(rows, resolved)
        );
    }
    match resolved.best {
        Some(_) => format!(
            "{head}, the fastest quantization within a KLD budget of {budget} nats is {}.",
            with_ties(rows, resolved)
        ),
        None => {
            let closest = (rows.iter())
                .filter(|r| r.kld.is_some())
                .min_by(|a, b| a.kld.unwrap().0.total_cmp(&b.kld.unwrap().0))
                .unwrap();
            format!(
                "{head}, no quantization meets a KLD budget of {budget} nats (the lowest KLD is {}'s, {:.4}).",
                closest.quant,
                closest.kld.unwrap().0
            )
        }
    }
}

/// "230 (225–236)".
fn rate_text(r: &Rate, nbsp: &str) -> String {
    let (f, value) = (r.figure, fmt_num(r.figure.value));
    if r.covers.is_none() {
        return value;
    }
    format!("{value}{nbsp}({}–{})", fmt_num(f.lo), fmt_num(f.hi))
}

pub fn covers(a: &Answer) -> Vec<String> {
    let rates = a.rows.iter().flat_map(|r| [&r.decode, &r.prefill]);
    crate::util::sorted_unique(rates.filter_map(|x| x.as_ref()?.covers.clone()))
}

/// "SmolLM2-135M (llama)", as `entry::identity`.
pub fn identity_label(a: &Answer) -> String {
    match &a.architecture {
        Some(x) => format!("{} ({x})", a.model),
        None => a.model.clone(),
    }
}

type Column<'a> = (String, bool, Box<dyn Fn(&Row) -> Cell + 'a>);

/// The answer as a table: quantization and decode first (a phone shows them), then the
/// columns some row has; `nbsp` joins the parts of a figure.
pub fn table(a: &Answer, nbsp: &str) -> Table {
    let has = |f: fn(&Row) -> bool| a.rows.iter().any(f);
    let rate =
        move |x: &Option<Rate>| num(x.as_ref().map(|x| (rate_text(x, nbsp), x.figure.value)));
    let test = |t: &Option<String>| t.clone().unwrap_or_default();
    let quant = |r: &Row| Cell::text(r.quant.clone()).badged(&r.badges);
    let mut cols: Vec<Column> = vec![("quant".into(), false, Box::new(quant))];
    if a.decode_test.is_some() {
        let h = format!("decode {} t/s", test(&a.decode_test));
        cols.push((h, true, Box::new(move |r| rate(&r.decode))));
    }
    if a.prefill_test.is_some() {
        let h = format!("prefill {} t/s", test(&a.prefill_test));
        cols.push((
            h,
            true,
            Box::new(move |r| {
                let mut c = rate(&r.prefill);
                if r.unrepacked_gap {
                    c.badges.push(NO_REPACK.into());
                }
                c
            }),
        ));
    }
    if has(|r| r.kld.is_some()) {
        cols.push(("KLD ± se".into(), true, Box::new(|r| kld_cell(r.kld, nbsp))));
        if has(|r| r.kld_p999.is_some()) {
            let p = |r: &Row| r.kld_p999.map(|k| (format!("{k:.4}"), k));
            cols.push(("99.9% KLD".into(), true, Box::new(move |r| num(p(r)))));
        }
        cols.push(("best trade-off".into(), false, Box::new(front_cell)));
    }
    if has(|r| r.roofline.is_some()) {
        cols.push(("% of roofline".into(), true, Box::new(roofline_cell)));
    }
    if has(|r| r.bits_per_weight.is_some()) {
        let bpw = |r: &Row| r.bits_per_weight.map(|b| (format!("{b:.2}"), b));
        cols.push(("bits/weight".into(), true, Box::new(move |r| num(bpw(r)))));
    }
    if has(|r| r.size.is_some()) {
        let size = move |r: &Row| Some((format_size(r.size?).replace(' ', nbsp), r.size? as f64));
        cols.push(("size".into(), true, Box::new(move |r| num(size(r)))));
    }
    let model = identity_label(a);
    Table {
        headers: cols.iter().map(|c| c.0.clone()).collect(),
        numeric: cols.iter().map(|c| c.1).collect(),
        rows: (a.rows.iter())
            .map(|r| cols.iter().map(|c| (c.2)(r)).collect())
            .collect(),
        meta: (a.rows.iter())
            .map(|r| RowMeta {
                id: anchor("a", &[&a.machine_key, &model, &r.quant]),
                tags: Tags::of([
                    ("model", &model),
                    ("machine", &a.machine.to_string()),
                    ("backend", &r.backend),
                    ("quant", &r.quant_name),
                ]),
                file: String::new(),
            })
            .collect(),
    }
}

fn num(v: Option<(String, f64)>) -> Cell {
    opt(v.map(|(t, v)| Cell::num(t, v)))
}

fn front_cell(r: &Row) -> Cell {
    Cell::text(match (r.front, r.tied_with.is_empty()) {
        (false, _) => String::new(),
        (true, true) => "★ front".to_string(),
        (true, false) => format!("★ front, ties {}", r.tied_with.join(", ")),
    })
}

fn roofline_cell(r: &Row) -> Cell {
    let Some((p, bad, estimated)) = r.roofline else {
        return Cell::text("");
    };
    let cell = Cell::num(format!("{}{p:.0}%", if estimated { "≥" } else { "" }), p);
    cell.badged(&Vec::from_iter(bad.then(|| "implausible".to_string())))
}

/// "0.0123 ± 0.0004", "0 (reference)", or empty without a KLD.
fn kld_cell(kld: Option<(f64, Option<f64>)>, nbsp: &str) -> Cell {
    num(kld.map(|(k, se)| match se {
        Some(se) if se > 0.0 => (format!("{k:.4}{nbsp}±{nbsp}{se:.4}"), k),
        _ if k == 0.0 => ("0 (reference)".into(), k),
        _ => (format!("{k:.4}"), k),
    }))
}

/// The badge on a prefill far below the others' for want of repacked weights.
pub const NO_REPACK: &str = "no repack";

fn repack_note(a: &Answer) -> Option<String> {
    let gaps: Vec<String> = (a.rows.iter().filter(|r| r.unrepacked_gap))
        .map(|r| r.quant.clone())
        .collect();
    if gaps.is_empty() {
        return None;
    }
    let mib: Vec<f64> = (a.rows.iter())
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

pub fn note(a: &Answer) -> String {
    let cov = covers(a);
    // When rows differ, the most common level is named for the table and the others per row.
    let label = |r: &Row| r.decode.as_ref().or(r.prefill.as_ref())?.covers.clone();
    let main = (cov.iter())
        .max_by_key(|c| {
            (a.rows.iter())
                .filter(|r| label(r).as_ref() == Some(c))
                .count()
        })
        .cloned();
    let cov_text = match &main {
        None => "no interval (a single sample)".to_string(),
        Some(m) => {
            let others: Vec<String> = (a.rows.iter())
                .filter_map(|r| {
                    let l = label(r)?;
                    (l != *m).then(|| format!("{}: {l}", r.quant))
                })
                .collect();
            let others = crate::report::wrapped(" (", &others.join("; "), ")");
            format!("its 95% interval over {m}{others}")
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
    s.push_str(&repack_note(a).unwrap_or_default());
    if a.rows.iter().any(|r| r.kld.is_some()) {
        s.push_str(" KLD: mean ± standard error, nats.");
        if a.rows.iter().any(|r| r.kld_p999.is_some()) {
            s.push_str(" 99.9% KLD: its 99.9th percentile over tokens.");
        }
        s.push_str(" ★ front: the Pareto front of decode against KLD with ties kept (±1.96 se).");
    }
    let _ = write!(s, " {}.", ties_text(a));
    s
}

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
