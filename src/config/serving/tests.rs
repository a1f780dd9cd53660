use super::*;
use std::path::Path;

/// The `[serving]` of `src` with a model after it (a table without models measures nothing).
fn p(src: &str) -> Result<Option<ServingConfig>, ConfigError> {
    let src = format!("{src}\n[[model]]\nname = 'm'\npath = 'm.gguf'\n");
    crate::config::parse(Path::new("dir/models.toml"), &src, 2).map(|c| c.serving)
}

#[test]
fn no_table_means_no_serving_tests_and_an_empty_table_gets_defaults() {
    assert_eq!(p("").unwrap(), None);
    let c = p("[serving]\n").unwrap().unwrap();
    assert_eq!(c.modes, vec![Mode::Request, Mode::Parallel]);
    assert_eq!((c.n_prompt, c.n_gen), (128, 64));
    assert_eq!(c.n_parallel, vec![1, 2, 4, 8]);
    assert_eq!(c.shared_prompt, vec![false]);
    assert_eq!((c.slots, c.repetitions, c.n_requests), (8, 3, 8));
    assert_eq!((c.temperature, c.seed, c.kv_unified), (0.0, None, false));
}

#[test]
fn every_key_is_read() {
    let c = p(r#"
[serving]
modes = ["parallel", "arrival"]
n_prompt = 64
n_gen = 16
n_parallel = [1, 3]
shared_prompt = [false, true]
kv_unified = true
repetitions = 2
n_requests = 5
arrival_rate = [0.5, 2]
slots = 2
dataset = "p.jsonl"
chat_template = true
temperature = 0.7
seed = 9
targets = { per_request_ts = 20, ttft_ms = 250.5, percentile = 99 }
price_per_hour = 1.25
"#)
    .unwrap()
    .unwrap();
    assert_eq!(c.modes, vec![Mode::Parallel, Mode::Arrival]);
    assert_eq!(c.n_parallel, vec![1, 3]);
    assert_eq!(c.shared_prompt, vec![false, true]);
    assert_eq!(c.arrival_rate, vec![0.5, 2.0]);
    assert_eq!(c.dataset.as_deref(), Some(Path::new("dir/p.jsonl")));
    assert_eq!((c.slots, c.seed, c.temperature), (2, Some(9), 0.7));
    let t = c.targets.unwrap();
    assert_eq!(
        (t.per_request_ts, t.ttft_ms, t.percentile),
        (Some(20.0), Some(250.5), 99)
    );
    assert_eq!(c.price_per_hour, Some(1.25));
}

fn err(src: &str) -> String {
    p(src).unwrap_err().to_string()
}

#[test]
fn mistakes_name_file_line_and_key() {
    let e = err("[serving]\nn_parallel = [1, 0]\n");
    assert!(
        e.starts_with("dir/models.toml:2: key `serving.n_parallel`"),
        "{e}"
    );
    let e = err("[serving]\n\nbogus = 1\n");
    assert!(
        e.contains(":3: key `serving.bogus`") && e.contains("unknown field"),
        "{e}"
    );
    let e = err("[serving]\nmodes = [\"arrival\"]\n");
    assert!(
        e.contains("key `serving.modes`") && e.contains("arrival_rate"),
        "{e}"
    );
    let e = err("[serving]\narrival_rate = -1\n");
    assert!(e.contains(":2: key `serving.arrival_rate`"), "{e}");
    let e = err("[serving]\ntargets = { ttft = 3 }\n");
    assert!(e.contains("key `serving.targets.ttft`"), "{e}");
    let e = err("[serving]\nchat_template = true\n");
    assert!(e.contains("key `serving.chat_template`"), "{e}");
    let e = err("[serving]\nn_gen = \"many\"\n");
    assert!(
        e.contains(":2: key `serving.n_gen`: expected an integer"),
        "{e}"
    );
}

#[test]
fn slo_and_goodput_are_read_with_defaults() {
    let c = p("[serving]\nmodes = ['goodput']\nn_requests = 12\nslo = { ttft_ms = 500, itl_ms = 50, e2e_ms = 5000, attainment = 0.95 }\n")
        .unwrap()
        .unwrap();
    assert_eq!(c.modes, vec![Mode::Goodput]);
    assert_eq!(Mode::Goodput.name(), "goodput");
    assert_eq!(
        c.slo,
        Some(Slo {
            ttft_ms: Some(500.0),
            itl_ms: Some(50.0),
            e2e_ms: Some(5000.0),
            attainment: 0.95
        })
    );
    assert_eq!(
        c.goodput,
        GoodputSearch {
            min_rate: 0.25,
            max_rate: 64.0,
            steps: 6,
            max_seconds: 600.0,
            n_requests: 12
        },
        "n_requests defaults to [serving] n_requests"
    );
    let c = p("[serving]\nslo = { itl_ms = 40 }\ngoodput = { min_rate = 1, max_rate = 8.5, steps = 3, max_seconds = 60, n_requests = 4 }\n")
        .unwrap()
        .unwrap();
    let s = c.slo.unwrap();
    assert_eq!((s.ttft_ms, s.itl_ms, s.attainment), (None, Some(40.0), 0.9));
    let g = c.goodput;
    assert_eq!(
        (g.min_rate, g.max_rate, g.steps, g.max_seconds, g.n_requests),
        (1.0, 8.5, 3, 60.0, 4)
    );
    assert_eq!(p("[serving]\n").unwrap().unwrap().slo, None);
}

#[test]
fn the_percentile_form_sets_thresholds_and_the_attainment() {
    let s = |slo: &str| {
        p(&format!("[serving]\nslo = {slo}\n"))
            .unwrap()
            .unwrap()
            .slo
            .unwrap()
    };
    let a = s("{ ttft_p90_ms = 500, itl_p90_ms = 50 }");
    assert_eq!(
        (a.ttft_ms, a.itl_ms, a.e2e_ms),
        (Some(500.0), Some(50.0), None)
    );
    assert_eq!(a.attainment, 0.9);
    assert_eq!(s("{ e2e_p99_ms = 8000 }").attainment, 0.99);
    assert_eq!(s("{ ttft_p5_ms = 1 }").attainment, 0.05);
    let b = s("{ ttft_p95_ms = 200, itl_ms = 30, attainment = 0.95 }");
    assert_eq!(
        (b.ttft_ms, b.itl_ms, b.attainment),
        (Some(200.0), Some(30.0), 0.95)
    );
}

#[test]
fn slo_and_goodput_mistakes_name_file_line_and_key() {
    for (src, start) in [
        (
            "modes = ['goodput']",
            "dir/models.toml:2: key `serving.modes`: the goodput mode needs `slo`",
        ),
        (
            "slo = { ttft_p90_ms = 500, itl_p99_ms = 50 }",
            "dir/models.toml:2: key `serving.slo.ttft_p90_ms`: p90 disagrees with itl_p99_ms (p99)",
        ),
        (
            "slo = { ttft_p90_ms = 500, attainment = 0.8 }",
            "dir/models.toml:2: key `serving.slo.attainment`: attainment 0.8 disagrees with \
             ttft_p90_ms (p90)",
        ),
        (
            "slo = { ttft_ms = 5, ttft_p90_ms = 500 }",
            "dir/models.toml:2: key `serving.slo.ttft_p90_ms`: the ttft threshold is given twice",
        ),
        (
            "slo = { attainment = 0.5 }",
            "dir/models.toml:2: key `serving.slo`: an SLO needs at least one threshold",
        ),
        (
            "slo = { ttft_ms = 5, attainment = 1.5 }",
            "dir/models.toml:2: key `serving.slo.attainment`: 1.5 is not a share of requests",
        ),
        (
            "slo = { ttft_ms = 5, attainment = 0 }",
            "dir/models.toml:2: key `serving.slo.attainment`: 0 is not a share of requests",
        ),
        (
            "slo = { itl_ms = -3 }",
            "dir/models.toml:2: key `serving.slo.itl_ms`: -3 is not a threshold",
        ),
        (
            "slo = { ttft_p100_ms = 5 }",
            "dir/models.toml:2: key `serving.slo.ttft_p100_ms`: unknown field `ttft_p100_ms`",
        ),
        (
            "slo = { ttft_p_ms = 5 }",
            "dir/models.toml:2: key `serving.slo.ttft_p_ms`: unknown field `ttft_p_ms`",
        ),
        (
            "slo = { itl_p9_p9_ms = 5 }",
            "dir/models.toml:2: key `serving.slo.itl_p9_p9_ms`: unknown field `itl_p9_p9_ms`",
        ),
        (
            "slo = { ttft_p123_ms = 5 }",
            "dir/models.toml:2: key `serving.slo.ttft_p123_ms`: unknown field `ttft_p123_ms`",
        ),
        (
            "slo = { tpot_p90_ms = 5 }",
            "dir/models.toml:2: key `serving.slo.tpot_p90_ms`: unknown field `tpot_p90_ms`",
        ),
        (
            "slo = { tftt_ms = 5 }",
            "dir/models.toml:2: key `serving.slo.tftt_ms`: unknown field `tftt_ms`, did you mean \
             `ttft_ms`?",
        ),
        (
            "goodput = { min_rate = 0 }",
            "dir/models.toml:2: key `serving.goodput.min_rate`: 0 is not a rate",
        ),
        (
            "goodput = { min_rate = 10, max_rate = 5 }",
            "dir/models.toml:2: key `serving.goodput.max_rate`: 5 must be above min_rate (10)",
        ),
        (
            "goodput = { max_rate = 2e6 }",
            "dir/models.toml:2: key `serving.goodput.max_rate`: 2000000 must be above min_rate",
        ),
        (
            "goodput = { steps = 31 }",
            "dir/models.toml:2: key `serving.goodput.steps`: 31 is out of range: must be between \
             1 and 30",
        ),
        (
            "goodput = { steps = 0 }",
            "dir/models.toml:2: key `serving.goodput.steps`: 0 is out of range",
        ),
        (
            "goodput = { max_seconds = 0 }",
            "dir/models.toml:2: key `serving.goodput.max_seconds`: 0 is not a time budget",
        ),
        (
            "goodput = { n_requests = 0 }",
            "dir/models.toml:2: key `serving.goodput.n_requests`: 0 is out of range",
        ),
    ] {
        let e = err(&format!("[serving]\n{src}\n"));
        assert!(e.starts_with(start), "{src}:\n{e}\nwanted\n{start}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}
