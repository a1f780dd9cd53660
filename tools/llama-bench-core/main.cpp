// llama-bench-core: llama-bench's measurement loop, transcribed from llama.cpp's
// tools/llama-bench/llama-bench.cpp (test_prompt, test_gen and the per-test loop of
// llama_bench()), for one model and one test, linked against the same static libllama that
// llama-cpp-sys-2 builds for tpsbench. llama-bench's own sources are not in the crate's
// vendored copy of llama.cpp, and this machine cannot fetch them, so this is the reference
// that scripts/compare-llama-bench measures tpsbench against. It keeps llama-bench's
// context parameters, threadpool (poll 50), warmup, memory clearing, rand() token ids and
// timing (steady clock around prompt + generation), and prints llama-bench's JSONL fields.
//
// usage: llama-bench-core MODEL N_PROMPT N_GEN N_THREADS N_BATCH N_UBATCH REPS
#include "ggml-cpu.h"
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

static uint64_t get_time_ns() {
    using clock = std::chrono::high_resolution_clock;
    return std::chrono::nanoseconds(clock::now().time_since_epoch()).count();
}

static bool test_prompt(llama_context * ctx, int n_prompt, int n_batch, int n_threads) {
    llama_set_n_threads(ctx, n_threads, n_threads);
    const llama_model * model   = llama_get_model(ctx);
    const llama_vocab * vocab   = llama_model_get_vocab(model);
    const int32_t       n_vocab = llama_vocab_n_tokens(vocab);
    std::vector<llama_token> tokens(n_batch);
    int n_processed = 0;
    while (n_processed < n_prompt) {
        int n_tokens = std::min(n_prompt - n_processed, n_batch);
        tokens[0]    = n_processed == 0 && llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : std::rand() % n_vocab;
        for (int i = 1; i < n_tokens; i++) {
            tokens[i] = std::rand() % n_vocab;
        }
        if (llama_decode(ctx, llama_batch_get_one(tokens.data(), n_tokens)) != 0) {
            return false;
        }
        n_processed += n_tokens;
    }
    llama_synchronize(ctx);
    return true;
}

static bool test_gen(llama_context * ctx, int n_gen, int n_threads) {
    llama_set_n_threads(ctx, n_threads, n_threads);
    const llama_model * model   = llama_get_model(ctx);
    const llama_vocab * vocab   = llama_model_get_vocab(model);
    const int32_t       n_vocab = llama_vocab_n_tokens(vocab);
    llama_token token = llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : std::rand() % n_vocab;
    for (int i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) {
            return false;
        }
        llama_synchronize(ctx);
        token = std::rand() % n_vocab;
    }
    return true;
}

static void null_log(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s MODEL N_PROMPT N_GEN N_THREADS N_BATCH N_UBATCH REPS\n", argv[0]);
        return 2;
    }
    const char * path = argv[1];
    const int n_prompt = atoi(argv[2]), n_gen = atoi(argv[3]), n_threads = atoi(argv[4]);
    const int n_batch = atoi(argv[5]), n_ubatch = atoi(argv[6]), reps = atoi(argv[7]);

    llama_log_set(null_log, NULL);
    llama_backend_init();

    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 99;
    llama_model * model = llama_model_load_from_file(path, mparams);
    if (!model) { fprintf(stderr, "failed to load %s\n", path); return 1; }

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx           = n_prompt + n_gen;
    cparams.n_batch         = n_batch;
    cparams.n_ubatch        = n_ubatch;
    cparams.type_k          = GGML_TYPE_F16;
    cparams.type_v          = GGML_TYPE_F16;
    cparams.offload_kqv     = true;
    cparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    cparams.embeddings      = false;
    cparams.op_offload      = true;
    cparams.swa_full        = false;
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (!ctx) { fprintf(stderr, "failed to create context\n"); return 1; }
    llama_memory_clear(llama_get_memory(ctx), false);

    ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
    tpp.strict_cpu = false;
    tpp.poll       = 50;
    ggml_threadpool * threadpool = ggml_threadpool_new(&tpp);
    llama_attach_threadpool(ctx, threadpool, NULL);

    // warmup
    if (n_prompt > 0) test_prompt(ctx, n_prompt, n_batch, n_threads);
    if (n_gen > 0) test_gen(ctx, 1, n_threads);

    std::vector<uint64_t> samples_ns;
    for (int i = 0; i < reps; i++) {
        llama_memory_clear(llama_get_memory(ctx), false);
        uint64_t t_start = get_time_ns();
        if (n_prompt > 0 && !test_prompt(ctx, n_prompt, n_batch, n_threads)) return 1;
        if (n_gen > 0 && !test_gen(ctx, n_gen, n_threads)) return 1;
        samples_ns.push_back(get_time_ns() - t_start);
    }

    // llama-bench: avg_ts = mean over samples of 1e9 * n_tokens / t_ns; stddev (n - 1)
    const double n_tokens = n_prompt + n_gen;
    std::vector<double> ts;
    for (auto t : samples_ns) ts.push_back(1e9 * n_tokens / t);
    double sum = 0; for (double x : ts) sum += x;
    const double avg = sum / ts.size();
    double sq = 0; for (double x : ts) sq += (x - avg) * (x - avg);
    const double sd = ts.size() > 1 ? std::sqrt(sq / (ts.size() - 1)) : 0.0;
    printf("{\"n_prompt\": %d, \"n_gen\": %d, \"n_threads\": %d, \"avg_ts\": %.6f, \"stddev_ts\": %.6f, \"samples_ns\": [",
           n_prompt, n_gen, n_threads, avg, sd);
    for (size_t i = 0; i < samples_ns.size(); i++) printf("%s%llu", i ? ", " : "", (unsigned long long) samples_ns[i]);
    printf("]}\n");

    llama_free(ctx);
    ggml_threadpool_free(threadpool);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
