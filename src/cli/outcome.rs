//! What a command ended with, apart from the commands so that they and `cli::main` (which
//! dispatches to them) do not import each other.

/// What a command ended with; the binary's `main` exits with its code, the discriminant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything asked was done.
    Done = 0,
    /// Done, with something to act on: tests failed, a significant regression, a check
    /// that differs.
    Failed = 1,
    /// Bad input, said in one line on stderr already.
    Refused = 2,
    /// Stopped by Ctrl-C after the current test; the file can be resumed.
    Interrupted = 130,
}

impl Outcome {
    pub fn exit_code(self) -> i32 {
        self as i32
    }

    /// The outcome of a report command that returns its exit code (0, 1 or 2).
    pub(super) fn of_code(code: i32) -> Outcome {
        match code {
            0 => Outcome::Done,
            1 => Outcome::Failed,
            130 => Outcome::Interrupted,
            _ => Outcome::Refused,
        }
    }
}
