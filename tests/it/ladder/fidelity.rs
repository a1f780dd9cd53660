//! tpsbench's KLD figures against the pinned llama-perplexity's (built by
//! `scripts/reference-tools --perplexity` into the per-user cache; the test prints SKIPPED
//! without it unless TPSBENCH_REQUIRE_LLAMA_PERPLEXITY=1, which scripts/test sets): the
//! reference tpsbench stores is read by `llama-perplexity --kl-divergence`, and a base file
//! llama-perplexity writes is read by tpsbench (`reference_logits`); both give the same
//! figures at the precision llama-perplexity prints.

use std::process::Command;

use super::*;

fn tool() -> Option<PathBuf> {
    let found = tpsbench::engine::endpoint::launch::pinned_llama_server()
        .map(|p| p.with_file_name("llama-perplexity"))
        .filter(|p| p.is_file());
    if found.is_none() {
        let why = "no llama-perplexity (run scripts/reference-tools --perplexity)";
        let required = std::env::var("TPSBENCH_REQUIRE_LLAMA_PERPLEXITY").as_deref() == Ok("1");
        assert!(!required, "{why}");
        eprintln!("SKIPPED the KLD fidelity test: {why}");
    }
    found
}

/// llama-perplexity's output for `args`, stdout and stderr together. It logs through
/// llama.cpp's asynchronous common log, which a process ending may cut short before its
/// last lines: it runs again, up to 10 times, until the output holds `until`.
fn perplexity(tool: &Path, args: &[&std::ffi::OsStr], until: &str) -> String {
    let mut log = String::new();
    for _ in 0..10 {
        let out = Command::new(tool).args(args).output().unwrap();
        log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "llama-perplexity failed:\n{log}");
        if log.contains(until) {
            break;
        }
    }
    log
}

/// The first number after `label` on its line of llama-perplexity's statistics.
fn printed(log: &str, label: &str) -> String {
    log.lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|rest| {
            rest.trim_start_matches([' ', ':'])
                .split_whitespace()
                .next()
        })
        .map(|s| s.trim_end_matches('%').to_string())
        .unwrap_or_else(|| panic!("no {label:?} in llama-perplexity's output:\n{log}"))
}

/// tpsbench's figures at llama-perplexity's precision equal its printed ones.
fn assert_same(log: &str, q: &Value) {
    let f = |k: &str| q[k].as_f64().unwrap_or_else(|| panic!("no {k} in {q}"));
    let k = |p: &str| q["kld_percentiles"][p].as_f64().unwrap();
    let pct = |x: f64| 100.0 * x;
    let cases = [
        ("Mean    KLD", format!("{:.6}", f("kld_mean"))),
        ("Maximum KLD", format!("{:.6}", k("max"))),
        ("99.9%   KLD", format!("{:.6}", k("p99_9"))),
        ("99.0%   KLD", format!("{:.6}", k("p99"))),
        ("Median  KLD", format!("{:.6}", k("median"))),
        ("Minimum KLD", format!("{:.6}", k("min"))),
        (
            "Mean PPL(Q)/PPL(base)",
            format!("{:.6}", q["ppl_ratio"][0].as_f64().unwrap()),
        ),
        (
            "Mean ln(PPL(Q)/PPL(base))",
            format!("{:.6}", f("ln_ppl_ratio")),
        ),
        ("RMS Δp", format!("{:.3}", pct(f("rms_dp")))),
        ("Same top p", format!("{:.3}", pct(f("same_top_p")))),
        (
            "Cor(ln(PPL(Q)), ln(PPL(base)))",
            format!("{:.2}", pct(q["ln_ppl_correlation"].as_f64().unwrap())),
        ),
    ];
    for (label, ours) in cases {
        let theirs = printed(log, label);
        // Sums in another order may move the last printed digit by one.
        let (a, b): (f64, f64) = (ours.parse().unwrap(), theirs.parse().unwrap());
        let decimals = ours.len() - ours.find('.').unwrap() - 1;
        let unit = 10f64.powi(-(decimals as i32));
        assert!(
            (a - b).abs() <= 1.01 * unit,
            "{label}: tpsbench {ours}, llama-perplexity {theirs}"
        );
    }
}

fn quality_of(v: &Value, model: &str) -> Value {
    let m = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == model);
    m.unwrap_or_else(|| panic!("no {model} in {v}"))["quality"].clone()
}

fn ladder(dir: &Path, extra: &str) -> Value {
    let cfg = ladder_config(dir, "tiny.gguf", r#"["F32", "Q4_0"]"#, extra);
    let src = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        src.replace("ctx = 64\nchunks = 3", "ctx = 128\nchunks = 4"),
    )
    .unwrap();
    std::fs::write(dir.join("eval.txt"), eval_text(700)).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("results"));
    tpsbench()
        .args(["ladder", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--results-dir")
        .arg(dir.join("results"))
        .assert()
        .success();
    result(dir)
}

#[test]
fn tpsbench_and_the_pinned_llama_perplexity_read_each_others_reference_and_agree() {
    let Some(tool) = tool() else { return };
    let dir = tempfile::tempdir().unwrap();
    synth(dir.path(), "tiny.gguf", &[]);
    let v = ladder(dir.path(), "");
    let path = |name: &str| {
        let m = v["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name);
        PathBuf::from(m.unwrap()["path"].as_str().unwrap())
    };
    let (f32_, q4) = (path("tiny-F32"), path("tiny-Q4_0"));
    let stored: Vec<PathBuf> = std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "logits"))
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");

    // llama-perplexity reads the reference tpsbench stored.
    let a = |s: &'static str| std::ffi::OsStr::new(s);
    let log = perplexity(
        &tool,
        &[
            a("-m"),
            q4.as_os_str(),
            a("--kl-divergence-base"),
            stored[0].as_os_str(),
        ]
        .into_iter()
        .chain(["--kl-divergence", "-c", "128", "-t", "1"].map(a))
        .collect::<Vec<_>>(),
        "Same top p:",
    );
    assert_same(&log, &quality_of(&v, "tiny-Q4_0"));

    // tpsbench reads the base file llama-perplexity writes (-b 128: one chunk a decode).
    let base = dir.path().join("ppl.logits");
    let text = dir.path().join("eval.txt");
    let args = [a("-m"), f32_.as_os_str(), a("-f"), text.as_os_str()];
    let args = args
        .into_iter()
        .chain([a("--kl-divergence-base"), base.as_os_str()]);
    let flags = ["-c", "128", "-b", "128", "--chunks", "4", "-t", "1"].map(a);
    perplexity(&tool, &args.chain(flags).collect::<Vec<_>>(), "");
    let theirs = std::fs::read(&base).unwrap();
    let ours = std::fs::read(&stored[0]).unwrap();
    assert_eq!(theirs.len(), ours.len(), "the same layout");
    assert_eq!(
        theirs[..20 + 4 * 4 * 128],
        ours[..20 + 4 * 4 * 128],
        "the same tokens"
    );
    // The same llama.cpp on the same tokens, one chunk a decode: the same bytes.
    assert!(theirs == ours, "the same rows");
    let v2 = ladder(dir.path(), "reference_logits = \"ppl.logits\"");
    let q = quality_of(&v2, "tiny-Q4_0");
    assert!(
        q["text_source"]
            .as_str()
            .unwrap()
            .starts_with("kl-divergence-base:")
    );
    assert_same(&log, &q);
}
