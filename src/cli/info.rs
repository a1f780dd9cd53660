//! `tpsbench info`: the machine, the llama.cpp build, SIMD, bandwidth, power, devices.
//! The facts are gathered once into [`MachineFacts`]; `--json` prints them as JSON and the
//! text is rendered from the same JSON, so the two cannot disagree.

use anyhow::Result;

use super::outcome::Outcome;
use crate::engine::llama;
use crate::record::facts::{MachineFacts, feature_map};
use crate::record::machine;
use crate::util::system;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Measure host memory bandwidth again (the figure kept is the highest on record).
    #[arg(long)]
    probe: bool,
}

pub(super) fn info(a: &Args) -> Result<Outcome> {
    llama::init(false).map_err(anyhow::Error::msg)?;
    let sys = machine::system();
    let system_info = llama::system_info();
    let probed = llama::cpu_features();
    let facts = MachineFacts {
        llama_cpp: machine::llama_build(system_info.clone()),
        host_bandwidth: machine::host_bandwidth(&sys, a.probe),
        tool: machine::tool(),
        cmake_flags: machine::cmake_flags(),
        cpu_features: feature_map(&probed, &system_info),
        simd_missing: (system::missing_simd(&probed).into_iter())
            .map(String::from)
            .collect(),
        power_source: crate::machine::energy::detect().map(|s| s.name()),
        gpus: crate::machine::nvml::Nvml::load().map_or_else(Vec::new, |n| n.facts()),
        devices: llama::devices(),
        system: sys,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&facts.to_json())?);
    } else {
        print!("{}", facts.to_text());
    }
    Ok(Outcome::Done)
}
