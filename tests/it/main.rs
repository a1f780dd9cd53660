//! Every integration test in one binary, one module per theme (each was its own binary
//! before: `cargo test --release --test it -- served::` runs what `--test served` ran).
//! One binary links llama.cpp once instead of once per file, and `tpsbench synth` writes
//! each model once for all of them (`support::synth`).
//!
//! Nothing here needs a process of its own: no test changes the process's environment,
//! working directory or signal handlers (they set those on the child processes they start),
//! and the tests that call llama.cpp in this process (`ladder`, `serving`) already ran in
//! parallel with each other inside their own binaries. The gated tests read their variables
//! (TPSBENCH_VULKAN, TPSBENCH_REQUIRE_LLAMA_SERVER, TPSBENCH_SLURM_TEST,
//! TPSBENCH_REQUIRE_BROWSER) when they run and skip or fail as before; `library_ab`'s
//! static-build test is `cfg`-gated on the `dynamic-link` feature in place.
//!
//! Fixtures (result files, machine files, llama.cpp logs) are in tests/fixtures/.

mod support;

mod bad_input;
mod cli;
mod compare_scripts;
mod gpu_axes;
mod gpu_box;
mod gpu_session;
mod ladder;
mod leaderboard_browser;
mod leaderboard_machines;
mod library_ab;
mod merge;
mod moe_knobs;
mod monte_carlo;
mod publish;
mod quant;
mod results_dir;
mod schema_doc;
mod served;
mod serving;
mod setup_script;
mod slurm;
mod speculative;
mod speculative_eagle3;
mod speculative_mtp;
mod speculative_smollm2;
mod spine;
mod synth_models;
mod text_tokens;
mod tune;
mod tune_commands;
mod tune_goodput;
mod tune_goodput_served;
mod tune_placement;
mod tune_speculative;
mod vulkan;
