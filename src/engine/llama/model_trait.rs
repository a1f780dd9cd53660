//! [`LlamaModel`] as the engine's [`Model`]: its timed sessions, serving, placement and the
//! notes of what it did not honour. Apart from `model.rs` because a session is made from the
//! model (`session.rs` names it) and the model hands sessions out.

use super::model::LlamaModel;
use crate::engine::placement::Placement;
use crate::engine::{EngineError, Model, ModelInfo, Session};
use crate::plan::TestParams;

impl Model for LlamaModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn session(&self, p: &TestParams) -> Result<Box<dyn Session + '_>, EngineError> {
        Ok(Box::new(super::session::LlamaSession::new(self, p)?))
    }

    fn serving(&self) -> Option<&dyn crate::engine::ServingModel> {
        Some(self)
    }

    fn placement(&self, params: &TestParams) -> Option<Placement> {
        match &*self.placement.lock().ok()? {
            Some((p, placement)) if p == params => placement.clone(),
            _ => None,
        }
    }

    fn speculative(
        &self,
        p: &TestParams,
        s: &crate::plan::speculative::SpecTest,
        draft: Option<&std::path::Path>,
        n_ctx: u32,
    ) -> Result<Box<dyn crate::engine::speculative::SpecSession + '_>, EngineError> {
        Ok(Box::new(super::spec::LlamaSpecSession::new(
            self, p, s, draft, n_ctx,
        )?))
    }

    fn knob_notes(&self, p: &TestParams) -> Vec<String> {
        let context = super::knobs::context_notes(&p.knobs);
        self.notes.iter().cloned().chain(context).collect()
    }
}
