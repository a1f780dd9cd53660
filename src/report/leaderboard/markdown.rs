//! LEADERBOARD.md: the answer first (per model and machine, which quantization to pick),
//! then a summary ranking, then per machine its description, runs and llama-bench-style
//! tables. Figures never break inside (non-breaking spaces), files are named relative to
//! the input directory, and no column repeats a value every row shares.

use std::fmt::Write;

use crate::util::markdown::text as md;

use super::answer::{self, Answer};
use super::charts::machines::machines;
use super::load::Board;
use super::svg::bars::BarChart;
use super::table::{Cell, Table, by_machine_and_model, detail, rankings, runs};

/// Joins the parts of one figure so that a narrow table cannot wrap it.
const NBSP: &str = "\u{a0}";

/// What the page says before any result is published.
pub const NO_RESULTS: &str = "No results yet. The published set is made on a quiet machine \
     by scripts/make-results (see results/published/README.md); tpsbench leaderboard DIR builds this \
     page from any directory of result files.";

/// A cell's text with its badges, e.g. `SmolLM2-135M-Q8_0 [requantized]`.
pub fn cell_text(c: &Cell) -> String {
    let mut s = c.text.clone();
    for b in &c.badges {
        s.push_str(&format!(" [{b}]"));
    }
    s
}

/// Aligned Markdown table (`util::table`, the one writer); `|` in cells escaped.
pub fn table(t: &Table) -> String {
    let n = t.headers.len();
    let rows: Vec<Vec<String>> = std::iter::once(t.headers.clone())
        .chain(t.rows.iter().map(|r| {
            (0..n)
                .map(|c| r.get(c).map(cell_text).unwrap_or_default())
                .collect()
        }))
        .collect();
    crate::util::table::aligned(&rows, &|c| !t.numeric[c])
}

/// A bar chart as a table: a row per category, a column per series, the bars' labels.
pub fn bars_table(c: &BarChart) -> Table {
    let mut headers = vec!["machine".to_string()];
    headers.extend(c.series.iter().map(|s| s.name.clone()));
    Table {
        numeric: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
        rows: c
            .categories
            .iter()
            .enumerate()
            .map(|(k, cat)| {
                let mut row = vec![Cell {
                    text: cat.label.clone(),
                    sort: None,
                    badges: vec![],
                }];
                row.extend(c.series.iter().map(|s| {
                    let b = s.values.get(k).and_then(Option::as_ref);
                    Cell {
                        text: b.map(|b| b.label.clone()).unwrap_or_default(),
                        sort: b.map(|b| b.value),
                        badges: vec![],
                    }
                }));
                row
            })
            .collect(),
        headers,
        meta: vec![],
    }
}

/// One line about what was read and left out.
pub fn summary_line(b: &Board) -> String {
    let mut s = format!(
        "{} result file{}, {} machine{}, {} measurement{} (the newest per machine and test",
        b.files_read,
        plural(b.files_read),
        b.machines.len(),
        plural(b.machines.len()),
        b.entries.len(),
        plural(b.entries.len()),
    );
    if b.superseded > 0 {
        let _ = write!(
            s,
            "; {} older one{} superseded",
            b.superseded,
            plural(b.superseded)
        );
    }
    s.push(')');
    // `excluded` holds a line per excluded file and per row left out of a kept file.
    let rows = b.excluded.len().saturating_sub(b.files_excluded);
    if b.files_excluded > 0 {
        let _ = write!(
            s,
            ", {} file{} excluded",
            b.files_excluded,
            plural(b.files_excluded)
        );
    }
    if rows > 0 {
        let _ = write!(s, ", {rows} row{} left out", plural(rows));
    }
    if !b.invalid.is_empty() {
        let _ = write!(
            s,
            ", {} invalid file{} skipped",
            b.invalid.len(),
            plural(b.invalid.len())
        );
    }
    s.push('.');
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "SmolLM2-135M (llama) on vm: AMD EPYC".
pub fn heading(b: &Board, a: &Answer) -> String {
    let arch = a
        .architecture
        .as_deref()
        .map(|x| format!(" ({x})"))
        .unwrap_or_default();
    let machine = b
        .machines
        .get(a.machine)
        .map(|m| m.label())
        .unwrap_or_default();
    format!("{}{arch} on {machine}", a.model)
}

/// The page: the summary line, then each section in turn (each writes nothing when it has
/// nothing to say).
pub fn render(b: &Board) -> String {
    let mut o = String::from("# tpsbench leaderboard\n\n");
    let _ = writeln!(o, "{}\n", summary_line(b));
    if b.entries.is_empty() && b.failures.is_empty() {
        let _ = writeln!(o, "{NO_RESULTS}");
        return o;
    }
    answers_section(&mut o, b);
    speculative_section(&mut o, b);
    super::tunes::markdown_section(&mut o, b);
    grids_section(&mut o, b);
    flagged_section(&mut o, b);
    ranking_section(&mut o, b);
    across_machines_section(&mut o, b);
    for mi in 0..b.machines.len() {
        machine_section(&mut o, b, mi);
    }
    left_out_section(&mut o, b);
    o
}

/// "Which quantization?": per model and machine, the answer, its table and its note.
fn answers_section(o: &mut String, b: &Board) {
    let answers = answer::answers(b, b.kld_budget());
    if answers.is_empty() {
        return;
    }
    o.push_str("## Which quantization?\n\n");
    for a in &answers {
        let _ = writeln!(o, "### {}\n\n{}\n", md(&heading(b, a)), md(&a.sentence));
        let _ = writeln!(o, "{}", table(&answer::table(a, NBSP)));
        let _ = writeln!(o, "{}\n", md(&answer::note(a)));
    }
}

/// "Which decoding?": per target model and machine, the fastest speculative setting against
/// plain decoding, and a table of the settings with acceptance by position.
fn speculative_section(o: &mut String, b: &Board) {
    let answers = super::load::speculative_answers(b);
    let served = super::load::served_drafting(b);
    if answers.is_empty() && served.is_empty() {
        return;
    }
    o.push_str("## Which decoding?\n\n");
    for a in &answers {
        let _ = writeln!(
            o,
            "### {} on {}\n\n{}\n\n{}",
            md(&a.model),
            md(&a.host),
            md(&a.sentence),
            a.table
        );
    }
    if !served.is_empty() {
        o.push_str("### Served drafting\n\n");
        for l in &served {
            let _ = writeln!(o, "- {}", md(l));
        }
        o.push('\n');
    }
}

/// "Machines × quantizations": a grid per model and test.
fn grids_section(o: &mut String, b: &Board) {
    let gs = super::grid::grids(b);
    if gs.is_empty() {
        return;
    }
    o.push_str(
        "## Machines × quantizations\n\nPer model and test, t/s: a row per machine (fastest \
         first), a column per quantization, each machine at its fastest setting.\n\n",
    );
    for g in &gs {
        let _ = writeln!(o, "### {}\n\n{}", md(&g.title()), table(&g.table(b)));
    }
}

/// "Flagged": the warnings about measurements kept on the page.
fn flagged_section(o: &mut String, b: &Board) {
    if b.warnings.is_empty() {
        return;
    }
    o.push_str("## Flagged\n\nKept on this page, badged; `tpsbench leaderboard --strict` leaves them out.\n\n");
    for l in &b.warnings {
        let _ = writeln!(o, "- {}", md(l));
    }
    o.push('\n');
}

/// What the figures are, then "Summary ranking": the ten fastest per ranking.
fn ranking_section(o: &mut String, b: &Board) {
    o.push_str(
        "Figures below are llama-bench's: mean ± sample standard deviation of the per-repetition \
         tokens per second. Compare machines with care: shared or busy machines are noisy; \
         each machine's runs below give the load average when they started.\n\n",
    );
    o.push_str("## Summary ranking\n\n");
    for (name, t) in rankings(b, 10) {
        let _ = writeln!(o, "### {}\n\n{}", md(&name), table(&t));
    }
}

/// "Machines": each measurement taken on several machines, machine by machine.
fn across_machines_section(o: &mut String, b: &Board) {
    let across: Vec<_> = machines(b).into_iter().filter(|c| c.has_data()).collect();
    if across.is_empty() {
        return;
    }
    o.push_str(
        "## Machines\n\nThe same model, quantization and test on each machine that measured \
         it, as a share of the fastest machine; each machine at its fastest setting.\n\n",
    );
    for c in &across {
        let _ = writeln!(o, "### {}\n\n{}", md(&c.title), table(&bars_table(c)));
    }
}

/// Machine `mi`'s section: its facts, its runs, a table per model with the fastest
/// placements, and its failed tests.
fn machine_section(o: &mut String, b: &Board, mi: usize) {
    let m = &b.machines[mi];
    let _ = writeln!(o, "## {}\n", md(&m.label()));
    for (k, v) in &m.facts {
        let _ = writeln!(o, "- {}: {}", md(k), md(v));
    }
    let _ = writeln!(o, "\n{}\n", md(&m.details));
    let mine: Vec<_> = b.runs.iter().filter(|r| r.machine == mi).collect();
    let _ = writeln!(o, "### Runs\n\n{}", table(&runs(&mine, false)));
    for (_, model, es) in by_machine_and_model(&b.entries)
        .into_iter()
        .filter(|(x, _, _)| *x == mi)
    {
        let _ = writeln!(o, "### {}\n\n{}", md(&model), table(&detail(&es)));
        let tests: Vec<_> = es.iter().map(|e| &e.test).collect();
        let runs = super::answer::runs_of(&es);
        for f in crate::report::fastest::fastest(&tests, &runs) {
            let _ = writeln!(o, "- {}\n", md(&f.line()));
        }
    }
    failed_tests(o, b, mi);
}

/// Machine `mi`'s tests without a successful measurement, with their errors.
fn failed_tests(o: &mut String, b: &Board, mi: usize) {
    let failed: Vec<_> = b.failures.iter().filter(|e| e.machine == mi).collect();
    if failed.is_empty() {
        return;
    }
    o.push_str("### Failed tests (no successful measurement)\n\n");
    for e in failed {
        let _ = writeln!(
            o,
            "- {}: {}",
            md(&e.test.id),
            md(e.test.error.as_deref().unwrap_or("unknown error"))
        );
    }
    o.push('\n');
}

/// "Left out": the files and rows excluded, and the invalid files.
fn left_out_section(o: &mut String, b: &Board) {
    if b.excluded.is_empty() && b.invalid.is_empty() {
        return;
    }
    o.push_str("## Left out\n\n");
    for l in b.excluded.iter().chain(&b.invalid) {
        let _ = writeln!(o, "- {}", md(l));
    }
    o.push('\n');
}
