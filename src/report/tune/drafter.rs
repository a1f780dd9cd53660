//! A drafted winner's commands: the llama-server flags of its drafter setting,
//! and the `[speculative]` table that measures it again. llama-bench has no drafter, so its
//! line stays the configuration's plain decoding, and the answer says so.

use crate::config::speculative::Drafter;
use crate::record::{RunRecord, TestRecord, speculative::Speculative};
use crate::util::shell_quote as quoted;

/// The winner's drafter setting, when it has one (not a plain candidate's `none`).
fn drafted(w: &TestRecord) -> Option<&Speculative> {
    w.speculative.as_deref().filter(|s| !s.is_plain())
}

/// The draft model's path: the result file's model with the draft's SHA-256 (a ladder
/// variant, or a file the run read), else the name the record gives it.
fn draft_path(record: &RunRecord, s: &Speculative) -> Option<String> {
    let name = s.draft.clone()?;
    let by_sha = s.draft_sha256.as_deref().and_then(|sha| {
        (record.models.iter())
            .find(|m| m.sha256 == sha)
            .map(|m| m.path.clone())
    });
    Some(by_sha.unwrap_or(name))
}

/// llama-server's flags for the winner's drafter, and a line on what they do not carry.
pub(super) fn server_flags(record: &RunRecord, w: &TestRecord) -> Option<(String, Option<String>)> {
    let s = drafted(w)?;
    let mut f = format!(" --spec-type {}", s.drafter);
    let mut note = None;
    if s.drafter.needs_draft() || s.drafter == Drafter::DraftMtp {
        if let Some(p) = draft_path(record, s) {
            f.push_str(&format!(" -md {}", quoted(&p)));
        }
        f.push_str(&format!(" --spec-draft-n-max {}", s.draft_max));
        if s.draft_min > 0 {
            f.push_str(&format!(" --spec-draft-n-min {}", s.draft_min));
        }
        if s.p_min > 0.0 {
            f.push_str(&format!(" --spec-draft-p-min {}", s.p_min));
        }
        if s.draft.is_some() && s.draft_n_gpu_layers >= 0 {
            f.push_str(&format!(" -ngld {}", s.draft_n_gpu_layers));
        }
    } else if s.drafter == Drafter::NgramMod {
        f.push_str(&format!(" --spec-ngram-mod-n-max {}", s.draft_max));
    } else {
        // tpsbench's loop caps every drafter's drafts at K; llama-server's n-gram lookups
        // draft their own value length instead.
        note = Some(format!(
            "(tpsbench capped {}'s drafts at K = {}; llama-server drafts its own length: set \
             it with --spec-{}-size-m)",
            s.drafter, s.draft_max, s.drafter
        ));
    }
    Some((f, note))
}

/// The line under llama-bench's for a drafted winner, and the `[speculative]` table that
/// measures its drafter against plain decoding with `tpsbench run`.
pub(super) fn bench_note_and_table(record: &RunRecord, w: &TestRecord) -> Option<(String, String)> {
    let s = drafted(w)?;
    let note = format!(
        "(llama-bench has no drafter: this line measures the configuration's plain decoding; \
         {} measured {:.2} t/s plain in the race)\n",
        w.id, s.plain_ts
    );
    let draft = (draft_path(record, s))
        .map(|p| format!("draft = [{p:?}]\n"))
        .unwrap_or_default();
    let mut table = format!(
        "\n[speculative]\ntargets = [{:?}]\ndataset = {:?}\nn_prompts = {}\ndrafters = [{:?}]\n\
         {draft}draft_max = [{}]\n",
        w.model,
        s.prompts.dataset,
        s.prompts.n_prompts,
        s.drafter.name(),
        s.draft_max
    );
    if s.draft_min > 0 {
        table.push_str(&format!("draft_min = [{}]\n", s.draft_min));
    }
    if s.p_min > 0.0 {
        table.push_str(&format!("p_min = [{}]\n", s.p_min));
    }
    Some((note, table))
}
