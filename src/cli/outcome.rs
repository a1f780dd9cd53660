//! What a command ended with, apart from the commands so that they and `cli::main` (which
//! dispatches to them) do not import each other.

/// What a command ended with; the binary's `main` exits with its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything asked was done: exit 0.
    Done,
    /// Done, with something to act on: tests failed, a significant regression, a check
    /// that differs: exit 1.
    Failed,
    /// Bad input, said in one line on stderr already: exit 2.
    Refused,
    /// Stopped by Ctrl-C after the current test; the file can be resumed: exit 130.
    Interrupted,
}

impl Outcome {
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Done => 0,
            Outcome::Failed => 1,
            Outcome::Refused => 2,
            Outcome::Interrupted => 130,
        }
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
