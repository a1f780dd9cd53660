//! speculative tests: one drafter setting against plain decoding on the same
//! target context, greedy, after real prompts. Each round generates every prompt plain and
//! speculative (the order alternating by round), so the speedup is paired by round; the
//! outputs are compared token for token (greedy speculative decoding must reproduce plain
//! decoding exactly).

use crate::config::speculative::Drafter;
use crate::engine::Model;
use crate::engine::speculative::{Generation, SpecSession};
use crate::kinds::error::KindError::{self, Refused};
use crate::output::progress::Progress;
use crate::plan::speculative::SpecTest;
use crate::record::TestRecord;
use crate::record::speculative::{Position, SpecPrompts, SpecRound, Speculative};
use crate::serving::dataset::{PromptFile, Sampled as Job};

mod files;

pub use files::{DraftFile, Target, mtp_bytes, refusal};

/// The prompts of a test: ShareGPT sampled as vLLM samples it, a prompt file in order.
fn jobs(m: &dyn Model, pf: &PromptFile, s: &SpecTest) -> Result<Vec<Job>, KindError> {
    let sm = (m.serving())
        .ok_or_else(|| Refused("this engine has no tokenizer for the prompts".into()))?;
    let tokenize = |t: &str| sm.tokenize(t, true, false);
    let n = s.n_prompts as usize;
    let jobs: Vec<Job> = if pf.sharegpt {
        crate::serving::dataset::sample(&pf.prompts, n, s.seed, s.n_gen, tokenize)?
    } else {
        let mut v = Vec::new();
        for (index, p) in pf.prompts.iter().take(n).enumerate() {
            let tokens = tokenize(&p.text)?;
            if tokens.len() >= 2 {
                let n_gen = p.max_tokens.unwrap_or(s.n_gen).min(s.n_gen);
                v.push(Job {
                    index,
                    tokens,
                    n_gen,
                });
            }
        }
        v
    };
    if jobs.is_empty() {
        return Err(Refused(format!(
            "{}: no prompt of at least 2 tokens{}",
            pf.name,
            if pf.sharegpt {
                " within vLLM's limits (4 to 1024 prompt tokens, 2048 in all)"
            } else {
                ""
            }
        )));
    }
    Ok(jobs)
}

/// Measures `s` on model `m` into `rec`; returns the progress line.
pub fn run(
    m: &dyn Model,
    prompts: Option<&PromptFile>,
    s: &SpecTest,
    draft: Option<DraftFile>,
    target: Target,
    rec: &mut TestRecord,
    progress: &mut dyn Progress,
) -> String {
    match measure(m, prompts, s, draft, target, rec, progress) {
        Ok(line) => line,
        Err(e) => {
            rec.fail(e.to_string());
            format!("failed: {}", rec.error.as_deref().unwrap_or_default())
        }
    }
}

/// The record's note when the target or the draft has random weights (`tpsbench synth`):
/// acceptance then says nothing of a trained model, while the costs are real.
fn random_weights(drafter: Drafter, target: bool, draft: Option<&DraftFile>) -> Option<String> {
    let draft = draft.is_some_and(|d| d.synthetic);
    let what = match (target, draft) {
        (true, _) if drafter == Drafter::DraftMtp => "the target and its MTP layers have",
        (true, true) => "the target and the draft have",
        (true, false) => "the target has",
        (false, true) => "the draft has",
        (false, false) => return None,
    };
    Some(format!(
        "{what} random weights (tpsbench synth): acceptance means nothing; the cost is real"
    ))
}

/// The note for generations the model ended before half of the tokens asked (an instruct
/// model answering a bare instruction with its end of turn): drafting then has little to speed up.
fn short_generations(rounds: &[SpecRound], jobs: &[Job]) -> Option<String> {
    let asked: u64 = jobs.iter().map(|j| u64::from(j.n_gen)).sum::<u64>() * rounds.len() as u64;
    let made: u64 = rounds.iter().map(|r| r.plain_tokens).sum();
    let per = |n: u64| n as f64 / (jobs.len() * rounds.len()).max(1) as f64;
    (made * 2 < asked).then(|| {
        format!(
            "the model ended its generations after {:.1} of {:.1} tokens asked on average \
             (its end-of-generation token): too short for drafting to show; give prompts the \
             model continues",
            per(made),
            per(asked)
        )
    })
}

fn measure(
    m: &dyn Model,
    prompts: Option<&PromptFile>,
    s: &SpecTest,
    draft: Option<DraftFile>,
    target: Target,
    rec: &mut TestRecord,
    progress: &mut dyn Progress,
) -> Result<String, KindError> {
    let pf = prompts.ok_or_else(|| {
        Refused("speculative tests need the [speculative] dataset, which was not read".into())
    })?;
    if s.n_max + 1 > rec.params.n_batch {
        return Err(Refused(format!(
            "K = {} is beyond the batch: a step verifies K + 1 tokens and n_batch is {}",
            s.n_max, rec.params.n_batch
        )));
    }
    let jobs = jobs(m, pf, s)?;
    let longest = jobs
        .iter()
        .map(|j| j.tokens.len() as u64 + u64::from(j.n_gen));
    let longest = longest.max().unwrap_or(0);
    let n_ctx_train = u64::from(m.info().n_ctx_train);
    if n_ctx_train > 0 && longest > n_ctx_train {
        return Err(Refused(format!(
            "a prompt and its generation take {longest} tokens, beyond the model's trained \
             context of {n_ctx_train}"
        )));
    }
    let n_ctx = (longest + u64::from(s.n_max) + 8) as u32;
    let draft_path = draft.as_ref().map(|d| d.path.as_path());
    let mut session = (m.speculative(&rec.params, s, draft_path, n_ctx))
        .map_err(|e| Refused(format!("{}: {e}", s.drafter)))?;
    // draft-mtp's weights are the target's MTP layers: llama.cpp counts them in the target
    // model, and the drafter holds only its context.
    let mtp = if s.drafter == Drafter::DraftMtp {
        target.mtp_bytes
    } else {
        0
    };
    let draft_bytes = session.draft_bytes() + mtp;
    if let Some(d) = &draft
        && draft_bytes > m.info().size.saturating_mul(11) / 10
    {
        progress.note(&format!(
            "{}: the draft {} is bigger than the target: it will hardly pay",
            rec.id,
            d.path.file_name().unwrap_or_default().to_string_lossy()
        ));
    }
    let mut sp = Speculative {
        draft: s.draft_label.clone(),
        draft_sha256: draft.as_ref().and_then(|d| d.sha256.clone()),
        draft_max: s.n_max,
        draft_min: s.n_min,
        p_min: s.p_min,
        draft_n_gpu_layers: s.draft_n_gpu_layers,
        draft_bytes,
        by_position: vec![Position::default(); s.n_max as usize],
        ..Speculative::of_rounds(s.drafter, prompts_of(pf, s, &jobs), Vec::new())
    };
    run_rounds(session.as_mut(), s, &jobs, (&rec.id, progress), &mut sp)?;
    if let Some(n) = &pf.note {
        sp.notes.push(format!("{}: {n}", pf.name));
    }
    sp.notes
        .extend(random_weights(s.drafter, target.synthetic, draft.as_ref()));
    if let Some(short) = short_generations(&sp.rounds, &jobs) {
        progress.note(&format!("{}: {short}", rec.id));
        sp.notes.push(short);
    }
    sp.derive();
    rec.n_ctx = n_ctx;
    Ok(finish(rec, s, sp))
}

fn prompts_of(pf: &PromptFile, s: &SpecTest, jobs: &[Job]) -> SpecPrompts {
    SpecPrompts {
        dataset: pf.name.clone(),
        sha256: pf.sha256.clone(),
        format: if pf.sharegpt { "sharegpt" } else { "prompts" }.into(),
        seed: s.seed,
        n_prompts: jobs.len() as u32,
        prompt_tokens: jobs.iter().map(|j| j.tokens.len() as u64).sum(),
        gen_tokens: jobs.iter().map(|j| u64::from(j.n_gen)).sum(),
    }
}

/// The record's rates and figures from `sp`; returns the progress line.
fn finish(rec: &mut TestRecord, s: &SpecTest, sp: Speculative) -> String {
    // The test's rate: the decoding it names, drafted or (a plain candidate) plain.
    let samples_ns: Vec<u64> = (sp.rounds.iter())
        .map(|r| if s.is_plain() { r.plain_ns } else { r.spec_ns })
        .collect();
    rec.set_rates(samples_ns, sp.rates());
    let line = summary(&sp);
    if !sp.identical() {
        rec.not_honoured.push(format!(
            "speculative decoding changed the output of {} of {} greedy generations",
            sp.mismatches, sp.compared
        ));
    }
    rec.speculative = Some(Box::new(sp));
    line
}

/// Every round of `s` over `jobs` into `sp`, after an untimed warm-up (the first prompt once
/// each way); `id` and `progress` say how each round went.
fn run_rounds(
    session: &mut dyn SpecSession,
    s: &SpecTest,
    jobs: &[Job],
    (id, progress): (&str, &mut dyn Progress),
    sp: &mut Speculative,
) -> Result<(), KindError> {
    // A plain candidate of a tune decodes one way only.
    let sides = |order: [bool; 2]| order.into_iter().filter(|&spec| !spec || !s.is_plain());
    for spec in sides([false, true]) {
        session.generate(&jobs[0].tokens, jobs[0].n_gen, spec)?;
    }
    // Drafting and verifying, summed in the generations' nanoseconds.
    let mut ns = [0u64; 2];
    for r in 0..s.rounds {
        // By the round's number in the run: a tune measures one round at a time.
        let plain_first = (s.first_round + r) % 2 == 0;
        let mut round = SpecRound {
            plain_first,
            ..Default::default()
        };
        for j in jobs {
            let mut out: [Option<Generation>; 2] = [None, None];
            for spec in sides([!plain_first, plain_first]) {
                out[spec as usize] = Some(session.generate(&j.tokens, j.n_gen, spec)?);
            }
            let [Some(plain), g] = out else {
                unreachable!("plain decoding ran")
            };
            round.plain_tokens += plain.n_generated;
            round.plain_ns += plain.t_gen_ns;
            if let Some(g) = g {
                round.spec_tokens += g.n_generated;
                round.spec_ns += g.t_gen_ns;
                sp.add(&plain, &g);
                ns = [ns[0] + g.t_draft_ns, ns[1] + g.t_verify_ns];
            }
        }
        if !s.is_plain() {
            // A tune's candidate runs one round per test: the race numbers them.
            let n = if s.rounds > 1 {
                format!(" {}/{}", r + 1, s.rounds)
            } else {
                String::new()
            };
            progress.note(&format!(
                "{id}: round{n}: plain {:.1} t/s, speculative {:.1} t/s",
                round.plain_ts(),
                round.spec_ts()
            ));
        }
        sp.rounds.push(round);
    }
    (sp.draft_s, sp.verify_s) = (ns[0] as f64 / 1e9, ns[1] as f64 / 1e9);
    Ok(())
}

/// "1.45× (1.31–1.60) over plain, 71% accepted, length 3.1, identical"; "plain 51.2 t/s" for
/// a tune's candidate without a drafter.
pub fn summary(s: &Speculative) -> String {
    if s.is_plain() {
        return format!("plain {:.1} t/s", s.plain_ts);
    }
    let speed = match s.speedup {
        Some(x) => format!("{:.2}× ({:.2}–{:.2}) over plain", x.ratio, x.lo, x.hi),
        None => format!("{:.1} vs {:.1} t/s plain", s.spec_ts, s.plain_ts),
    };
    let acc = match (s.acceptance_rate, s.acceptance_length) {
        (Some(r), Some(l)) => format!(", {:.0}% accepted, length {l:.2}", r * 100.0),
        _ => ", nothing drafted".into(),
    };
    let same = if s.identical() {
        ", output identical"
    } else {
        ", OUTPUT DIFFERS from plain decoding"
    };
    format!("{speed}{acc}{same}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::header::Header;
    use crate::gguf::presets::{eagle3, shape};

    /// `doc` as the runner reads it: written and its header parsed.
    fn header(doc: &crate::gguf::writer::Document) -> Header {
        let mut bytes = Vec::new();
        crate::gguf::writer::write_gguf(&mut bytes, doc).unwrap();
        let n = bytes.len() as u64;
        crate::gguf::reader::parse_header(std::io::Cursor::new(bytes), n).unwrap()
    }

    #[test]
    fn an_eagle3_draft_is_refused_in_one_line_where_llama_cpp_would_abort() {
        let d = eagle3::draft("tiny-eagle3").unwrap();
        let draft = header(&d.document(0, 0, 0, 1));
        let target = |p: &str| header(&shape(p).unwrap().document(0, 0, 0, 1));
        let refuse = |t: &Header| refusal(Drafter::DraftEagle3, t, Some(&draft));
        assert_eq!(refuse(&target("tiny-moe")), None);
        // glm4moe hands out no layer inputs.
        let e = refuse(&target("tiny-mtp")).unwrap();
        assert!(e.contains("glm4moe graph does not hand them out"), "{e}");
        // Two layers: the draft reads layers 1, 2 and 3.
        let two = header(
            &shape("tiny-moe")
                .unwrap()
                .shrunk(1, Some(2))
                .document(0, 0, 0, 1),
        );
        let e = refuse(&two).unwrap();
        assert!(
            e.contains("layer 2, and the target has 2 layers (0 to 1)"),
            "{e}"
        );
        // Another width: the encoder would take rows of the wrong size.
        let mut wide = shape("tiny-moe").unwrap();
        wide.n_embd = 128;
        let e = refuse(&header(&wide.document(0, 0, 0, 1))).unwrap();
        assert!(e.contains("width 64, and this one's is 128"), "{e}");
        // Not an Eagle3 file at all.
        let e = refusal(
            Drafter::DraftEagle3,
            &target("tiny-moe"),
            Some(&target("tiny-moe")),
        )
        .unwrap();
        assert!(e.contains("the draft is qwen3moe"), "{e}");
        for e in [refuse(&target("tiny-mtp")), refuse(&two)] {
            assert!(!e.unwrap().contains('\n'));
        }
        // Other drafters do not look at any of it.
        assert_eq!(
            refusal(Drafter::DraftSimple, &target("tiny-mtp"), Some(&draft)),
            None
        );
    }

    fn draft(synthetic: bool) -> DraftFile {
        DraftFile {
            path: "d.gguf".into(),
            sha256: None,
            synthetic,
        }
    }

    #[test]
    fn generations_the_model_ended_before_half_the_tokens_asked_are_noted() {
        let jobs = [
            Job {
                index: 0,
                tokens: vec![1, 2],
                n_gen: 32,
            },
            Job {
                index: 0,
                tokens: vec![1, 2],
                n_gen: 32,
            },
        ];
        let round = |made: u64| SpecRound {
            plain_first: true,
            plain_tokens: made,
            plain_ns: 1,
            spec_tokens: made,
            spec_ns: 1,
        };
        assert_eq!(short_generations(&[round(64), round(40)], &jobs), None);
        let note = short_generations(&[round(2), round(4)], &jobs).unwrap();
        assert!(
            note.starts_with("the model ended its generations after 1.5 of 32.0"),
            "{note}"
        );
    }

    #[test]
    fn random_weights_are_noted_for_the_target_its_mtp_layers_or_the_draft() {
        let note = |d: Drafter, t: bool, f: Option<DraftFile>| random_weights(d, t, f.as_ref());
        assert_eq!(note(Drafter::DraftSimple, false, Some(draft(false))), None);
        assert_eq!(note(Drafter::NgramMod, false, None), None);
        let mtp = note(Drafter::DraftMtp, true, None).unwrap();
        assert!(mtp.starts_with("the target and its MTP layers have random weights"));
        assert!(
            mtp.ends_with("acceptance means nothing; the cost is real"),
            "{mtp}"
        );
        assert!(
            note(Drafter::NgramMod, true, None)
                .unwrap()
                .starts_with("the target has")
        );
        assert!(
            note(Drafter::DraftSimple, true, Some(draft(true)))
                .unwrap()
                .starts_with("the target and the draft have")
        );
        assert!(
            note(Drafter::DraftSimple, false, Some(draft(true)))
                .unwrap()
                .starts_with("the draft has")
        );
    }
}
