use super::*;
use crate::config::parse;
use std::path::Path;

const CONFIG: &str = r#"
[sweep]
n_prompt = [16]
n_gen = [4]
n_gpu_layers = [0, 99]
repetitions = 2

[[model]]
name = "m"
path = "m.gguf"

[serving]
modes = ["parallel"]
n_parallel = [1, 2]
n_prompt = 8
n_gen = 4

[[ladder]]
name = "l"
base = "base.gguf"
types = ["Q8_0", "Q4_0"]
"#;

fn facts(synthetic: bool) -> Facts {
    Facts {
        models: vec![ModelFacts {
            label: "F32".into(),
            sha256: "aa".into(),
        }],
        ladders: vec![LadderFacts {
            sha256: "bb".into(),
            synthetic,
            files: vec![],
        }],
        dataset_sha256: None,
        speculative_sha256: None,
        text_sha256: None,
    }
}

fn plan_of(src: &str, synthetic: bool, filters: &[String]) -> Plan {
    let cfg = parse(Path::new("models.toml"), src, 2).unwrap();
    build(&cfg, &facts(synthetic), filters)
}

#[test]
fn every_kind_of_a_configuration_is_in_one_plan_with_models_for_the_variants() {
    let p = plan_of(CONFIG, false, &[]);
    let names: Vec<&str> = p.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["m", "l-Q8_0", "l-Q4_0"]);
    let kinds: Vec<TestKind> = p.tests.iter().map(|t| t.kind).collect();
    use TestKind::*;
    // model m: ngl 0 (pp, tg, parallel B1, B2: serving uses the first ngl), then ngl 99;
    // each variant: the same two load keys, then its quality test
    assert_eq!(
        kinds,
        [
            Pp, Tg, Parallel, Parallel, Pp, Tg, Pp, Tg, Pp, Tg, Quality, Pp, Tg, Pp, Tg, Quality
        ]
    );
    let q = p.tests.iter().find(|t| t.kind == Quality).unwrap();
    assert_eq!(q.id, "l-Q8_0/Q8_0/quality");
    assert_eq!(q.load_key(), None, "quality tests load their own model");
    assert!(matches!(
        p.models[1].source,
        ModelSource::Variant { ladder: 0, .. }
    ));
    let mut ids: Vec<&str> = p.tests.iter().map(|t| t.id.as_str()).collect();
    let mut identities: Vec<&str> = p.tests.iter().map(|t| t.identity.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    identities.sort_unstable();
    identities.dedup();
    assert_eq!(ids.len(), p.tests.len(), "ids are unique");
    assert_eq!(identities.len(), p.tests.len(), "identities are unique");
}

#[test]
fn a_synthetic_base_gets_no_quality_tests_and_filters_keep_matching_ids() {
    let p = plan_of(CONFIG, true, &[]);
    assert!(p.tests.iter().all(|t| t.kind != TestKind::Quality));
    let p = plan_of(CONFIG, false, &["quality".to_string()]);
    assert_eq!(p.tests.len(), 2);
    assert_eq!(
        p.models.len(),
        3,
        "the models stay; only tests are filtered"
    );
}

#[test]
fn identities_of_model_tests_are_unchanged_and_variant_keys_come_from_base_and_type() {
    let p = plan_of(CONFIG, false, &[]);
    let pp = &p.tests[0];
    assert_eq!(pp.identity, test_identity("aa", &pp.params));
    assert_eq!(p.models[1].key, sha256_hex(b"bb\nQ8_0"));
    let variant_pp = p.tests.iter().find(|t| t.model == 1).unwrap();
    assert_eq!(
        variant_pp.identity,
        test_identity(&p.models[1].key, &variant_pp.params)
    );
}

#[test]
fn the_plan_hash_changes_with_settings_tests_and_model_files_only() {
    let cfg = parse(Path::new("models.toml"), CONFIG, 2).unwrap();
    let h = |c: &Config, f: &Facts| build(c, f, &[]).hash(&c.settings);
    let base = h(&cfg, &facts(false));
    assert_eq!(base, h(&cfg, &facts(false)), "deterministic");
    let mut reps = cfg.clone();
    reps.settings.repetitions = 3;
    assert_ne!(
        base,
        h(&reps, &facts(false)),
        "repetitions are part of the plan"
    );
    let mut other = facts(false);
    other.models[0].sha256 = "ab".into();
    assert_ne!(base, h(&cfg, &other), "another model file");
    let fewer = parse(
        Path::new("models.toml"),
        &CONFIG.replace("n_parallel = [1, 2]", "n_parallel = [1]"),
        2,
    )
    .unwrap();
    assert_ne!(base, h(&fewer, &facts(false)), "another test list");
}

#[test]
fn a_test_listed_twice_gets_a_numbered_copy_with_its_own_identity() {
    let src = CONFIG.replace("n_prompt = [16]", "n_prompt = [16, 16, 8]");
    let p = plan_of(&src, false, &[]);
    let m: Vec<&PlannedTest> = p.tests.iter().filter(|t| t.model == 0).take(4).collect();
    let ids: Vec<&str> = m.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "m/F32/pp16/ngl=0",
            "m/F32/pp16/ngl=0/copy=2",
            "m/F32/pp8/ngl=0",
            "m/F32/tg4/ngl=0"
        ]
    );
    assert_eq!(
        m[0].identity,
        test_identity("aa", &m[0].params),
        "the first copy keeps its identity"
    );
    assert_ne!(m[1].identity, m[0].identity);
    assert_eq!(m[1].params, m[0].params, "the copy measures the same thing");
    let mut identities: Vec<&str> = p.tests.iter().map(|t| t.identity.as_str()).collect();
    identities.sort_unstable();
    identities.dedup();
    assert_eq!(identities.len(), p.tests.len(), "identities are unique");
    let variant: Vec<&str> = p
        .tests
        .iter()
        .filter(|t| t.model == 1)
        .map(|t| t.id.as_str())
        .take(2)
        .collect();
    assert_eq!(
        variant,
        ["l-Q8_0/Q8_0/pp16/ngl=0", "l-Q8_0/Q8_0/pp16/ngl=0/copy=2"]
    );
}

#[test]
fn a_served_only_model_keeps_its_place_but_gets_no_in_process_test() {
    let src = CONFIG.replace(
        "[[model]]\nname = \"m\"",
        "[[model]]\nname = \"api\"\nendpoint = \"http://127.0.0.1:8080/v1\"\n\n[[model]]\nname = \"m\"",
    );
    let p = plan_of(&src, false, &[]);
    assert_eq!(
        p.models[0].name, "api",
        "indices match the [[model]] entries"
    );
    let served = |t: &&crate::plan::PlannedTest| matches!(&t.detail, Detail::Serving(s) if s.transport == crate::plan::serving::Transport::Http);
    assert!(
        p.tests.iter().filter(|t| t.model == 0).all(|t| served(&t)),
        "only served tests for the served-only model"
    );
    let with_file = plan_of(CONFIG, false, &[]);
    let in_process = p.tests.iter().filter(|t| !served(t)).count();
    assert_eq!(in_process, with_file.tests.len());
}

/// A drafter setting listed twice (`draft_n_gpu_layers = [-0, 0]`) made two speculative tests
/// with one id, which resuming and merging would take for one.
#[test]
fn a_drafter_setting_listed_twice_gets_a_numbered_copy() {
    let text = include_str!(
        "../../../fuzz/regressions/models_toml/crash-57f5895e0aef8193242beae5b83c25a0f2567607"
    );
    let cfg = parse(Path::new("fuzz/models.toml"), text, 2).unwrap();
    let p = build(&cfg, &facts(false), &[]);
    let spec: Vec<&PlannedTest> = p
        .tests
        .iter()
        .filter(|t| t.kind == TestKind::Spec)
        .collect();
    assert!(!spec.is_empty());
    let mut keys: Vec<(usize, &str)> = spec.iter().map(|t| (t.model, t.id.as_str())).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), spec.len(), "ids are unique");
    let mut identities: Vec<&str> = spec.iter().map(|t| t.identity.as_str()).collect();
    identities.sort_unstable();
    identities.dedup();
    assert_eq!(identities.len(), spec.len(), "identities are unique");
    assert!(
        spec.iter().any(|t| t.id.ends_with("/dngl0/copy=2")),
        "{:?}",
        keys
    );
}

#[test]
fn text_tests_are_named_in_their_ids_and_their_identities_hold_the_texts_hash() {
    let src = "[sweep]\nn_prompt = 64\nn_gen = 0\ntokens = ['random', 'text']\n\
               text = 'p.txt'\n[[model]]\nname = 'm'\npath = 'm.gguf'\n";
    let cfg = parse(Path::new("models.toml"), src, 2).unwrap();
    let with = |text: &str| {
        let mut f = facts(false);
        f.text_sha256 = Some(text.into());
        build(&cfg, &f, &[])
    };
    let p = with("t1");
    let ids: Vec<&str> = p.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["m/F32/pp64", "m/F32/pp64/tokens=text"]);
    let (random, text) = (&p.tests[0], &p.tests[1]);
    assert_eq!(
        random.identity,
        test_identity("aa", &random.params),
        "a random-token test keeps the identity it always had"
    );
    assert_ne!(text.identity, test_identity("aa", &text.params));
    let q = with("t2");
    assert_eq!(q.tests[0].identity, random.identity);
    assert_ne!(
        q.tests[1].identity, text.identity,
        "another text, another test"
    );
    let json = serde_json::to_value(&text.params).unwrap();
    assert_eq!(json["tokens"], "text");
    assert!(
        serde_json::to_value(&random.params)
            .unwrap()
            .get("tokens")
            .is_none()
    );
}
