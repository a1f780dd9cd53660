//! What an answer is made of: its rows, the answer, how its decode rates were resolved.

use crate::stats::{resolve::Rule, ties::Figure};

/// A rate with its 95% interval and what the interval covers ("1 launch", "3 rounds").
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    pub figure: Figure,
    pub covers: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The quantization as the file really is ("Q4_K_M (mostly Q5_0)").
    pub quant: String,
    pub quant_name: String,
    pub backend: String,
    pub badges: Vec<String>,
    pub bits_per_weight: Option<f64>,
    pub size: Option<u64>,
    pub decode: Option<Rate>,
    pub prefill: Option<Rate>,
    pub kld: Option<(f64, Option<f64>)>,
    pub kld_p999: Option<f64>,
    /// % of the roofline, implausible (≥ 100%), estimated from the size.
    pub roofline: Option<(f64, bool, bool)>,
    pub front: bool,
    pub tied_with: Vec<String>,
    pub repacked: Option<u64>,
    pub unrepacked_gap: bool,
    /// Rows of one file with rounds are compared paired by round.
    pub decode_rounds: Vec<f64>,
    pub decode_file: Option<std::path::PathBuf>,
    pub auto_max_rounds: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub model: String,
    pub architecture: Option<String>,
    pub machine: usize,
    pub machine_key: String,
    pub decode_test: Option<String>,
    pub prefill_test: Option<String>,
    pub rows: Vec<Row>,
    pub sentence: String,
    pub rule: Rule,
    pub open: Vec<String>,
}

/// The resolution of the decode rates (indices into the rows).
pub struct Resolved {
    pub rule: Rule,
    /// Rows measured on a busy machine: then no winner is named.
    pub busy: Vec<usize>,
    pub best: Option<usize>,
    pub best_ties: Vec<usize>,
    pub open_names: Vec<String>,
}

/// "A", "A and B", "A, B and C".
pub fn and_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [a] => a.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
