use super::*;

fn p(src: &str) -> Result<Option<ServingConfig>, ConfigError> {
    parse(Path::new("dir/models.toml"), src)
}

#[test]
fn no_table_means_no_serving_tests_and_an_empty_table_gets_defaults() {
    assert_eq!(p("[[model]]\nname='m'\npath='m'\n").unwrap(), None);
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
