//! The page's sections, each written once through `Doc`, which writes either Markdown
//! (LEADERBOARD.md) or HTML (index.html): the same headings, sentences, lists and tables in
//! both, every text from a file escaped for its format. HTML-only parts (wrappers, charts,
//! the grid's bars) go through `Doc::tag`.

use std::fmt::Write;

use super::answer::{self, identity_label};
use super::charts::machines::machines;
use super::charts::svg::bars::{Bar, BarChart};
use super::charts::svg::{cards, escape};
use super::load::{Board, machine_names};
use super::page::tables::{grid_html, table_html};
use super::table::{Cell, Table, by_machine_and_model, detail, opt, rankings, runs};
pub(crate) use crate::report::count;
use crate::report::wrapped;
use crate::util::markdown::text as md;

/// What the page says before any result is published.
pub const NO_RESULTS: &str = "No results yet. The published set is made on a quiet machine \
     by scripts/make-results (see results/published/README.md); tpsbench leaderboard DIR builds this \
     page from any directory of result files.";

/// Answers shown open in the page; more (many machines) fold under one summary line.
const OPEN_ANSWERS: usize = 4;

/// A page being written, in Markdown or in HTML.
pub struct Doc {
    pub html: bool,
    pub o: String,
}

impl Doc {
    fn esc(&self, s: &str) -> String {
        if self.html { escape(s) } else { md(s) }
    }

    fn put(&mut self, md: &str, html: &str) {
        self.o.push_str(if self.html { html } else { md });
    }

    /// HTML only: the page's wrappers and drawings.
    pub fn tag(&mut self, s: &str) {
        self.put("", s);
    }

    /// A section's start; `attrs` are the HTML element's attributes after its id.
    pub fn section(&mut self, id: &str, attrs: &str, title: &str) {
        let t = self.esc(title);
        self.put(
            &format!("## {t}\n\n"),
            &format!(r#"<section id="{id}"{attrs}><h2>{t}</h2>"#),
        );
    }

    pub fn end(&mut self) {
        self.tag("</section>\n");
    }

    pub fn heading(&mut self, s: &str) {
        let t = self.esc(s);
        self.put(&format!("### {t}\n\n"), &format!("<h3>{t}</h3>"));
    }

    pub fn para(&mut self, class: &str, s: &str) {
        let t = self.esc(s);
        self.put(
            &format!("{t}\n\n"),
            &format!(r#"<p class="{class}">{t}</p>"#),
        );
    }

    pub fn list<S: AsRef<str>>(&mut self, class: &str, items: impl IntoIterator<Item = S>) {
        self.tag(&format!("<ul{}>", wrapped(r#" class=""#, class, "\"")));
        for i in items {
            let t = self.esc(i.as_ref());
            self.put(&format!("- {t}\n"), &format!("<li>{t}</li>"));
        }
        self.put("\n", "</ul>");
    }

    /// A table; in HTML with its CSS `class`, and downloads named after `name`.
    pub fn table(&mut self, t: &Table, class: &str, name: &str) {
        match self.html {
            true => self.o.push_str(&table_html(t, class, name)),
            false => self.o.push_str(&(t.markdown() + "\n")),
        }
    }
}

/// A bar chart as a table: a row per category, a column per series, the bars' labels.
fn bars_table(c: &BarChart) -> Table {
    let series: Vec<String> = c.series.iter().map(|s| s.name.clone()).collect();
    let cell = |b: &Bar| Cell::num(b.label.clone(), b.value);
    let rows = (c.categories.iter().enumerate())
        .map(|(k, cat)| {
            let bars = c
                .series
                .iter()
                .map(|s| s.values.get(k).and_then(Option::as_ref));
            let mut row = vec![Cell::text(cat.label.clone())];
            row.extend(bars.map(|b| opt(b.map(cell))));
            row
        })
        .collect();
    Table::labelled("machine", &series, rows, vec![])
}

/// One line about what was read and left out.
pub fn summary_line(b: &Board) -> String {
    let mut s = format!(
        "{}, {}, {} (the newest per machine and test",
        count(b.files_read, "result file"),
        count(b.machines.len(), "machine"),
        count(b.entries.len(), "measurement"),
    );
    if b.superseded > 0 {
        let _ = write!(s, "; {} superseded", count(b.superseded, "older one"));
    }
    s.push(')');
    // `excluded` holds a line per excluded file and per row left out of a kept file.
    let rows = b.excluded.len().saturating_sub(b.files_excluded);
    if b.files_excluded > 0 {
        let _ = write!(s, ", {} excluded", count(b.files_excluded, "file"));
    }
    if rows > 0 {
        let _ = write!(s, ", {} left out", count(rows, "row"));
    }
    if !b.invalid.is_empty() {
        let _ = write!(s, ", {} skipped", count(b.invalid.len(), "invalid file"));
    }
    s.push('.');
    s
}

/// LEADERBOARD.md: the summary line, then each section (silent when it has nothing to say).
pub fn markdown(b: &Board) -> String {
    let mut d = Doc {
        html: false,
        o: format!("# tpsbench leaderboard\n\n{}\n\n", summary_line(b)),
    };
    if b.entries.is_empty() && b.failures.is_empty() {
        let _ = writeln!(d.o, "{NO_RESULTS}");
        return d.o;
    }
    answers(&mut d, b);
    speculative(&mut d, b);
    tune(&mut d, b);
    grids(&mut d, b);
    flagged(&mut d, b);
    ranking(&mut d, b);
    across_machines(&mut d, b);
    machine_sections(&mut d, b);
    left_out(&mut d, b);
    d.o
}

/// "Which quantization?": per model and machine, the answer, its table and note. The page
/// folds answers beyond the first few, keeping the grid near the top.
pub fn answers(d: &mut Doc, b: &Board) {
    let answers = answer::answers(b, b.kld_budget());
    if answers.is_empty() {
        return;
    }
    d.section("answer", "", "Which quantization?");
    // Markdown keeps a figure on one line with U+00A0; the page's CSS does it in cells.
    let nbsp = if d.html { " " } else { "\u{a0}" };
    for (i, a) in answers.iter().enumerate() {
        if i == OPEN_ANSWERS {
            let more = answers.len() - OPEN_ANSWERS;
            d.tag(&format!(
                r#"<details class="more-answers"><summary>{more} more answers, one per model and machine (the grid below compares the machines)</summary>"#
            ));
        }
        // "SmolLM2-135M (llama) on vm: AMD EPYC".
        let machine = b.machines.get(a.machine).map(|m| m.label());
        let h = format!("{} on {}", identity_label(a), machine.unwrap_or_default());
        let (m, model) = (a.machine, escape(&identity_label(a)));
        d.tag(&format!(
            r#"<div class="answer" id="answer-{i}" data-f data-machine="{m}" data-model="{model}">"#
        ));
        d.heading(&h);
        d.para("verdict", &a.sentence);
        d.tag(r#"<p class="scroll-hint">Swipe the table sideways for more columns →</p>"#);
        let name = format!("answer {h}");
        d.table(&answer::table(a, nbsp), "sortable answer-table", &name);
        d.para("note", &answer::note(a));
        d.tag("</div>");
    }
    if answers.len() > OPEN_ANSWERS {
        d.tag("</details>");
    }
    if d.html {
        flagged(d, b);
    }
    d.end();
}

fn flagged(d: &mut Doc, b: &Board) {
    if b.warnings.is_empty() {
        return;
    }
    d.put(
        "## Flagged\n\nKept on this page, badged; `tpsbench leaderboard --strict` leaves them out.\n\n",
        r#"<details class="flagged"><summary>Flagged runs and rows (kept and badged; <code>tpsbench leaderboard --strict</code> leaves them out)</summary>"#,
    );
    d.list("left-out", &b.warnings);
    d.tag("</details>");
}

/// "Which decoding?": per target model and machine, the fastest speculative setting against
/// plain decoding, its table and (in the page) acceptance by draft position.
pub fn speculative(d: &mut Doc, b: &Board) {
    let names = machine_names(b);
    let tests = || {
        b.entries
            .iter()
            .map(|e| (&e.test, names[e.machine].as_str()))
    };
    let answers = crate::report::speculative::answers(tests());
    let served = crate::report::speculative::served(tests());
    if answers.is_empty() && served.is_empty() {
        return;
    }
    d.section("speculative", "", "Which decoding?");
    for (i, a) in answers.iter().enumerate() {
        let h = format!("{} on {}", a.model, a.host);
        d.tag(r#"<div class="answer">"#);
        d.heading(&h);
        d.para("verdict", &a.sentence);
        d.table(&a.table, "sortable answer-table", &format!("decoding {h}"));
        let charts = cards(&super::charts::speculative::acceptance(a, i));
        d.tag(&format!(r#"<div class="charts">{charts}</div></div>"#));
    }
    if !served.is_empty() {
        d.heading("Served drafting");
        d.list("", &served);
    }
    d.end();
}

/// "Which configuration?": per machine and objective, the tune's answer and its lines.
pub fn tune(d: &mut Doc, b: &Board) {
    if b.tunes.is_empty() {
        return;
    }
    d.section("tune", "", "Which configuration?");
    d.para("note", &super::tunes::meaning(b));
    for t in &b.tunes {
        let l = super::tunes::lines(b, t);
        d.tag(r#"<div class="answer">"#);
        d.heading(&l.heading);
        d.put("**Answer:** ", "");
        d.para("verdict", &l.answer);
        d.list("", &l.details);
        d.tag("</div>");
    }
    d.end();
}

/// "Machines × quantizations": a grid per model and test; the page draws each cell's bar.
pub fn grids(d: &mut Doc, b: &Board) {
    let gs = super::grid::grids(b);
    if gs.is_empty() {
        return;
    }
    d.section("grid", "", "Machines × quantizations");
    d.put(
        "Per model and test, t/s: a row per machine (fastest first), a column per \
         quantization, each machine at its fastest setting.\n\n",
        r#"<p class="note">Per model and test: a row per machine (fastest first), a column per quantization, each machine at its fastest setting. The bars of one grid share one scale: the grid's fastest cell. Tap or hover a cell for its test, settings and file; click a header to sort.</p>"#,
    );
    for g in &gs {
        if d.html {
            grid_html(&mut d.o, b, g);
        } else {
            d.heading(&g.title());
            d.table(&g.table(b), "", "");
        }
    }
    d.end();
}

/// "Summary ranking": the ten fastest of each test.
pub fn ranking(d: &mut Doc, b: &Board) {
    d.put(
        "Figures below are llama-bench's: mean ± sample standard deviation of the per-repetition \
         tokens per second. Compare machines with care: shared or busy machines are noisy; \
         each machine's runs below give the load average when they started.\n\n",
        "",
    );
    d.section("ranking", "", "Summary ranking");
    if d.html {
        d.para(
            "note",
            "The ten fastest measurements of each test over all machines, models and \
             settings: mean ± standard deviation of the per-repetition rates, as llama-bench. \
             Settings that differ between the rows of a ranking get a column. Click a column \
             header to sort.",
        );
    }
    d.tag(r#"<div class="sections">"#);
    for (name, t) in rankings(b, 10) {
        d.tag("<div>");
        d.heading(&name);
        d.table(&t, "sortable", &format!("ranking {name}"));
        d.tag("</div>");
    }
    d.tag("</div>");
    d.end();
}

/// "Machines": each measurement taken on several machines; the page draws them, Markdown
/// tabulates those with data.
pub fn across_machines(d: &mut Doc, b: &Board) {
    let charts = machines(b);
    if !d.html && !charts.iter().any(BarChart::has_data) {
        return;
    }
    d.section("machines", "", "Machines");
    if d.html {
        d.para(
            "note",
            "The same model, quantization and test on each machine that measured it, as a \
             share of the fastest machine (LocalScore-style). Each machine counts with its \
             fastest setting of the test.",
        );
        let _ = write!(d.o, r#"<div class="charts">{}</div>"#, cards(&charts));
    } else {
        d.para(
            "",
            "The same model, quantization and test on each machine that measured it, as a \
             share of the fastest machine; each machine at its fastest setting.",
        );
        for c in charts.iter().filter(|c| c.has_data()) {
            d.heading(&c.title);
            d.table(&bars_table(c), "", "");
        }
    }
    d.end();
}

/// Each machine's facts, runs, a table per model with its fastest placements, failed tests.
pub fn machine_sections(d: &mut Doc, b: &Board) {
    let groups = by_machine_and_model(&b.entries);
    for (mi, m) in b.machines.iter().enumerate() {
        let attrs = format!(r#" data-f data-machine="{mi}""#);
        d.section(&format!("machine-{mi}"), &attrs, &m.label());
        if d.html {
            d.o.push_str(r#"<dl class="facts">"#);
            for (k, v) in &m.facts {
                let _ = write!(d.o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
            }
            d.o.push_str("</dl>");
        } else {
            d.list("", m.facts.iter().map(|(k, v)| format!("{k}: {v}")));
        }
        d.para("details", &m.details);
        let mine: Vec<_> = b.runs.iter().filter(|r| r.machine == mi).collect();
        d.heading("Runs");
        let name = format!("runs {}", m.hostname);
        d.table(&runs(&mine, d.html), "sortable", &name);
        for (_, model, es) in groups.iter().filter(|g| g.0 == mi) {
            d.heading(model);
            d.table(&detail(es), "sortable", &format!("{} {model}", m.hostname));
            // A placement sweep's answer, with ties (report::fastest).
            let tests: Vec<_> = es.iter().map(|e| &e.test).collect();
            for f in crate::report::fastest::fastest(&tests, &answer::runs_of(es)) {
                d.put("- ", "");
                d.para("fastest", &f.line());
            }
        }
        let failed: Vec<String> = (b.failures.iter())
            .filter(|e| e.machine == mi)
            .map(|e| {
                let error = e.test.error.as_deref().unwrap_or("unknown error");
                format!("{}: {error}", e.test.id)
            })
            .collect();
        if !failed.is_empty() {
            d.heading("Failed tests (no successful measurement)");
            d.list("left-out", &failed);
        }
        d.end();
    }
}

/// "Left out": the files and rows excluded, and the invalid files.
pub fn left_out(d: &mut Doc, b: &Board) {
    if b.excluded.is_empty() && b.invalid.is_empty() {
        return;
    }
    d.section("left-out", "", "Left out");
    d.list("left-out", b.excluded.iter().chain(&b.invalid));
    d.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::leaderboard::load::BoardTune;
    use crate::report::tune::Summary;

    /// A tune whose every text comes from an untrusted file, markup in each.
    fn hostile() -> Board {
        let tune = serde_json::from_value(serde_json::json!({
            "objective": "tg8<script>", "limits": [], "space": 5, "alpha": 0.05,
            "excluded": [{"id": "x<", "limit": "memory", "why": "w<"}],
            "indifference": 0.02, "max_rounds": 2, "looks": [2], "level": 0.05,
            "candidates": [
                {"id": "t<i>", "outcome": "tie", "rounds": 1},
                {"id": "o&<", "outcome": "open", "rounds": 1},
                {"id": "s", "outcome": "slower", "rounds": 1},
                {"id": "f\"<", "outcome": "failed", "rounds": 1}
            ],
            "stopped": "budget <spent>", "rounds": 2, "tests_run": 6,
            "seconds": 1.0, "first_round_seconds": 0.0
        }))
        .unwrap();
        let s = Summary {
            tune,
            winner: Some("m<b>/Q4_0/tg8".into()),
            mean: 10.0,
            interval: None,
            ties: vec![("t<i>".into(), Some(0.99))],
            open: vec![("o&<".into(), None)],
        };
        Board {
            tunes: vec![BoardTune {
                machine: 0,
                file: "r<x>.json".into(),
                started_at: "2026-12-04T00:00:00Z<".into(),
                summary: s,
            }],
            ..Board::default()
        }
    }

    fn page_tune(b: &Board) -> String {
        let mut d = Doc {
            html: true,
            o: String::new(),
        };
        tune(&mut d, b);
        d.o
    }

    #[test]
    fn every_text_of_a_tune_from_the_file_is_escaped_in_the_page() {
        let o = page_tune(&hostile());
        let mut inner = o.clone();
        for tag in [
            "<section id=\"tune\">",
            "<h2>",
            "</h2>",
            "<p class=\"note\">",
            "<p class=\"verdict\">",
            "</p>",
            "<div class=\"answer\">",
            "</div>",
            "<h3>",
            "</h3>",
            "<ul>",
            "</ul>",
            "<li>",
            "</li>",
            "</section>",
        ] {
            inner = inner.replace(tag, "");
        }
        assert!(!inner.contains('<'), "{o}");
        assert!(o.contains("tg8&lt;script&gt;"), "{o}");
        assert!(
            o.contains("m&lt;b&gt;/Q4_0/tg8: 10.00 t/s (one round: no interval)"),
            "{o}"
        );
        assert!(
            o.contains("excluded by the limits before racing: memory 1 (of 5 in the space)"),
            "{o}"
        );
    }

    #[test]
    fn a_board_without_tunes_has_no_configuration_section() {
        assert!(page_tune(&Board::default()).is_empty());
    }
}
