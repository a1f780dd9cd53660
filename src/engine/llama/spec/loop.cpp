// tpsbench's speculative decoding loop, written for tpsbench.
//
// Why C++: llama.cpp's drafters (common/speculative.h: draft-simple, Eagle3, MTP, DFlash,
// DSpark and the five n-gram methods) are C++ objects taking C++ types (common_params,
// common_batch, std::vector), which no C API and no crate binding exposes; llama-cpp-2
// wraps only same-model MTP. This file is the smallest C surface over them: one object per
// (target context, drafter setting) and one call per generation, so Rust keeps the timing
// design (rounds, pairing, records) and this file only runs a generation and counts.
//
// The steps are those of llama.cpp's own examples/speculative-simple (the reference the
// fidelity check runs): the prompt but its last token decoded and fed to the drafter, then
// draft, verify [id_last, draft...] in one batch, accept the longest prefix the greedy
// sampler agrees with, drop the rest from both contexts. Same loop, same stopping rule
// (`n_predict > n_gen` or an end-of-generation token), so the drafted and accepted counts
// can be compared number for number.

#include "common.h"
#include "llama.h"
#include "log.h"
#include "sampling.h"
#include "speculative.h"
// llama.cpp's staging API (as common/speculative.cpp includes it): the switch for the target
// layers' extraction that Eagle3's drafter turns on, which plain decoding turns off.
#include "../src/llama-ext.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

double now_s() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void set_err(char * err, size_t n_err, const std::string & msg) {
    if (err == nullptr || n_err == 0) {
        return;
    }
    const size_t n = std::min(n_err - 1, msg.size());
    std::memcpy(err, msg.data(), n);
    err[n] = '\0';
}

}  // namespace

extern "C" {

// What a drafter setting asks for. Mirrored by `spec::Opts` in Rust (repr(C)).
struct tpsb_spec_opts {
    int32_t type;                // common_speculative_type
    const char * draft_path;     // a draft GGUF, or NULL (n-gram types, MTP)
    int32_t draft_n_gpu_layers;  // -1: llama.cpp's default
    int32_t n_max;               // K: most tokens drafted per step
    int32_t n_min;
    float p_min;
    int32_t n_threads;
    int32_t n_batch;
    int32_t n_ubatch;
    int32_t flash_attn;          // llama_flash_attn_type: -1 auto, 0 off, 1 on
};

// One generation's counts and times. Mirrored by `spec::Stats`.
struct tpsb_spec_stats {
    int64_t n_generated;   // tokens generated (speculative-simple's n_predict)
    int64_t n_steps;       // target decodes during generation
    int64_t n_drafts;      // steps that verified a non-empty draft
    int64_t n_drafted;     // drafted tokens verified
    int64_t n_accepted;    // of those, accepted
    int64_t n_restores;    // partial acceptances undone through a checkpoint
    double t_gen_s;        // the whole generation, drafting and verifying
    double t_draft_s;      // in common_speculative_draft
    double t_verify_s;     // the target's decodes of [id_last, draft...] and the drafter's processing of them
};

struct tpsb_spec {
    llama_model * model_tgt;
    llama_context * ctx_tgt;
    common_params params;  // the drafter's settings, as llama.cpp's tools hold them
    common_speculative_init_result_ptr init;  // the draft model and its context, if any
    llama_context * ctx_dft;
    // Whether a context can drop only whole sequences (checkpoints then undo partial
    // acceptance). Asked once, here: llama.cpp's probe clears the context and decodes into it.
    bool use_ckpt_tgt;
    bool use_ckpt_dft;
    // K: every drafter's drafts are capped by it. The n-gram methods draft by their own
    // sizes (ngram-mod up to 64 tokens), beyond the outputs the target context was made for.
    int32_t n_max;
    int32_t type;  // the drafter's common_speculative_type
    // Whether the target context copies out the inputs of the layers an Eagle3 draft reads:
    // llama.cpp's Eagle3 drafter turns that on when it is made and never off.
    bool extracting;
};

// Turns off the target context's copies of the layers an Eagle3 draft reads, which llama.cpp's
// Eagle3 drafter turned on: plain decoding, the baseline, must not pay for the drafter's
// inputs. (The next speculative generation's drafter turns them on again.)
static void stop_extracting(tpsb_spec * s) {
    if (!s->extracting || !s->init || s->init->model() == nullptr) {
        return;
    }
    const llama_model * dft = s->init->model();
    const int32_t n_layer_tgt = llama_model_n_layer(s->model_tgt);
    const int32_t * ids = llama_model_target_layer_ids(dft);
    for (uint32_t k = 0; k < llama_model_target_layer_ids_n(dft); ++k) {
        if (ids[k] >= 0 && ids[k] < n_layer_tgt) {
            llama_set_embeddings_layer_inp(s->ctx_tgt, (uint32_t) ids[k], false);
        } else if (ids[k] == n_layer_tgt) {
            llama_set_embeddings_nextn(s->ctx_tgt, false, false);
        }
    }
    s->extracting = false;
}

// 1 when llama.cpp finds the draft's vocabulary usable for the target
// (common_speculative_are_compatible), 0 when not.
int tpsb_spec_compatible(const llama_model * tgt, const llama_model * dft) {
    return common_speculative_are_compatible(tgt, dft) ? 1 : 0;
}

// The name llama.cpp gives a drafter type ("draft-simple", "ngram-mod", ...); empty when
// the type is unknown.
size_t tpsb_spec_type_name(int32_t type, char * out, size_t n_out) {
    if (type < 0 || type >= COMMON_SPECULATIVE_TYPE_COUNT) {
        set_err(out, n_out, "");
        return 0;
    }
    const std::string s = common_speculative_type_to_str((common_speculative_type) type);
    set_err(out, n_out, s);
    return s.size();
}

int32_t tpsb_spec_type_count(void) {
    return COMMON_SPECULATIVE_TYPE_COUNT;
}

// The draft tokens a target context must take out at once for K: the n_outputs_max the
// target context needs (llama.cpp's common_speculative_get_output_limits).
int32_t tpsb_spec_outputs(int32_t n_batch, int32_t n_max) {
    return common_speculative_get_output_limits(n_batch, 1, n_max).total;
}

// Makes a drafter for the target context `ctx_tgt` (made by the caller with n_outputs_max
// from tpsb_spec_outputs). Loads the draft model, if any. NULL with `err` set on failure.
tpsb_spec * tpsb_spec_new(llama_model * model_tgt, llama_context * ctx_tgt,
                          const tpsb_spec_opts * o, char * err, size_t n_err) {
    // NONE makes a session that decodes plain only: a tune's candidate without a drafter
    // generates through the same loop, sampler and context as a drafted one.
    if (o->type < COMMON_SPECULATIVE_TYPE_NONE || o->type >= COMMON_SPECULATIVE_TYPE_COUNT) {
        set_err(err, n_err, "unknown drafter type " + std::to_string(o->type));
        return nullptr;
    }
    // llama.cpp's common library prints its info lines to stdout, which is tpsbench's data:
    // warnings and errors only (they go to stderr).
    common_log_set_verbosity_thold(LOG_LEVEL_WARN);
    auto s = std::make_unique<tpsb_spec>();
    s->model_tgt = model_tgt;
    s->n_max = o->n_max;
    s->type = o->type;
    s->extracting = false;
    s->ctx_tgt = ctx_tgt;
    s->ctx_dft = nullptr;

    common_params & p = s->params;
    p.n_ctx = (int32_t) llama_n_ctx(ctx_tgt);
    p.n_batch = o->n_batch;
    p.n_ubatch = o->n_ubatch;
    p.cpuparams.n_threads = o->n_threads;
    p.cpuparams_batch.n_threads = o->n_threads;
    p.flash_attn_type = (llama_flash_attn_type) o->flash_attn;
    p.sampling.temp = 0.0f;  // greedy: the output must equal plain decoding's
    p.fit_params = false;

    auto & sp = p.speculative;
    sp.types = { (common_speculative_type) o->type };
    sp.draft.n_max = o->n_max;
    sp.draft.n_min = o->n_min;
    sp.draft.p_min = o->p_min;
    sp.draft.n_gpu_layers = o->draft_n_gpu_layers;
    if (o->draft_path != nullptr) {
        sp.draft.mparams.path = o->draft_path;
    }
    // The n-gram types keep llama.cpp's default key and value sizes and minimum hits.

    const bool needs_ctx = o->type == COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE ||
                           o->type == COMMON_SPECULATIVE_TYPE_DRAFT_EAGLE3 ||
                           o->type == COMMON_SPECULATIVE_TYPE_DRAFT_MTP ||
                           o->type == COMMON_SPECULATIVE_TYPE_DRAFT_DFLASH ||
                           o->type == COMMON_SPECULATIVE_TYPE_DRAFT_DSPARK;
    if (needs_ctx) {
        common_params pd = common_base_params_to_speculative(p);
        s->init = common_speculative_init_from_params(pd, model_tgt, ctx_tgt);
        s->ctx_dft = s->init->context();
        if (s->ctx_dft == nullptr) {
            set_err(err, n_err, "llama.cpp could not make the drafter's context (see its log)");
            return nullptr;
        }
        if (s->init->model() != nullptr &&
            !common_speculative_are_compatible(model_tgt, s->init->model())) {
            set_err(err, n_err, "the draft's vocabulary is not compatible with the target's "
                                "(llama.cpp's common_speculative_are_compatible)");
            return nullptr;
        }
    }
    sp.draft.ctx_tgt = ctx_tgt;
    sp.draft.ctx_dft = s->ctx_dft;
    s->use_ckpt_tgt = common_context_can_seq_rm(ctx_tgt) == COMMON_CONTEXT_SEQ_RM_TYPE_FULL;
    s->use_ckpt_dft = s->ctx_dft != nullptr &&
                      common_context_can_seq_rm(s->ctx_dft) == COMMON_CONTEXT_SEQ_RM_TYPE_FULL;
    return s.release();
}

void tpsb_spec_free(tpsb_spec * s) {
    delete s;
}

// Bytes the drafter holds: the draft model's weights and its context's state (0 for the
// n-gram types, which hold only tables).
uint64_t tpsb_spec_draft_bytes(const tpsb_spec * s) {
    uint64_t n = 0;
    if (s->init && s->init->model() != nullptr) {
        n += llama_model_size(s->init->model());
    }
    if (s->ctx_dft != nullptr) {
        n += llama_state_get_size(s->ctx_dft);
    }
    return n;
}

// Where a generation writes: the generated tokens (at most `cap`), per draft position below
// `n_pos` the tokens drafted and accepted there, its counts and times, and an error line.
// Mirrored by `spec::Out`.
struct tpsb_spec_out {
    int32_t * tokens;
    size_t cap;
    size_t n_tokens;
    int64_t * pos_drafted;
    int64_t * pos_accepted;
    size_t n_pos;
    tpsb_spec_stats stats;
    char * err;
    size_t n_err;
};

// One generation from `prompt` (at least 2 tokens), greedy, after clearing both contexts.
// speculative = 0: plain decoding, one token per target decode, the same sampler.
// Returns 0, or -1 with `o->err` set.
int tpsb_spec_generate(tpsb_spec * s, const int32_t * prompt, size_t n_prompt, int32_t n_gen,
                       int32_t speculative, tpsb_spec_out * o) {
    int32_t * out = o->tokens;
    const size_t cap = o->cap;
    size_t * n_out = &o->n_tokens;
    int64_t * pos_drafted = o->pos_drafted;
    int64_t * pos_accepted = o->pos_accepted;
    const size_t n_pos = o->n_pos;
    tpsb_spec_stats * st = &o->stats;
    char * err = o->err;
    const size_t n_err = o->n_err;
    *st = tpsb_spec_stats{};
    *n_out = 0;
    for (size_t i = 0; i < n_pos; ++i) {
        pos_drafted[i] = 0;
        pos_accepted[i] = 0;
    }
    llama_context * ctx_tgt = s->ctx_tgt;
    llama_context * ctx_dft = s->ctx_dft;
    if (n_prompt < 2) {
        set_err(err, n_err, "a prompt needs at least 2 tokens");
        return -1;
    }
    if ((int64_t) n_prompt + n_gen + 2 > (int64_t) llama_n_ctx(ctx_tgt)) {
        set_err(err, n_err, "the prompt and the tokens to generate exceed the context");
        return -1;
    }
    llama_memory_clear(llama_get_memory(ctx_tgt), true);
    if (ctx_dft != nullptr) {
        llama_memory_clear(llama_get_memory(ctx_dft), true);
    }
    const llama_vocab * vocab = llama_model_get_vocab(s->model_tgt);
    const llama_seq_id seq_id = 0;
    std::vector<llama_token> inp(prompt, prompt + n_prompt);

    common_sampler_ptr smpl(common_sampler_init(s->model_tgt, s->params.sampling));
    common_speculative * spec = nullptr;
    if (speculative && s->type == COMMON_SPECULATIVE_TYPE_NONE) {
        set_err(err, n_err, "this session has no drafter (type none): it decodes plain only");
        return -1;
    }
    if (speculative) {
        try {
            spec = common_speculative_init(s->params.speculative, 1);
        } catch (const std::exception & e) {
            // Eagle3's drafter throws on a draft it cannot use; an exception must not cross
            // into Rust.
            set_err(err, n_err, std::string("llama.cpp could not start this drafter: ") + e.what());
            return -1;
        }
        if (spec == nullptr) {
            set_err(err, n_err, "llama.cpp could not start this drafter (common_speculative_init)");
            return -1;
        }
        s->extracting = s->type == COMMON_SPECULATIVE_TYPE_DRAFT_EAGLE3;
    } else {
        stop_extracting(s);
    }
    std::unique_ptr<common_speculative, common_speculative_deleter> spec_owner(spec);

    {
        // In chunks of n_batch, as llama-server feeds a prompt: a batch holds at most n_batch
        // tokens (beyond it llama.cpp aborts in common_batch::get_sub_batch), and a sweep may
        // set n_batch below a real prompt's length. A prompt within one batch is decoded
        // whole, as llama-speculative-simple does.
        uint32_t chunk = llama_n_batch(ctx_tgt);
        if (ctx_dft != nullptr) {
            chunk = std::min(chunk, llama_n_batch(ctx_dft));
        }
        chunk = std::max<uint32_t>(chunk, 1);
        const size_t n_in = inp.size() - 1;
        for (size_t off = 0; off < n_in; off += chunk) {
            common_batch batch_prompt(ctx_tgt);
            for (size_t i = off; i < std::min(n_in, off + chunk); ++i) {
                batch_prompt.add(inp[i], (llama_pos) i, seq_id, false);
            }
            if (llama_process(ctx_tgt, LLAMA_PROCESS_TYPE_DECODE, batch_prompt.get()) != 0) {
                set_err(err, n_err, "llama.cpp could not decode the prompt");
                return -1;
            }
            if (spec != nullptr && !common_speculative_process(spec, batch_prompt)) {
                set_err(err, n_err, "the drafter could not process the prompt");
                return -1;
            }
        }
    }
    llama_synchronize(ctx_tgt);

    llama_token id_last = inp.back();
    llama_tokens prompt_tgt(inp.begin(), inp.end() - 1);
    prompt_tgt.reserve(llama_n_ctx(ctx_tgt));
    int n_past = (int) inp.size() - 1;
    int n_predict = 0;
    if (spec != nullptr) {
        common_speculative_begin(spec, seq_id, prompt_tgt);
    }

    const bool use_ckpt_tgt = s->use_ckpt_tgt;
    const bool use_ckpt_dft = s->use_ckpt_dft;
    common_prompt_checkpoint ckpt;
    common_batch batch_tgt(ctx_tgt);
    llama_tokens draft;
    bool has_eos = false;

    const double t_gen0 = now_s();
    while (true) {
        if (spec != nullptr && draft.empty()) {
            ckpt.update_pos((int64_t) prompt_tgt.size(),
                            llama_memory_seq_pos_min(llama_get_memory(ctx_tgt), seq_id),
                            llama_memory_seq_pos_max(llama_get_memory(ctx_tgt), seq_id));
            if (use_ckpt_dft) {
                ckpt.update_dft(ctx_dft, seq_id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
            }
            int n_draft_max = (int) llama_n_ctx(ctx_tgt) - n_past - 2;
            n_draft_max = std::min(n_draft_max, n_gen - n_predict - 1);
            n_draft_max = std::min(n_draft_max, s->n_max);
            n_draft_max = std::max(n_draft_max, 0);
            const double td = now_s();
            common_speculative_get_draft_params(spec, seq_id) = {
                /* .drafting = */ true,
                /* .n_max    = */ n_draft_max,
                /* .pos0     = */ n_past,
                /* .id_last  = */ id_last,
                /* .prompt   = */ &prompt_tgt,
                /* .result   = */ &draft,
            };
            common_speculative_draft(spec);
            // Not to n_draft_max: at 0 llama.cpp reads it as "no limit" and drafts K, which
            // llama-speculative-simple then verifies; the counts stay equal to its.
            if ((int32_t) draft.size() > s->n_max) {
                draft.resize(s->n_max);
            }
            st->t_draft_s += now_s() - td;
            if (!draft.empty() && use_ckpt_tgt) {
                ckpt.update_tgt(ctx_tgt, seq_id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
            }
            if (ctx_dft != nullptr) {
                if (use_ckpt_dft) {
                    ckpt.load_dft(ctx_dft, seq_id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                }
                llama_memory_seq_rm(llama_get_memory(ctx_dft), seq_id, ckpt.pos_max + 1, -1);
            }
        }

        const double tv = now_s();
        batch_tgt.clear();
        batch_tgt.add(id_last, n_past++, seq_id, true);
        for (size_t i = 0; i < draft.size(); ++i) {
            batch_tgt.add(draft[i], n_past + (llama_pos) i, seq_id, true);
        }
        if (llama_process(ctx_tgt, LLAMA_PROCESS_TYPE_DECODE, batch_tgt.get()) != 0) {
            set_err(err, n_err, "llama.cpp could not decode a step");
            return -1;
        }
        st->n_steps += 1;
        if (spec != nullptr && !common_speculative_process(spec, batch_tgt)) {
            set_err(err, n_err, "the drafter could not process a step");
            return -1;
        }
        common_sampler_ptr smpl_save;
        if (use_ckpt_tgt && spec != nullptr) {
            smpl_save.reset(common_sampler_clone(smpl.get()));
        }
        const size_t n_draft = draft.size();
        auto ids = common_sampler_sample_and_accept_n(smpl.get(), ctx_tgt, draft);
        st->t_verify_s += now_s() - tv;
        if (ids.empty()) {
            set_err(err, n_err, "the sampler accepted no token");
            return -1;
        }
        if (spec != nullptr && use_ckpt_tgt && ids.size() - 1 < n_draft) {
            // The context cannot drop a partial sequence: back to the checkpoint, and the
            // accepted tokens become the next draft (as speculative-simple does).
            draft = std::move(ids);
            ckpt.load_tgt(ctx_tgt, seq_id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
            llama_memory_seq_rm(llama_get_memory(ctx_tgt), seq_id, ckpt.pos_max + 1, -1);
            if (ctx_dft != nullptr) {
                ckpt.load_dft(ctx_dft, seq_id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                llama_memory_seq_rm(llama_get_memory(ctx_dft), seq_id, ckpt.pos_max + 1, -1);
            }
            prompt_tgt.resize(ckpt.n_tokens);
            smpl = std::move(smpl_save);
            n_past = (int) prompt_tgt.size();
            st->n_restores += 1;
            continue;
        }
        const size_t n_acc = ids.size() - 1;
        if (spec != nullptr) {
            common_speculative_accept(spec, seq_id, (uint16_t) n_acc);
        }
        if (n_draft > 0) {
            st->n_drafts += 1;
            for (size_t i = 0; i < n_draft && i < n_pos; ++i) {
                pos_drafted[i] += 1;
                if (i < n_acc) {
                    pos_accepted[i] += 1;
                }
            }
        }
        n_past += (int) n_acc;
        st->n_drafted += (int64_t) n_draft;
        st->n_accepted += (int64_t) n_acc;
        n_predict += (int) ids.size();
        for (size_t i = 0; i < ids.size(); ++i) {
            prompt_tgt.push_back(id_last);
            id_last = ids[i];
            if (*n_out < cap) {
                out[(*n_out)++] = id_last;
            }
            if (llama_vocab_is_eog(vocab, id_last)) {
                has_eos = true;
                break;
            }
        }
        draft.clear();
        llama_memory_seq_rm(llama_get_memory(ctx_tgt), seq_id, n_past, -1);
        if (ctx_dft != nullptr) {
            llama_memory_seq_rm(llama_get_memory(ctx_dft), seq_id, n_past, -1);
        }
        if (n_predict > n_gen || has_eos) {
            break;
        }
    }
    llama_synchronize(ctx_tgt);
    st->t_gen_s = now_s() - t_gen0;
    st->n_generated = n_predict;
    return 0;
}

}  // extern "C"
