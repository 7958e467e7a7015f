// shim.cc is the C ABI that github.com/kelindar/search v0.4.1 binds with purego
// (loader.go there): load_library, load_model, load_context, free_model,
// free_context, embed_size and embed_text, plus kiln_set_threads for Kiln.
// It uses only llama.h, the C API, so it links against the prebuilt
// llama.cpp libraries that @node-llama-cpp/linux-x64 ships without building
// llama.cpp or depending on the C++ ABI of its "common" library.

#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"

#define KILN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// One thread by default: ggml's default of 4 threads on a 2-core machine made
// one embedding of a short query take ~0.85 s instead of a few ms.
std::atomic<int> g_threads{1};
std::atomic<int> g_log_level{GGML_LOG_LEVEL_WARN};

// free_model can arrive before free_context: kelindar's Vectorizer.Close frees
// the model and then drains its context pool. A model is released only once
// its last context is gone, so contexts never outlive their model.
struct model_refs {
    int contexts = 0;
    bool freed = false;
};
std::mutex g_mu;
std::unordered_map<const llama_model *, model_refs> g_models;

int env_int(const char * name, int fallback) {
    const char * v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
        return fallback;
    }
    char * end = nullptr;
    long n = std::strtol(v, &end, 10);
    return (*end == '\0' && n > 0 && n < 1024) ? int(n) : fallback;
}

void log_to_stderr(ggml_log_level level, const char * text, void *) {
    static thread_local ggml_log_level last = GGML_LOG_LEVEL_INFO;
    if (level == GGML_LOG_LEVEL_CONT) {
        level = last;
    } else {
        last = level;
    }
    if (level >= g_log_level.load()) {
        std::fputs(text, stderr);
    }
}

// The ggml CPU backends are separate libggml-cpu-<arch>.so files next to this
// library; ggml picks the best one for the CPU at run time.
std::string own_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&own_dir), &info) == 0 || info.dli_fname == nullptr) {
        return ".";
    }
    std::string path(info.dli_fname);
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

void release(const llama_model * model, bool drop_context) {
    bool free_now = false;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        auto it = g_models.find(model);
        if (it == g_models.end()) {
            return;
        }
        if (drop_context) {
            it->second.contexts--;
        } else {
            it->second.freed = true;
        }
        if (it->second.freed && it->second.contexts <= 0) {
            g_models.erase(it);
            free_now = true;
        }
    }
    if (free_now) {
        llama_model_free(const_cast<llama_model *>(model));
    }
}

}  // namespace

// load_library initializes llama.cpp once per process. kelindar passes 2
// (INFO) while meaning WARN, which would print every model-loading line, so
// WARN is the floor unless KILN_LLAMA_LOG_LEVEL (1 debug .. 4 error) says otherwise.
KILN_EXPORT uintptr_t load_library(int64_t log_level) {
    static std::once_flag once;
    std::call_once(once, [log_level] {
        int level = log_level > GGML_LOG_LEVEL_WARN ? int(log_level) : GGML_LOG_LEVEL_WARN;
        g_log_level = env_int("KILN_LLAMA_LOG_LEVEL", level);
        g_threads = env_int("KILN_LLAMA_THREADS", 1);
        llama_log_set(log_to_stderr, nullptr);
        ggml_backend_load_all_from_path(own_dir().c_str());
        llama_backend_init();
    });
    return 1;
}

// kiln_set_threads sets the thread count for contexts, including pooled ones
// on their next embedding; it returns the previous value.
KILN_EXPORT int32_t kiln_set_threads(int32_t n) {
    return n > 0 ? g_threads.exchange(n) : g_threads.load();
}

KILN_EXPORT llama_model * load_model(const char * path, uint32_t n_gpu_layers) {
    llama_model_params params = llama_model_default_params();
    params.n_gpu_layers = int32_t(n_gpu_layers);
    llama_model * model = llama_model_load_from_file(path, params);
    if (model != nullptr) {
        std::lock_guard<std::mutex> lock(g_mu);
        g_models[model] = model_refs{};
    }
    return model;
}

KILN_EXPORT void free_model(llama_model * model) {
    if (model != nullptr) {
        release(model, false);
    }
}

// load_context sizes the batch to the whole context: an encoder such as BERT
// must see its entire input in one micro-batch.
KILN_EXPORT llama_context * load_context(llama_model * model, uint32_t ctx_size, bool embeddings) {
    if (model == nullptr) {
        return nullptr;
    }
    llama_context_params params = llama_context_default_params();
    params.n_ctx = ctx_size > 0 ? ctx_size : uint32_t(llama_model_n_ctx_train(model));
    params.n_batch = params.n_ctx;
    params.n_ubatch = params.n_ctx;
    params.n_seq_max = 1;
    params.n_threads = g_threads.load();
    params.n_threads_batch = params.n_threads;
    params.embeddings = embeddings;
    params.no_perf = true;
    llama_context * ctx = llama_init_from_model(model, params);
    if (ctx != nullptr) {
        std::lock_guard<std::mutex> lock(g_mu);
        g_models[model].contexts++;
    }
    return ctx;
}

KILN_EXPORT void free_context(llama_context * ctx) {
    if (ctx == nullptr) {
        return;
    }
    const llama_model * model = llama_get_model(ctx);
    llama_free(ctx);
    release(model, true);
}

// embed_size is -1 for encoder-decoder models, which have no single embedding.
KILN_EXPORT int32_t embed_size(llama_model * model) {
    if (model == nullptr || (llama_model_has_encoder(model) && llama_model_has_decoder(model))) {
        return -1;
    }
    return llama_model_n_embd_out(model);
}

// embed_text writes the L2-normalized pooled embedding of text. It returns a
// 64-bit value because purego reads the whole register into Go's int. Input
// longer than the context is truncated (keeping the final [SEP]), as
// sentence-transformers does at max_seq_length. Codes: 0 ok, 2 missing [SEP],
// 3 tokenize/decode failure.
KILN_EXPORT int64_t embed_text(llama_context * ctx, const char * text, float * out, uint32_t * out_tokens) {
    const llama_model * model = llama_get_model(ctx);
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int32_t len = int32_t(std::strlen(text));

    // parse_special=false: text such as "[SEP]" in a query stays plain text.
    int32_t n = -llama_tokenize(vocab, text, len, nullptr, 0, true, false);
    std::vector<llama_token> tokens(n > 0 ? n : 0);
    if (n <= 0 || llama_tokenize(vocab, text, len, tokens.data(), n, true, false) != n) {
        return 3;
    }
    *out_tokens = uint32_t(n);

    const llama_token sep = llama_vocab_sep(vocab);
    const bool want_sep = llama_vocab_get_add_sep(vocab) && sep != LLAMA_TOKEN_NULL;
    const size_t max_tokens = llama_n_batch(ctx);
    if (tokens.size() > max_tokens) {
        tokens.resize(max_tokens);
        if (want_sep) {
            tokens.back() = sep;
        }
    }
    if (want_sep && tokens.back() != sep) {
        return 2;
    }

    const int threads = g_threads.load();
    if (llama_n_threads(ctx) != threads) {
        llama_set_n_threads(ctx, threads, threads);
    }

    llama_batch batch = llama_batch_init(int32_t(tokens.size()), 0, 1);
    for (size_t i = 0; i < tokens.size(); i++) {
        batch.token[i] = tokens[i];
        batch.pos[i] = llama_pos(i);
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = int32_t(tokens.size());

    llama_memory_clear(llama_get_memory(ctx), true);
    const int n_embd = llama_model_n_embd_out(model);
    std::vector<float> sum(n_embd, 0.0f);
    bool ok = llama_decode(ctx, batch) == 0;
    if (ok && llama_pooling_type(ctx) == LLAMA_POOLING_TYPE_NONE) {
        // Models without pooling (generative ones) get mean pooling here.
        for (int32_t i = 0; ok && i < batch.n_tokens; i++) {
            const float * e = llama_get_embeddings_ith(ctx, i);
            ok = e != nullptr;
            for (int j = 0; ok && j < n_embd; j++) {
                sum[j] += e[j];
            }
        }
    } else if (ok) {
        const float * e = llama_get_embeddings_seq(ctx, 0);
        ok = e != nullptr;
        if (ok) {
            std::memcpy(sum.data(), e, sizeof(float) * size_t(n_embd));
        }
    }
    llama_batch_free(batch);
    if (!ok) {
        return 3;
    }

    double norm = 0;
    for (float v : sum) {
        norm += double(v) * double(v);
    }
    const float scale = norm > 0 ? float(1.0 / std::sqrt(norm)) : 0.0f;
    for (int j = 0; j < n_embd; j++) {
        out[j] = sum[j] * scale;
    }
    return 0;
}
