//! Bad values of the llama-bench parameters of `config::knobs`' table: refused before any
//! test, one line naming the key (and, for what this build lacks, listing what it has).

use super::cases::{Case, case, sweep};

pub fn knob_cases() -> Vec<Case> {
    vec![
        case(
            "override pattern not a regular expression",
            |d| sweep(d, "tensor_buft_overrides = \"blk.(0=CPU\""),
            2,
            "models.toml:7: key `sweep.tensor_buft_overrides`: \"blk.(0\" is not a valid regular expression",
        ),
        case(
            "override to a buffer type this build lacks",
            |d| sweep(d, "tensor_buft_overrides = \"exps=CUDA0\""),
            2,
            "model \"tiny\": key `tensor_buft_overrides`: unknown buffer type \"CUDA0\"; this build has CPU",
        ),
        case(
            "device this build lacks",
            |d| sweep(d, "devices = \"Vulkan0/CPU\""),
            2,
            "model \"tiny\": key `devices`: no device \"Vulkan0\"; this build has CPU",
        ),
        case(
            "tensor_split longer than the devices",
            |d| sweep(d, "tensor_split = \"3/1\""),
            2,
            "model \"tiny\": key `tensor_split`: \"3.00/1.00\" has 2 proportions, but this build has 0 devices to split over (CPU)",
        ),
        case(
            "tensor_split negative",
            |d| sweep(d, "tensor_split = \"1/-1\""),
            2,
            "models.toml:7: key `sweep.tensor_split`: \"1/-1\": a tensor split's proportions must be 0 or more, got -1",
        ),
        case(
            "n_cpu_moe below 0",
            |d| sweep(d, "n_cpu_moe = -1"),
            2,
            "models.toml:7: key `sweep.n_cpu_moe`: -1 is out of range: must be between 0 and 100000",
        ),
    ]
}
