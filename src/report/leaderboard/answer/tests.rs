use super::text::NO_REPACK;
use super::*;
use crate::ladder::table::DEFAULT_KLD_BUDGET;
use crate::report::leaderboard::testdata::{file, model, quality, run, test};
use crate::report::leaderboard::{Exclude, load::board};
use serde_json::json;

/// A ladder of quantizations of one model on one machine: (quant, decode t/s, KLD).
fn ladder(rows: &[(&str, f64, Option<f64>)]) -> Board {
    ladder_at_load(rows, 0.1)
}

/// [`ladder`] with the run started at a 1-minute load average of `load`.
fn ladder_at_load(rows: &[(&str, f64, Option<f64>)], load: f64) -> Board {
    let models = rows
        .iter()
        .map(|(q, _, _)| model(&format!("SmolLM2-135M-{q}"), q))
        .collect();
    let tests = rows
        .iter()
        .flat_map(|(q, ts, _)| {
            let name = format!("SmolLM2-135M-{q}");
            [
                test(&name, 512, 0, 0, 2, ts * 4.0, "2026-01-01T10:00:00Z"),
                test(&name, 0, 128, 0, 2, *ts, "2026-01-01T10:00:01Z"),
            ]
            .map(|mut t| {
                let v = t.avg_ts.unwrap();
                t.samples_ts = vec![v * 0.98, v, v * 1.02];
                t
            })
        })
        .collect();
    let klds: Vec<Option<f64>> = rows.iter().map(|r| r.2).collect();
    board(
        vec![file(
            "ladder.json",
            run("vm", "2026-01-01T10:00:00Z", models, tests),
            |v| {
                v["run"]["load_average"] = json!([load, load, load]);
                for (i, k) in klds.iter().enumerate() {
                    if let Some(k) = k {
                        let mut q = quality(*k);
                        q["kld_mean_uncertainty"] = json!(k / 20.0);
                        v["models"][i]["quality"] = q;
                    }
                }
            },
        )],
        &Exclude::default(),
    )
}

#[test]
fn the_quantization_suffix_is_not_part_of_the_model_identity() {
    assert_eq!(base_name("SmolLM2-135M-Q4_K_M", "Q4_K_M"), "SmolLM2-135M");
    assert_eq!(base_name("SmolLM2-135M.q8_0", "Q8_0"), "SmolLM2-135M");
    assert_eq!(base_name("SmolLM2-135M", "Q4_1"), "SmolLM2-135M");
    assert_eq!(base_name("Q4_0", "Q4_0"), "Q4_0");
    let b = ladder(&[("Q8_0", 130.0, Some(0.002)), ("Q4_K_M", 160.0, Some(0.03))]);
    let a = answers(&b, DEFAULT_KLD_BUDGET);
    assert_eq!(a.len(), 1, "one table for the model on the machine");
    assert_eq!(a[0].model, "SmolLM2-135M");
    assert_eq!(a[0].architecture.as_deref(), Some("llama"));
    assert_eq!(a[0].decode_test.as_deref(), Some("tg128"));
    assert_eq!(a[0].prefill_test.as_deref(), Some("pp512"));
}

#[test]
fn the_fastest_within_the_budget_is_named_with_the_variants_it_ties_with() {
    // testdata gives each test 3 samples around its rate (sd 2%) in one launch: nothing
    // pairs them, so they are judged against the assumed 7% noise between launches. 161 and
    // 160 tie; 90 is established slower (ln 1.79 = 0.58, z ≈ 5.8); 230 is outside a budget of
    // 0.05 and established faster than all.
    let b = ladder(&[
        ("Q2_K", 230.0, Some(0.15)),
        ("Q4_K_M", 161.0, Some(0.028)),
        ("Q5_K_M", 160.0, Some(0.026)),
        ("Q8_0", 90.0, Some(0.0015)),
    ]);
    let a = &answers(&b, 0.05)[0];
    let quants: Vec<&str> = a.rows.iter().map(|r| r.quant.as_str()).collect();
    assert_eq!(
        quants,
        ["Q2_K", "Q4_K_M", "Q5_K_M", "Q8_0"],
        "fastest first"
    );
    assert_eq!(
        a.sentence,
        "For SmolLM2-135M on vm, the fastest quantization within a KLD budget of 0.05 nats \
         is Q4_K_M, tied with Q5_K_M. Of these: lowest KLD Q5_K_M, smallest Q4_K_M. Not \
         established apart: `tpsbench run --rounds auto` settles more."
    );
    // The front is a set: Q2_K (fastest), Q4_K_M and Q5_K_M (tied on speed, KLD apart
    // only within their errors), Q8_0 (closest). The tied pair names each other.
    let front: Vec<(&str, bool, Vec<String>)> = a
        .rows
        .iter()
        .map(|r| (r.quant.as_str(), r.front, r.tied_with.clone()))
        .collect();
    assert_eq!(
        front,
        [
            ("Q2_K", true, vec![]),
            ("Q4_K_M", true, vec!["Q5_K_M".to_string()]),
            ("Q5_K_M", true, vec!["Q4_K_M".to_string()]),
            ("Q8_0", true, vec![]),
        ]
    );
    let t = table(a, " ");
    assert_eq!(t.headers[..2], ["quant", "decode tg128 t/s"]);
    let col = t
        .headers
        .iter()
        .position(|h| h == "best trade-off")
        .unwrap();
    assert_eq!(t.rows[1][col].text, "★ front, ties Q5_K_M");
    assert_eq!(t.rows[0][col].text, "★ front");
}

#[test]
fn the_budget_decides_and_no_variant_within_it_is_said() {
    let b = ladder(&[("Q2_K", 230.0, Some(0.15)), ("Q8_0", 130.0, Some(0.002))]);
    let a = answers(&b, 0.2);
    assert!(
        a[0].sentence.ends_with("budget of 0.2 nats is Q2_K."),
        "{}",
        a[0].sentence
    );
    let a = answers(&b, 0.001);
    assert_eq!(
        a[0].sentence,
        "For SmolLM2-135M on vm, no quantization meets a KLD budget of 0.001 nats \
         (the lowest KLD is Q8_0's, 0.0020)."
    );
    // A variant slower by more than the intervals is dominated: off the front.
    let b = ladder(&[("Q4_0", 200.0, Some(0.01)), ("Q4_1", 130.0, Some(0.02))]);
    let a = &answers(&b, 0.05)[0];
    assert_eq!((a.rows[0].front, a.rows[1].front), (true, false));
    let b = ladder(&[("Q4_0", 200.0, None), ("Q4_1", 199.0, None)]);
    let a = &answers(&b, 0.05)[0];
    assert!(
        a.sentence.contains("no quantization has a KLD measurement")
            && a.sentence
                .contains("the fastest decode is Q4_0, tied with Q4_1. Not established apart"),
        "{}",
        a.sentence
    );
    assert!(
        !table(a, " ")
            .headers
            .contains(&"best trade-off".to_string())
    );
}

#[test]
fn intervals_say_what_they_cover_and_bits_per_weight_are_the_real_ones() {
    let b = ladder(&[("Q4_K_M", 160.0, Some(0.03))]);
    let a = &answers(&b, 0.05)[0];
    let d = a.rows[0].decode.as_ref().unwrap();
    assert_eq!(d.covers.as_deref(), Some("1 launch"));
    assert!(d.figure.lo < 160.0 && d.figure.hi > 160.0, "{d:?}");
    assert!(
        note(a).contains("mean with its 95% interval over 1 launch"),
        "{}",
        note(a)
    );
    // Without models[].bits_per_weight: size × 8 / parameters of the test's model.
    let t = &b.entries[0].test;
    let want = t.model_size.unwrap() as f64 * 8.0 / t.model_n_params.unwrap() as f64;
    assert!((a.rows[0].bits_per_weight.unwrap() - want).abs() < 1e-9);
    // With it (from the tensor types), that one.
    let mut b = b;
    b.entries
        .iter_mut()
        .for_each(|e| e.model.bits_per_weight = Some(6.17));
    assert_eq!(answers(&b, 0.05)[0].rows[0].bits_per_weight, Some(6.17));
    let t = table(a, "\u{a0}");
    let kld = t.headers.iter().position(|h| h == "KLD ± se").unwrap();
    assert_eq!(t.rows[0][kld].text, "0.0300\u{a0}±\u{a0}0.0015");
    assert!(!t.rows[0][1].text.contains(' '), "no break inside a figure");
}

#[test]
fn rows_whose_intervals_cover_another_level_are_named_in_the_note() {
    let b = ladder(&[("Q4_K_M", 160.0, Some(0.03)), ("Q8_0", 130.0, Some(0.002))]);
    let mut a = answers(&b, 0.05).remove(0);
    a.rows[0].decode.as_mut().unwrap().covers = Some("3 rounds".into());
    a.rows[0].prefill.as_mut().unwrap().covers = Some("3 rounds".into());
    a.rows.push(Row {
        quant: "F16".into(),
        ..a.rows[0].clone()
    });
    let n = note(&a);
    assert!(
        n.starts_with("t/s: mean with its 95% interval over 3 rounds (Q8_0: 1 launch)"),
        "{n}"
    );
}

/// A placement with `repacked` MiB of weights in llama.cpp's CPU_REPACK buffer.
fn placement(repacked: u64) -> crate::engine::placement::Placement {
    use crate::engine::placement::{Buffer, Placement};
    let mut buffers = vec![Buffer {
        kind: "model".into(),
        name: "CPU_Mapped".into(),
        bytes: 90 << 20,
    }];
    if repacked > 0 {
        buffers.push(Buffer {
            kind: "model".into(),
            name: "CPU_REPACK".into(),
            bytes: repacked << 20,
        });
    }
    Placement {
        layers_offloaded: 0,
        layers_total: 31,
        devices: vec![],
        buffers,
        kv_cells: None,
        experts: Vec::new(),
        overrides: Vec::new(),
        mismatch: Vec::new(),
        fit: None,
    }
}

#[test]
fn a_file_that_is_mostly_another_type_and_a_prefill_gap_without_repacked_weights_are_named() {
    // (quant, prefill t/s, repacked MiB): Q5_K_M runs at half the others' prefill and got
    // no repacked weights, as on the published SmolLM2 ladder; F16 got none either but is
    // not slow, so it is not marked.
    let rows = [
        ("Q4_0", 790.0, 57),
        ("Q4_K_M", 700.0, 8),
        ("Q2_K", 740.0, 43),
        ("F16", 560.0, 0),
        ("Q5_K_M", 303.0, 0),
    ];
    let models = rows
        .iter()
        .map(|(q, _, _)| model(&format!("SmolLM2-135M-{q}"), q))
        .collect();
    let tests = rows
        .iter()
        .flat_map(|&(q, pp, mib)| {
            let name = format!("SmolLM2-135M-{q}");
            [
                test(&name, 512, 0, 0, 2, pp, "2026-01-01T10:00:00Z"),
                test(&name, 0, 128, 0, 2, pp / 10.0, "2026-01-01T10:00:01Z"),
            ]
            .map(|mut t| {
                t.placement = Some(placement(mib));
                t
            })
        })
        .collect();
    let b = board(
        vec![file(
            "ladder.json",
            run("vm", "2026-01-01T10:00:00Z", models, tests),
            |v| {
                v["models"][1]["tensor_types"] = json!([
                    {"type": "Q5_0", "share": 0.71}, {"type": "Q8_0", "share": 0.29}
                ]);
                v["models"][2]["tensor_types"] = json!([{"type": "Q2_K", "share": 1.0}]);
            },
        )],
        &Exclude::default(),
    );
    let a = answers(&b, DEFAULT_KLD_BUDGET).remove(0);
    let quants: Vec<&str> = a.rows.iter().map(|r| r.quant.as_str()).collect();
    assert!(quants.contains(&"Q4_K_M (mostly Q5_0)"), "{quants:?}");
    assert!(quants.contains(&"Q2_K"), "a file as named keeps its name");
    let marked: Vec<&str> = a
        .rows
        .iter()
        .filter(|r| r.unrepacked_gap)
        .map(|r| r.quant.as_str())
        .collect();
    assert_eq!(marked, ["Q5_K_M"]);
    let n = note(&a);
    assert!(
        n.contains(
            "no repack: Q5_K_M prefills far below the others' with no repacked weights (0 MiB;"
        ),
        "{n}"
    );
    assert!(n.contains("holds 8–57 MiB for other rows"), "{n}");
    let t = table(&a, " ");
    let slow = t.rows.iter().find(|r| r[0].text == "Q5_K_M").unwrap();
    assert_eq!(slow[2].badges, [NO_REPACK]);
    // The detail table names the file as it is too.
    let es: Vec<&Entry> = b.entries.iter().collect();
    let d = crate::report::leaderboard::table::detail(&es);
    assert!(d.rows.iter().any(|r| r[0].text == "Q4_K_M (mostly Q5_0)"));
}

#[test]
fn a_busy_machine_gets_no_verdict_and_names_no_winner() {
    let rows = [("Q4_0", 200.0, Some(0.01)), ("Q8_0", 100.0, Some(0.002))];
    let a = &answers(&ladder_at_load(&rows, 2.5), 0.05)[0];
    assert!(
        a.sentence
            .contains("no verdict: Q4_0 and Q8_0 were measured on a busy machine")
            && a.sentence.contains("`scripts/bench` waits for one"),
        "{}",
        a.sentence
    );
    assert!(!a.sentence.contains("fastest"), "{}", a.sentence);
    assert!(a.rows.iter().all(|r| !r.front && r.tied_with.is_empty()));
    // The same rows on a quiet machine: Q4_0, twice as fast, is the answer.
    let a = &answers(&ladder_at_load(&rows, 0.2), 0.05)[0];
    assert!(
        a.sentence.ends_with("budget of 0.05 nats is Q4_0."),
        "{}",
        a.sentence
    );
}

#[test]
fn files_of_one_model_meet_by_identity_whatever_models_toml_named_them() {
    let mut b = ladder(&[("Q8_0", 130.0, Some(0.002)), ("Q4_K_M", 160.0, Some(0.03))]);
    for e in b.entries.iter_mut().filter(|e| e.quant == "Q4_K_M") {
        e.test.model = "my-smol-Q4_K_M".into();
    }
    assert_eq!(
        answers(&b, DEFAULT_KLD_BUDGET).len(),
        2,
        "named apart, no identity"
    );
    for e in b.entries.iter_mut() {
        e.model.identity = Some("0123456789abcdef".into());
    }
    let a = answers(&b, DEFAULT_KLD_BUDGET);
    assert_eq!(a.len(), 1, "one model by identity");
    assert_eq!(a[0].rows.len(), 2);
}
