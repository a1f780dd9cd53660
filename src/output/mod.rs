//! What the user sees while a run goes on: progress and the estimated time left, on stderr.

pub mod progress;
