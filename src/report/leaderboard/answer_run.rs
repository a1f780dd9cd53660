//! The answer at the end of a run (`tpsbench run`, `cargo bench`): the leaderboard's answer
//! over this run's file alone, when it measured several quantizations of one model.

use std::fmt::Write as _;
use std::path::Path;

use super::answer::{answers_with, identity_label, note, table};
use super::load::board_of;
use super::options::Exclude;
use crate::plan::TestKind;
use crate::record::{RunRecord, Status};

pub fn of_run(record: &RunRecord, path: &Path) -> Option<String> {
    // An answer needs two models (quantizations) with a decode rate; a sweep without them
    // (one model's many settings) needs no board, which holds a copy of every test.
    let decoded = crate::util::sorted_unique(
        (record.tests.iter())
            .filter(|t| t.status == Status::Ok && t.kind == TestKind::Tg)
            .map(|t| t.model.as_str()),
    );
    if decoded.len() < 2 {
        return None;
    }
    let b = board_of(std::iter::once((path, record)), &Exclude::default());
    let mut o = String::new();
    // Rows that one round leaves unpaired are judged against this machine's noise floor
    // when `tpsbench noise` stored one, else against the assumed floor.
    let floor = crate::report::compare::floor_for(
        None,
        Some(&crate::report::compare::machine_key(record)),
        Path::new(crate::report::compare::NOISE_DIR),
    );
    let answers = answers_with(&b, b.kld_budget(), &floor);
    for a in answers
        .iter()
        .filter(|a| a.rows.iter().filter(|r| r.decode.is_some()).count() >= 2)
    {
        let _ = writeln!(
            o,
            "\n## Which quantization? {}\n\n{}\n",
            identity_label(a),
            a.sentence
        );
        let _ = writeln!(o, "{}", table(a, "\u{a0}").markdown());
        let _ = writeln!(o, "{}", note(a));
    }
    (!o.is_empty()).then_some(o)
}
