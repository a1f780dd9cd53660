//! What an answer is made of: its rows (one per quantization, with their rates), the
//! answer itself, and how its decode rates were resolved. Apart from `answer`, which
//! computes them, so that `text`, which words them, reads these without reading `answer`.

use crate::stats::resolve::Rule;
use crate::stats::ties::Figure;

/// A rate with its 95% interval and what the interval covers ("1 launch", "3 rounds").
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    pub figure: Figure,
    /// None when no interval could be computed (a single sample).
    pub covers: Option<String>,
}

/// One quantization of the model on the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The quantization as the file really is ("Q4_K_M (mostly Q5_0)").
    pub quant: String,
    /// The quantization's name alone, as the filters select it.
    pub quant_name: String,
    /// The backends the row was measured with (`tests[].backends`).
    pub backend: String,
    /// "synthetic", then the plausibility flags of its decode and prefill rows.
    pub badges: Vec<String>,
    /// Real bits per weight: models[].bits_per_weight, else size × 8 / parameters.
    pub bits_per_weight: Option<f64>,
    pub size: Option<u64>,
    pub decode: Option<Rate>,
    pub prefill: Option<Rate>,
    /// KLD mean and its standard error.
    pub kld: Option<(f64, Option<f64>)>,
    /// % of the decode bandwidth roofline, whether it is implausible (≥ 100%), and whether
    /// it is a lower bound estimated from the size (the file records no roofline).
    pub roofline: Option<(f64, bool, bool)>,
    /// On the Pareto front of decode speed against KLD (ties kept).
    pub front: bool,
    /// Other front rows whose decode rates tie with this one.
    pub tied_with: Vec<String>,
    /// Bytes of weights llama.cpp repacked for the CPU in the prefill test (`CPU_REPACK`),
    /// when its placement is recorded.
    pub repacked: Option<u64>,
    /// Prefill far below the table's (under 70% of the median) with no repacked weights,
    /// where faster rows have some: what explains the gap.
    pub unrepacked_gap: bool,
    /// The decode test's round medians (empty for one round), its result file and its
    /// run's auto budget: rows of one file with rounds are compared paired by round.
    pub decode_rounds: Vec<f64>,
    pub decode_file: Option<std::path::PathBuf>,
    pub auto_max_rounds: Option<u32>,
}

/// The answer for one model on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The model's name without its quantization suffix.
    pub model: String,
    pub architecture: Option<String>,
    /// Index into `Board::machines`.
    pub machine: usize,
    /// The machine's fingerprint: what the rows' permalinks are made from.
    pub machine_key: String,
    pub decode_test: Option<String>,
    pub prefill_test: Option<String>,
    /// Fastest decode first.
    pub rows: Vec<Row>,
    pub sentence: String,
    /// How the decode ties were judged, with the rounds behind them.
    pub rule: Rule,
    /// The comparisons the sentence and the front depend on that are not established.
    pub open: Vec<String>,
}

/// The answer's resolution over the rows with a decode rate (indices into all the rows).
pub struct Resolved {
    pub rule: Rule,
    /// The rows (with a decode rate) measured on a busy machine: when any is, the answer
    /// names no winner.
    pub busy: Vec<usize>,
    /// The fastest within the budget and the rows it ties with (indices into the rows).
    pub best: Option<usize>,
    pub best_ties: Vec<usize>,
    /// "Q4_K_M vs Q8_0": comparisons the answer depends on, not established.
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
