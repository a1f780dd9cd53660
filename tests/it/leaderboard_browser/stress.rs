//! The page under load: a generated set of 50 machines × 10 quantizations × 2 models laid
//! out in the browser, with the same checks as the fixtures' page, and its size and build
//! time printed.

use super::*;

/// The stress set: `machines` result files, one per machine, each with `models` models in
/// `quants` quantizations (prefill pp512 and decode tg128, KLD on every variant). Machine
/// speeds spread over a factor of ten, so that a shared scale is visible.
fn stress_set(dir: &Path, machines: usize, quants: usize, models: usize) {
    const QUANTS: [(&str, f64, f64); 10] = [
        ("F16", 16.0, 0.0),
        ("Q8_0", 8.5, 0.0015),
        ("Q6_K", 6.6, 0.003),
        ("Q5_K_M", 5.7, 0.008),
        ("Q5_0", 5.5, 0.012),
        ("Q4_K_M", 4.9, 0.025),
        ("Q4_0", 4.5, 0.05),
        ("IQ4_NL", 4.5, 0.04),
        ("Q3_K_M", 3.9, 0.09),
        ("Q2_K", 3.0, 0.2),
    ];
    const MODELS: [(&str, &str, u64); 2] = [
        ("SmolLM2-135M", "llama", 134_515_008),
        ("Qwen2.5-0.5B", "qwen2", 494_032_768),
    ];
    let template: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures("leaderboard").join("ladder.json")).unwrap(),
    )
    .unwrap();
    let test_template = template["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == "tg128")
        .unwrap()
        .clone();
    std::fs::create_dir_all(dir).unwrap();
    for m in 0..machines {
        let speed = 0.3 + 9.7 * (m as f64 / (machines.max(2) - 1) as f64);
        let mut run = template["run"].clone();
        let host = format!("stress-{m:02}");
        run["system"]["hostname"] = host.clone().into();
        run["system"]["cpu_model"] = format!("Stress CPU {}", 1000 + m * 37).into();
        run["devices"][0]["description"] = run["system"]["cpu_model"].clone();
        run["tool"]["git_commit"] = "stress".into();
        run["started_at"] = format!("2026-02-01T{:02}:{:02}:00Z", m / 60, m % 60).into();
        let mut ms = Vec::new();
        let mut ts = Vec::new();
        for (name, arch, params) in &MODELS[..models] {
            for (q, bpw, kld) in &QUANTS[..quants] {
                let full = format!("{name}-{q}");
                let size = (*params as f64 * bpw / 8.0) as u64;
                let mut model = template["models"][0].clone();
                model["name"] = full.clone().into();
                model["path"] = format!("models/{full}.gguf").into();
                model["model_filename"] = format!("{full}.gguf").into();
                model["architecture"] = (*arch).into();
                model["quantization"] = (*q).into();
                model["model_size"] = size.into();
                model["file_size"] = size.into();
                model["model_n_params"] = (*params).into();
                model["model_type"] = format!("{arch} {q}").into();
                model["provenance"] = Value::Null;
                model["quality"]["reference"] = format!("{name}-F16").into();
                model["quality"]["kld_mean"] = (*kld).into();
                model["quality"]["kld_mean_uncertainty"] = (kld / 20.0).into();
                ms.push(model);
                for (test, np, ng, base) in [("pp512", 512, 0, 600.0), ("tg128", 0, 128, 60.0)] {
                    // Smaller files decode faster; the model size scales it all.
                    let v = base * speed * (16.0 / bpw).sqrt() * 134e6 / *params as f64;
                    let mut t = test_template.clone();
                    t["id"] = format!("{full}/{q}/{test}/t=2").into();
                    t["identity"] = format!("stress-{full}-{test}").into();
                    t["model"] = full.clone().into();
                    t["test"] = test.into();
                    t["kind"] = if ng > 0 { "tg" } else { "pp" }.into();
                    t["n_prompt"] = np.into();
                    t["n_gen"] = ng.into();
                    t["model_size"] = size.into();
                    t["model_n_params"] = (*params).into();
                    t["model_filename"] = format!("{full}.gguf").into();
                    // Summaries from the samples, as a run computes them: readers recompute
                    // them and refuse a file that disagrees (record::verify). No stats or
                    // rounds: one launch, and the page draws no interval.
                    let ns = |x: f64| ((np + ng) as f64 / x * 1e9) as u64;
                    let samples_ns = [ns(v * 0.98), ns(v), ns(v * 1.02)];
                    let rates = tpsbench::stats::rates_per_second(np + ng, &samples_ns);
                    let ns_f: Vec<f64> = samples_ns.iter().map(|&x| x as f64).collect();
                    t["avg_ts"] = tpsbench::stats::mean(&rates).into();
                    t["median_ts"] = tpsbench::stats::median(&rates).into();
                    t["stddev_ts"] = tpsbench::stats::stddev(&rates).into();
                    t["samples_ts"] = serde_json::json!(rates);
                    t["avg_ns"] = (tpsbench::stats::mean(&ns_f).round() as u64).into();
                    t["stddev_ns"] = (tpsbench::stats::stddev(&ns_f).round() as u64).into();
                    t["samples_ns"] = serde_json::json!(samples_ns);
                    t["stats"] = Value::Null;
                    t["rounds"] = serde_json::json!([]);
                    t["test_time"] = run["started_at"].clone();
                    ts.push(t);
                }
            }
        }
        let file = serde_json::json!({"schema_version": 3, "run": run, "models": ms, "tests": ts});
        std::fs::write(
            dir.join(format!("{host}.json")),
            serde_json::to_string(&file).unwrap(),
        )
        .unwrap();
    }
}

#[test]
fn a_stress_set_of_50_machines_keeps_the_answer_first_one_scale_per_model_and_a_bounded_navigation()
{
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stress");
    stress_set(&input, 50, 10, 2);
    let out = dir.path().join("page");
    let started = std::time::Instant::now();
    let html = build_page(std::slice::from_ref(&input), &out);
    let built = started.elapsed();
    let size = std::fs::metadata(&html).unwrap().len();
    let md = std::fs::metadata(out.join("LEADERBOARD.md")).unwrap().len();
    eprintln!(
        "stress set (50 machines × 10 quantizations × 2 models, 2,000 measurements): \
         index.html {size} bytes ({:.2} MiB), LEADERBOARD.md {md} bytes, built in {:.2} s \
         (the whole tpsbench leaderboard command)",
        size as f64 / (1u64 << 20) as f64,
        built.as_secs_f64()
    );
    if let Some(keep) = std::env::var_os("TPSBENCH_STRESS_OUT") {
        // For screenshots (scripts/leaderboard-screenshot): the page, kept where asked.
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&html, keep.join("index.html")).unwrap();
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches(r#"<table class="sortable grid""#).count(), 4);
    for width in [1400, 390] {
        let r = layout(&browser, &html, width);
        assert_clean(&r);
        assert_answer_in_first_view(&r, width);
        assert_eq!(r["grids"], 4, "a grid per model and test: {r}");
        assert!(
            r["scaled"].as_u64().unwrap() >= 4,
            "charts on shared scales: {r}"
        );
    }
}
