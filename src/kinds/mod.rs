//! One module per kind of test: how a test of that kind is measured and what its record
//! holds. Consecutive tests that share state (a serving group's context) share a
//! [`Shared`], made by [`open`].

pub mod bench;
pub mod error;
pub(crate) mod quality;
pub(crate) mod serving;
pub(crate) mod speculative;

pub use error::{KindError, NoModel};

use crate::config::Config;
use crate::engine::{Engine, Model};
use crate::plan::{Detail, PlannedTest};
use crate::serving::dataset::PromptFile;

/// What consecutive tests of one batch share.
pub enum Shared<'m> {
    Nothing,
    Serving(serving::Group<'m>),
}

/// The state `first` opens for its batch (tests with the same [`batch_key`]).
pub fn open<'m>(
    engine: &'m dyn Engine,
    config: &Config,
    prompts: Option<&PromptFile>,
    model: Result<&'m dyn Model, NoModel>,
    first: &PlannedTest,
    results: Option<&std::path::Path>,
) -> Shared<'m> {
    match &first.detail {
        Detail::Serving(s) => {
            Shared::Serving(serving::open(engine, config, prompts, model, s, results))
        }
        _ => Shared::Nothing,
    }
}

/// What tests of one [`Shared`] have in common: an in-process serving group, the one server
/// of a model's served tests, or a server of a test's own (a `tune` candidate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchKey {
    Group(usize),
    ModelServer(usize),
    OwnServer(usize),
}

/// Consecutive tests with equal keys share one [`Shared`]; `None`: the test stands alone.
pub(crate) fn batch_key(t: &PlannedTest) -> Option<BatchKey> {
    match &t.detail {
        Detail::Serving(s) if s.transport == crate::plan::serving::Transport::Http => {
            Some(if s.own_server {
                BatchKey::OwnServer(s.group)
            } else {
                BatchKey::ModelServer(s.model)
            })
        }
        Detail::Serving(s) => Some(BatchKey::Group(s.group)),
        _ => None,
    }
}
