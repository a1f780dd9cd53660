//! docs/schema.md names every field the result file can hold: the keys of real result files
//! (the leaderboard fixtures, written by earlier versions, and a run with rounds made now
//! by the runner on llama.cpp) must each appear in a code span of the document. A
//! field added to the types without its line in the document fails here.

use std::collections::BTreeSet;

fn keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

/// Every word inside a `code span` of the document.
fn documented(doc: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for (i, span) in doc.split('`').enumerate() {
        if i % 2 == 1 {
            for w in span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                words.insert(w.to_string());
            }
        }
    }
    words
}

/// A run of two tests in 2 rounds on llama.cpp with a tiny model, as the runner writes it.
fn run_with_rounds() -> serde_json::Value {
    use tpsbench::engine::llama::LlamaEngine;
    use tpsbench::output::progress::NoProgress;
    use tpsbench::runner::{RunOptions, run, run_info};
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("tiny.gguf")).unwrap();
    tpsbench::gguf::writer::write_gguf(&mut f, &tpsbench::gguf::tiny::document(1)).unwrap();
    let toml = "[sweep]\nn_prompt=32\nn_gen=8\nrepetitions=3\nrounds=2\n\
                [[model]]\nname='m'\npath='tiny.gguf'\n";
    let path = dir.path().join("models.toml");
    std::fs::write(&path, toml).unwrap();
    let cfg = tpsbench::config::load(&path, 2).unwrap();
    let info = run_info(&cfg, vec![], String::new(), vec![]);
    let out = run(
        &LlamaEngine::new(false).unwrap(),
        info,
        &RunOptions::new(cfg, Some(dir.path().join("results"))),
        &mut NoProgress,
    )
    .unwrap();
    let text = std::fs::read_to_string(out.path.unwrap()).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_key_of_a_result_file_is_named_in_docs_schema_md() {
    let root = env!("CARGO_MANIFEST_DIR");
    let doc = std::fs::read_to_string(format!("{root}/docs/schema.md")).unwrap();
    let words = documented(&doc);
    let mut all = BTreeSet::new();
    keys(&run_with_rounds(), &mut all);
    let fixtures = format!("{root}/tests/fixtures/leaderboard");
    for e in std::fs::read_dir(&fixtures).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&p).unwrap();
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                keys(&v, &mut all);
            }
        }
    }
    assert!(
        all.contains("rounds") && all.contains("interval"),
        "{all:?}"
    );
    let missing: Vec<&String> = all.iter().filter(|k| !words.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "docs/schema.md does not name these result-file fields: {missing:?}"
    );
}
