//! One module per kind of test: how a test of that kind is measured and what its record
//! holds. Consecutive tests that share state (a serving group's context) share a
//! [`serving::Group`].

pub mod bench;
pub mod error;
pub(crate) mod quality;
pub(crate) mod serving;
pub(crate) mod speculative;

pub use error::{KindError, NoModel};

use crate::plan::serving::Transport;
use crate::plan::{Detail, PlannedTest};

/// What tests of one [`serving::Group`] have in common: an in-process serving group, the
/// one server of a model's served tests, or a server of a test's own (a `tune` candidate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchKey {
    Group(usize),
    ModelServer(usize),
    OwnServer(usize),
}

/// Consecutive tests with equal keys share one [`serving::Group`]; `None`: the test stands
/// alone.
pub(crate) fn batch_key(t: &PlannedTest) -> Option<BatchKey> {
    match &t.detail {
        Detail::Serving(s) if s.transport != Transport::Http => Some(BatchKey::Group(s.group)),
        Detail::Serving(s) if s.own_server => Some(BatchKey::OwnServer(s.group)),
        Detail::Serving(s) => Some(BatchKey::ModelServer(s.model)),
        _ => None,
    }
}
