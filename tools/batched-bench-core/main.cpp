// batched-bench-core: llama-batched-bench's measurement loop, transcribed from llama.cpp's
// tools/batched-bench/batched-bench.cpp (ggml-org/llama.cpp, the version with is_pp_shared,
// is_tg_separate and kv_unified; MIT licence, (c) the llama.cpp authors), linked against the
// same static libllama that llama-cpp-sys-2 builds for tpsbench. llama-batched-bench's sources
// are not in the crate's vendored copy of llama.cpp and this machine cannot fetch them, so this
// is the reference that scripts/compare-batched-bench measures tpsbench's parallel serving
// test against.
//
// Kept from batched-bench: the context (common's defaults as common_context_params_to_llama
// sets them, n_seq_max = max(npl), kv_unified as given, no threadpool attached), the warmup
// (16 random tokens on sequence 0), the batch construction (every prompt in one batch, logits
// on the last token of each prompt; each generation step one token per sequence, all with
// logits), n_batch chunking (decode_helper), the timing points (T_PP around the prompt decode
// and one synchronize, after llama_memory_clear; T_TG around the generation loop, a synchronize
// after every step), the shared-prompt copy (llama_memory_seq_cp, plus the dummy token when the
// KV cache is not unified, both untimed), the context check (n_ctx_req > n_kv_max skips) and
// the figures (S_PP, S_TG, S) in its JSONL field names. rand() token ids, unseeded, as there.
// Not kept: argument parsing (positional here), -tgs (is_tg_separate; always 0) and logging.
//
// usage: batched-bench-core MODEL N_CTX N_BATCH N_UBATCH N_THREADS PPS KV_UNIFIED NPP NTG NPL
//        (NPP, NTG, NPL: comma-separated lists; PPS, KV_UNIFIED: 0 or 1)
#include "ggml.h"
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// common_batch_add / common_batch_clear from llama.cpp's common/common.cpp.
static void batch_add(llama_batch & batch, llama_token id, llama_pos pos, const std::vector<llama_seq_id> & seq_ids, bool logits) {
    batch.token   [batch.n_tokens] = id;
    batch.pos     [batch.n_tokens] = pos;
    batch.n_seq_id[batch.n_tokens] = seq_ids.size();
    for (size_t i = 0; i < seq_ids.size(); ++i) {
        batch.seq_id[batch.n_tokens][i] = seq_ids[i];
    }
    batch.logits  [batch.n_tokens] = logits;
    batch.n_tokens++;
}

static void batch_clear(llama_batch & batch) { batch.n_tokens = 0; }

static std::vector<int> parse_list(const char * s) {
    std::vector<int> out;
    std::string str(s);
    size_t start = 0;
    while (start <= str.size()) {
        size_t end = str.find(',', start);
        if (end == std::string::npos) end = str.size();
        out.push_back(atoi(str.substr(start, end - start).c_str()));
        start = end + 1;
    }
    return out;
}

static void null_log(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: %s MODEL N_CTX N_BATCH N_UBATCH N_THREADS PPS KV_UNIFIED NPP NTG NPL\n", argv[0]);
        return 2;
    }
    const char * path = argv[1];
    const int n_ctx = atoi(argv[2]), n_batch = atoi(argv[3]), n_ubatch = atoi(argv[4]), n_threads = atoi(argv[5]);
    const int is_pp_shared = atoi(argv[6]);
    const bool kv_unified = atoi(argv[7]) != 0;
    const std::vector<int> n_pp = parse_list(argv[8]);
    const std::vector<int> n_tg = parse_list(argv[9]);
    const std::vector<int> n_pl = parse_list(argv[10]);

    llama_log_set(null_log, NULL);
    llama_backend_init();

    // common_model_params_to_llama with common's defaults (CPU build: n_gpu_layers is moot).
    llama_model_params model_params = llama_model_default_params();
    llama_model * model = llama_model_load_from_file(path, model_params);
    if (model == NULL) {
        fprintf(stderr, "%s: error: unable to load model\n", __func__);
        return 1;
    }

    // common_context_params_to_llama with common's defaults and the given -c -b -ub -t -kvu.
    llama_context_params ctx_params = llama_context_default_params();
    ctx_params.n_ctx                 = n_ctx;
    ctx_params.n_batch               = n_batch;
    ctx_params.n_ubatch              = n_ubatch;
    ctx_params.n_outputs_max         = 0;
    ctx_params.n_outputs_max_per_seq = 1;
    ctx_params.n_threads             = n_threads;
    ctx_params.n_threads_batch       = n_threads;
    ctx_params.flash_attn_type       = LLAMA_FLASH_ATTN_TYPE_AUTO;
    ctx_params.offload_kqv           = true;
    ctx_params.no_perf               = false;
    ctx_params.op_offload            = true;
    ctx_params.swa_full              = false;
    ctx_params.kv_unified            = kv_unified;
    ctx_params.type_k                = GGML_TYPE_F16;
    ctx_params.type_v                = GGML_TYPE_F16;

    // ensure enough sequences are available
    ctx_params.n_seq_max = n_pl.empty() ? 1 : *std::max_element(n_pl.begin(), n_pl.end());

    llama_context * ctx = llama_init_from_model(model, ctx_params);
    if (ctx == NULL) {
        fprintf(stderr, "%s: error: failed to create the llama_context\n", __func__);
        return 1;
    }

    const llama_vocab * vocab   = llama_model_get_vocab(model);
    const int32_t       n_vocab = llama_vocab_n_tokens(vocab);
    const auto get_token_rand = [n_vocab]() -> llama_token { return std::rand() % n_vocab; };

    auto * mem = llama_get_memory(ctx);
    const int32_t n_kv_max = llama_n_ctx(ctx);
    llama_batch batch = llama_batch_init(n_kv_max, 0, 1);

    // decode in batches of ctx_params.n_batch tokens
    auto decode_helper = [](llama_context * ctx, llama_batch & batch, int32_t n_batch, bool synchronize) {
        for (int32_t i = 0; i < batch.n_tokens; i += n_batch) {
            const int32_t n_tokens = std::min(n_batch, batch.n_tokens - i);
            llama_batch batch_view = {
                n_tokens, batch.token + i, nullptr, batch.pos + i, batch.n_seq_id + i, batch.seq_id + i, batch.logits + i,
            };
            const int ret = llama_decode(ctx, batch_view);
            if (ret != 0) {
                fprintf(stderr, "failed to decode the batch, n_batch = %d, ret = %d\n", n_batch, ret);
                return false;
            }
            if (synchronize) {
                llama_synchronize(ctx);
            }
        }
        return true;
    };

    // warm up
    for (int i = 0; i < 16; ++i) {
        batch_add(batch, get_token_rand(), i, { 0 }, false);
    }
    if (!decode_helper(ctx, batch, ctx_params.n_batch, true)) {
        return 1;
    }

    for (int pp : n_pp) {
        for (int tg : n_tg) {
            for (int pl : n_pl) {
                const int n_ctx_req = is_pp_shared ? (kv_unified ? pp : pl*pp) + pl*tg : pl*(pp + tg);
                if (n_ctx_req > n_kv_max) {
                    continue;
                }

                batch_clear(batch);
                for (int j = 0; j < (is_pp_shared ? 1 : pl); ++j) {
                    for (int i = 0; i < pp; ++i) {
                        batch_add(batch, get_token_rand(), i, { j }, i == pp - 1);
                    }
                }

                llama_memory_clear(mem, false);

                const auto t_pp_start = ggml_time_us();
                if (!decode_helper(ctx, batch, ctx_params.n_batch, false)) {
                    return 1;
                }
                llama_synchronize(ctx);
                const auto t_pp_end = ggml_time_us();

                if (is_pp_shared) {
                    for (int32_t i = 1; i < pl; ++i) {
                        llama_memory_seq_cp(mem, 0, i, -1, -1);
                    }
                    if (!kv_unified) {
                        // run one dummy token to apply the memory copy
                        batch_clear(batch);
                        batch_add(batch, get_token_rand(), pp + 0, { 0 }, true);
                        if (!decode_helper(ctx, batch, ctx_params.n_batch, true)) {
                            return 1;
                        }
                        llama_memory_seq_rm(mem, 0, pp, -1);
                    }
                }

                const auto t_tg_start = ggml_time_us();
                // decode pattern: 0123 0123 0123 ...
                for (int i = 0; i < tg; ++i) {
                    batch_clear(batch);
                    for (int j = 0; j < pl; ++j) {
                        batch_add(batch, get_token_rand(), pp + i, { j }, true);
                    }
                    if (!decode_helper(ctx, batch, ctx_params.n_batch, true)) {
                        return 1;
                    }
                }
                const auto t_tg_end = ggml_time_us();

                const int32_t n_kv = n_ctx_req;
                const float t_pp = (t_pp_end - t_pp_start) / 1000000.0f;
                const float t_tg = (t_tg_end - t_tg_start) / 1000000.0f;
                const float t    = t_pp + t_tg;
                const float speed_pp = is_pp_shared ? pp / t_pp : pl*pp / t_pp;
                const float speed_tg = pl*tg / t_tg;
                const float speed    = ((is_pp_shared ? pp : pl*pp) + pl*tg) / t;

                printf("{\"n_kv_max\": %d, \"n_batch\": %d, \"n_ubatch\": %d, \"is_pp_shared\": %d, \"kv_unified\": %d, "
                       "\"n_threads\": %d, \"pp\": %d, \"tg\": %d, \"pl\": %d, \"n_kv\": %d, \"t_pp\": %f, \"speed_pp\": %f, "
                       "\"t_tg\": %f, \"speed_tg\": %f, \"t\": %f, \"speed\": %f}\n",
                       n_kv_max, n_batch, n_ubatch, is_pp_shared, kv_unified ? 1 : 0, n_threads, pp, tg, pl, n_kv,
                       t_pp, speed_pp, t_tg, speed_tg, t, speed);
                fflush(stdout);
            }
        }
    }

    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
