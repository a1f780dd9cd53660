//! The machines view: one model measured on three machines (tests/fixtures/machines, made
//! by tests/fixtures/leaderboard/make.py), normalised to the fastest, in LEADERBOARD.md and
//! on the page.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_machines_view_compares_three_machines_against_the_fastest() {
    let out = tempfile::tempdir().unwrap();
    let machines = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machines");
    Command::cargo_bin("tpsbench")
        .unwrap()
        .arg("leaderboard")
        .arg(&machines)
        .arg("--out-dir")
        .arg(out.path())
        .assert()
        .success();
    let md = read(&out.path().join("LEADERBOARD.md"));
    let view = md
        .split("## Machines\n")
        .nth(1)
        .expect("a machines section");
    let table: Vec<&str> = view
        .lines()
        .filter(|l| l.starts_with("| fixture-"))
        .collect();
    // pp512: 1900, 640, 310 t/s; tg128 at each machine's fastest thread count: 74, 61, 38.
    assert_eq!(table.len(), 3, "{view}");
    assert!(table[0].starts_with("| fixture-server ") && table[0].contains("100 % · 1900 t/s"));
    assert!(table[1].starts_with("| fixture-desktop ") && table[1].contains("34 % · 640 t/s"));
    assert!(table[1].contains("82 % · 61.0 t/s"), "{}", table[1]);
    assert!(table[2].starts_with("| fixture-laptop ") && table[2].contains("16 % · 310 t/s"));
    let html = read(&out.path().join("index.html"));
    let section = html.split(r#"<section id="machines">"#).nth(1).unwrap();
    let section = section.split("</section>").next().unwrap();
    assert!(section.contains("SmolLM2-135M Q4_1: machines against the fastest"));
    assert!(!section.contains(r#"<g class="empty">"#));
    assert_eq!(
        section.matches(r#"<g class="bar""#).count(),
        2 * 6,
        "wide and narrow"
    );
}
