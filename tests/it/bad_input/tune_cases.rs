//! Bad input to a race (`tpsbench tune`, and `run` on a configuration with a `[tune]`
//! table): one line naming what is wrong, before anything is raced.

use std::ffi::OsString;
use std::path::Path;

use super::cases::{Case, SWEEP, case, run_args, run_with, tiny_bytes};

/// A `[serving]` table the goodput objective can load, less its SLO.
const GOODPUT_NO_SLO: &str = "[serving]\nn_prompt = 8\nn_gen = 4\narrival_rate = [4]\n";

/// `tpsbench tune` on the tiny model with `tune` as its `[tune]` table and `sweep` added to
/// the base sweep.
fn tune(d: &Path, sweep: &str, tune: &str) -> Vec<OsString> {
    let mut args = run_with(
        d,
        &format!("{SWEEP}{sweep}\n[tune]\n{tune}\n"),
        tiny_bytes(),
    );
    args[0] = "tune".into();
    args
}

/// `tpsbench tune` on the tiny model served by a llama-server tpsbench launches, with
/// `serving` and `tune` as those tables and `sweep` added to the base sweep.
fn tune_served(d: &Path, sweep: &str, serving: &str, tune: &str) -> Vec<OsString> {
    std::fs::write(d.join("tiny.gguf"), tiny_bytes()).unwrap();
    let config = d.join("models.toml");
    std::fs::write(
        &config,
        format!(
            "{SWEEP}{sweep}\n{serving}\n[[model]]\nname = \"tiny\"\npath = \"tiny.gguf\"\n\
             server = \"llama-server\"\n\n[tune]\n{tune}\n"
        ),
    )
    .unwrap();
    let mut args = run_args(d, &config);
    args[0] = "tune".into();
    args
}

/// `tpsbench run` on the same configuration.
fn run(d: &Path, sweep: &str, tune: &str) -> Vec<OsString> {
    run_with(
        d,
        &format!("{SWEEP}{sweep}\n[tune]\n{tune}\n"),
        tiny_bytes(),
    )
}

pub fn tune_cases() -> Vec<Case> {
    vec![
        case(
            "tune: a space the limits leave empty",
            |d| {
                tune(
                    d,
                    "n_ubatch = [32, 64]\n",
                    "objective = \"tg8\"\nmax_memory_gib = 0.000001",
                )
            },
            2,
            "objective tg8: the limits leave nothing to race among 2 candidates: memory excluded 2 (tiny: ",
        ),
        case(
            "tune: contradictory limits",
            |d| {
                tune(
                    d,
                    "",
                    "objective = \"tg8\"\nmax_memory_gib = 4\nmemory_margin = 0.2",
                )
            },
            2,
            "key `tune.memory_margin`: memory_margin applies to the host's RAM when max_memory_gib is not given",
        ),
        case(
            "tune: a limit nothing in the space measures",
            |d| tune(d, "", "objective = \"tg8\"\nmax_kld = 0.05"),
            2,
            "key `tune.max_kld`: max_kld limits a [[ladder]]'s variants by their KLD, and there is no [[ladder]] to measure it",
        ),
        case(
            "tune: an objective the space cannot measure",
            |d| tune(d, "", "objective = \"tg8@d1000000\""),
            2,
            "objective tg8@d1000000: the limits leave nothing to race among 1 candidate: objective excluded 1 (tiny holds a context of ",
        ),
        case(
            "tune: an objective that is no test",
            |d| tune(d, "", "objective = \"tokens\""),
            2,
            "key `tune.objective`: objective \"tokens\": expected \"tgN\", \"ppN\" or \"ppN+tgM\"",
        ),
        case(
            "tune: an unknown axis",
            |d| tune(d, "n_thread = [1, 2]\n", "objective = \"tg8\""),
            2,
            "key `sweep.n_thread`: unknown field `n_thread`, did you mean `n_threads`?",
        ),
        case(
            "tune: an unknown [tune] key",
            |d| tune(d, "", "objective = \"tg8\"\nmax_round = 3"),
            2,
            "key `tune.max_round`: unknown field `max_round`, did you mean `max_rounds`?",
        ),
        case(
            "tune: no [tune] table",
            |d| {
                let mut a = run_with(d, SWEEP, tiny_bytes());
                a[0] = "tune".into();
                a
            },
            2,
            "models.toml: no [tune] table: add one with an objective",
        ),
        case(
            "tune: --max-rounds 1",
            |d| {
                let mut a = tune(d, "", "objective = \"tg8\"");
                a.extend(["--max-rounds".into(), "1".into()]);
                a
            },
            2,
            "error: --max-rounds 1: must be between 2 and 10000",
        ),
        case(
            "tune: goodput without a [serving] table",
            |d| tune(d, "", "objective = \"goodput\""),
            2,
            "key `tune.objective`: objective \"goodput\" serves [serving]'s requests under its slo: add a [serving] table",
        ),
        case(
            "tune: the speculative objective without a [speculative] table",
            |d| tune(d, "", "objective = \"speculative\""),
            2,
            "key `tune.objective`: objective \"speculative\" races [speculative]'s drafter settings against plain decoding on its prompts: add a [speculative] table",
        ),
        case(
            "tune: a latency limit beside the speculative objective",
            |d| {
                std::fs::write(d.join("prompts.txt"), "a prompt to continue\n").unwrap();
                let spec = "[speculative]\ndataset = \"prompts.txt\"\ndrafters = [\"ngram-mod\"]\n";
                tune(d, spec, "objective = \"speculative\"\nmax_itl_ms = 20")
            },
            2,
            "objective \"speculative\" times whole generations of several prompts, not single tokens",
        ),
        case(
            "tune: goodput on a served model without a [serving] table",
            |d| tune_served(d, "", "", "objective = \"goodput\""),
            2,
            "key `tune.objective`: objective \"goodput\" serves [serving]'s requests under its slo: add a [serving] table",
        ),
        case(
            "tune: goodput on a launched llama-server with a setting it cannot take",
            |d| {
                let serving = format!("{GOODPUT_NO_SLO}slo = {{ ttft_ms = 500 }}\n");
                tune_served(
                    d,
                    "embeddings = true\n",
                    &serving,
                    "objective = \"goodput\"",
                )
            },
            2,
            "objective goodput races its llama-server over HTTP, and tpsbench cannot pass embeddings = true to llama-server",
        ),
        case(
            "tune: goodput without an SLO",
            |d| tune(d, GOODPUT_NO_SLO, "objective = \"goodput\""),
            2,
            "key `tune.objective`: objective \"goodput\" counts the requests that meet [serving] slo, and there is none",
        ),
        case(
            "tune: goodput at more than one load",
            |d| {
                let serving =
                    format!("{GOODPUT_NO_SLO}slo = {{ ttft_ms = 500 }}\n").replace("[4]", "[1, 2]");
                tune(d, &serving, "objective = \"goodput\"")
            },
            2,
            "objective \"goodput\" races every candidate at one load, and [serving] arrival_rate has 2 rates: give one",
        ),
        case(
            "tune: an SLO threshold of 0",
            |d| {
                let serving = format!("{GOODPUT_NO_SLO}slo = {{ ttft_ms = 0 }}\n");
                tune(d, &serving, "objective = \"goodput\"")
            },
            2,
            "key `serving.slo.ttft_ms`: 0 is not a threshold: give milliseconds above 0",
        ),
        case(
            "tune: a latency limit beside the goodput SLO",
            |d| {
                let serving = format!("{GOODPUT_NO_SLO}slo = {{ ttft_ms = 500 }}\n");
                tune(d, &serving, "objective = \"goodput\"\nmax_ttft_ms = 200")
            },
            2,
            "key `tune.max_ttft_ms`: the goodput objective's latencies are [serving] slo's; max_ttft_ms limits a tgN or ppN objective",
        ),
        case(
            "tune: a slots axis without the goodput objective",
            |d| tune(d, "", "objective = \"tg8\"\nslots = [2, 4]"),
            2,
            "key `tune.slots`: slots is the goodput objective's concurrency axis (sequences served at once); objective tg8 serves no requests",
        ),
        case(
            "tune: a latency limit of 0",
            |d| tune(d, "", "objective = \"tg8\"\nmax_itl_ms = 0"),
            2,
            "key `tune.max_itl_ms`: 0 is out of range: must be between ",
        ),
        case(
            "tune: a latency limit the objective does not measure",
            |d| tune(d, "", "objective = \"pp16\"\nmax_itl_ms = 20"),
            2,
            "key `tune.max_itl_ms`: max_itl_ms needs a decode objective \"tgN\" (its repetitions time N tokens one at a time); objective pp16 measures no inter-token latency",
        ),
        case(
            "tune: latency_quantile without a latency limit",
            |d| tune(d, "", "objective = \"tg8\"\nlatency_quantile = 0.5"),
            2,
            "key `tune.latency_quantile`: latency_quantile says which quantile max_ttft_ms or max_itl_ms limits, and neither is given",
        ),
        case(
            "run with [tune]: a space the limits leave empty",
            |d| {
                run(
                    d,
                    "n_ubatch = [32, 64]\n",
                    "objective = \"tg8\"\nmax_memory_gib = 0.000001",
                )
            },
            2,
            "objective tg8: the limits leave nothing to race among 2 candidates: memory excluded 2 (tiny: ",
        ),
        case(
            "run with [tune]: an option of the sweep",
            |d| {
                let mut a = run(d, "", "objective = \"tg8\"");
                a.extend(["--rounds".into(), "3".into()]);
                a
            },
            2,
            "error: --rounds does not apply to a race: ",
        ),
        case(
            "tune: a device limit on the CPU",
            |d| {
                tune(
                    d,
                    "",
                    "objective = \"tg8\"\nmax_device_memory_gib = { CPU = 4 }",
                )
            },
            2,
            "key `tune.max_device_memory_gib.CPU`: the CPU's memory is the host's: limit it with max_memory_gib",
        ),
        case(
            "tune: a device limit table naming no device",
            |d| tune(d, "", "objective = \"tg8\"\nmax_device_memory_gib = {}"),
            2,
            "key `tune.max_device_memory_gib`: the table names no device",
        ),
        case(
            "tune: a device limit out of range",
            |d| {
                tune(
                    d,
                    "",
                    "objective = \"tg8\"\nmax_device_memory_gib = { Vulkan0 = -1 }",
                )
            },
            2,
            "key `tune.max_device_memory_gib.Vulkan0`: -1 is out of range",
        ),
        case(
            "tune: a device limit on a device this build lacks",
            |d| {
                tune(
                    d,
                    "",
                    "objective = \"tg8\"\nmax_device_memory_gib = { CUDA0 = 8 }",
                )
            },
            2,
            "tune.max_device_memory_gib names CUDA0, which this build of llama.cpp does not have (it has no offload device)",
        ),
        case(
            "tune: bisect that is no boolean",
            |d| tune(d, "", "objective = \"tg8\"\nbisect = \"yes\""),
            2,
            "key `tune.bisect`: expected true or false, got string",
        ),
    ]
}
