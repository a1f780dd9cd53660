//! Why a serving test could not be measured: the line the record stores as its error.

use crate::engine::EngineError;

#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("this engine cannot run serving tests")]
    NoServing,
    #[error("every request needs a prompt and at least one token")]
    EmptyRequest,
    #[error("a shared prompt must be the same for every sequence")]
    SharedPromptDiffers,
    #[error("one arrival time and one sampler per request")]
    Unpaired,
    #[error("{slots} sequences cannot decode together in batches of {n_batch} (n_batch)")]
    SlotsOverBatch { slots: u32, n_batch: usize },
    #[error("a request needs {need} tokens of context but the model was trained for {trained}")]
    TooLong { need: u32, trained: u32 },
    #[error("the goodput test needs [serving] slo")]
    NoSlo,
    /// A prompt file's or a server's failure, in its own words.
    #[error("{0}")]
    Refused(String),
}
