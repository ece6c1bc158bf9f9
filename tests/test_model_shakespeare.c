/* test_model_shakespeare.c - the committed demo model (models/shakespeare/,
 * made by models/train_shakespeare.py) as the server runs it: loaded with
 * api_models_load and api_bpe_load, questioned with api_handle
 * (POST /model/gpt2 {"model", "text", "return": [idx, logits, attn_weights]}),
 * exactly the path of `attention-server --model ... --tokenizer ...`.
 *
 * What must stay true for whatever later loads it:
 *   - its tokenizer is byte-level: every byte is its own token (id = byte),
 *     any UTF-8 text encodes to its bytes and decodes back;
 *   - next-token loss on held-out English verse (64 windows of 128 bytes from
 *     the last 10% of the corpus, which training never saw, and two poems
 *     that are not in the corpus) far below chance, ln 256 = 5.55 nats:
 *     below LOSS_BOUND, and equal to what PyTorch computes on the same
 *     weights (models/shakespeare/training_run.json) within 1e-3;
 *   - a previous-token head: some head's mean attention weight on position
 *     i - 1 (queries 1 .. T-1 of those windows) at least PREV_BOUND, every
 *     head's mean equal to PyTorch's within 1e-3;
 *   - induction scores: on 64 random bytes of the corpus's alphabet written
 *     twice (training_run.json's heldout.induction.idx), every head's score
 *     by TransformerLens's induction head detector, computed from the maps
 *     the server returns, equal to PyTorch's within 1e-3 (this model has no
 *     induction head: its best scores 0.025, a uniform causal head about
 *     0.02; issue 32 asks for a retrained one scoring at least 0.4);
 *   - the book's generate() with the server's logits and core's sampler
 *     (attn_sample) writes the same bytes as PyTorch's generate() from the
 *     same seed.
 * Run from the repository root.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/bpe/bpe.h"
#include "core/attention.h"
#include "tests/support/check_main.h"

#define MODEL_DIR "models/shakespeare"
#define CORPUS "models/data/tinyshakespeare.txt"
#define POEMS "models/data/heldout_poems.txt"
#define T_MAX 128
#define N_HEAD 4
#define WINDOWS 64        /* train_shakespeare.py's TEST_WINDOWS */
#define LOSS_BOUND 2.5    /* nats per byte; chance is ln 256 = 5.55 */
#define PREV_BOUND 0.35   /* some head puts over a third of its weight on i - 1: about
                           * nine times the uniform causal share, mean of 1/(i+1) =
                           * 0.04; the committed model's strongest measures 0.43 */
#define AGREE 1e-3        /* server against PyTorch, per figure */

static api_models *models;
static api_bpe *bpe;

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s (run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert(s && fread(s, 1, (size_t)n, f) == (size_t)n);
    s[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return s;
}

static void load(void) {
    char why[512];
    ck_assert_msg(api_models_load(&models, "shakespeare=" MODEL_DIR "/model.safetensors", why,
                                  sizeof why) == 0, "%s", why);
    ck_assert_msg(api_bpe_load(MODEL_DIR, &bpe, why, sizeof why) == 0, "%s", why);
}

static void unload(void) {
    api_models_free(models);
    api_bpe_free(bpe);
    models = NULL;
    bpe = NULL;
}

/* ==== The server's answers ================================================= */

/* What one window tells: summed next-byte loss, summed weights on i - 1. */
typedef struct {
    double loss, prev[16][16];
    long n_loss, n_prev;
    int layers, heads;
} figures;

static json_t *ask(const char *text, size_t len) {
    json_t *req = json_pack("{s:s, s:s%, s:[s,s,s]}", "model", "shakespeare", "text", text, len,
                            "return", "idx", "logits", "attn_weights");
    char *body = json_dumps(req, JSON_COMPACT);
    api_tokenizer tok = {"shakespeare", bpe};
    api_limits lim = {.max_elements = 50000000, .models = models, .tokenizers = &tok,
                      .n_tokenizers = 1};
    api_reply r = {0};
    int st = api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &r);
    ck_assert_msg(st == 200, "status %d: %.300s", st, r.body.data ? r.body.data : "");
    json_error_t e;
    json_t *reply = json_loadb(r.body.data, r.body.len, 0, &e);
    ck_assert_msg(reply != NULL, "reply is not JSON: %s", e.text);
    api_reply_free(&r);
    free(body);
    json_decref(req);
    return reply;
}

/* Sends bytes[0..t) as text; the targets are bytes[1..t]. */
static void add_window(const unsigned char *bytes, int t, figures *f) {
    json_t *reply = ask((const char *)bytes, (size_t)t);
    json_t *idx = json_object_get(reply, "idx"), *logits = json_object_get(reply, "logits");
    json_t *attn = json_object_get(reply, "attn_weights");
    ck_assert_int_eq((int)json_array_size(idx), t);
    f->layers = (int)json_array_size(attn);
    f->heads = (int)json_array_size(json_array_get(attn, 0));
    ck_assert(f->layers > 0 && f->layers <= 16 && f->heads > 0 && f->heads <= 16);
    for (int i = 0; i < t; i++) {
        ck_assert_int_eq((int)json_integer_value(json_array_get(idx, i)), bytes[i]);
        json_t *row = json_array_get(logits, i);
        double m = -INFINITY, z = 0.0;
        for (size_t v = 0; v < json_array_size(row); v++)
            m = fmax(m, json_number_value(json_array_get(row, v)));
        for (size_t v = 0; v < json_array_size(row); v++)
            z += exp(json_number_value(json_array_get(row, v)) - m);
        f->loss -= json_number_value(json_array_get(row, bytes[i + 1])) - m - log(z);
    }
    f->n_loss += t;
    for (int l = 0; l < f->layers; l++)
        for (int h = 0; h < f->heads; h++) {
            json_t *map = json_array_get(json_array_get(attn, l), h);
            for (int i = 1; i < t; i++)
                f->prev[l][h] += json_number_value(json_array_get(json_array_get(map, i), i - 1));
        }
    f->n_prev += t - 1;
    json_decref(reply);
}

/* PyTorch's figures for the same text: training_run.json's heldout.<key>
 * (or the poem whose title starts with key). */
static json_t *pytorch_figures(const char *key) {
    json_error_t e;
    json_t *run = json_load_file(MODEL_DIR "/training_run.json", 0, &e);
    ck_assert_msg(run != NULL, "training_run.json: %s", e.text);
    json_t *held = json_object_get(run, "heldout"), *out = json_object_get(held, key);
    size_t i;
    json_t *poem;
    json_array_foreach(json_object_get(held, "poems"), i, poem) {
        const char *title = json_string_value(json_object_get(poem, "title"));
        if (title && strncmp(title, key, strlen(key)) == 0) out = poem;
    }
    ck_assert_msg(out != NULL, "no heldout figures for %s", key);
    json_incref(out);
    json_decref(run);
    return out;
}

/* The server's figures against PyTorch's; prints them. */
static void compare(const char *what, const figures *f, json_t *want) {
    double loss = f->loss / (double)f->n_loss;
    double want_loss = json_number_value(json_object_get(want, "loss_nats"));
    printf("%s: %ld bytes, %.4f nats/byte (PyTorch %.4f, chance %.4f)\n", what, f->n_loss, loss,
           want_loss, log(256.0));
    ck_assert_msg(fabs(loss - want_loss) <= AGREE, "%s: loss %.5f, PyTorch %.5f", what, loss,
                  want_loss);
    json_t *prev = json_object_get(want, "prev_token_attention");
    ck_assert_int_eq((int)json_array_size(prev), f->layers);
    for (int l = 0; l < f->layers; l++)
        for (int h = 0; h < f->heads; h++) {
            double got = f->prev[l][h] / (double)f->n_prev;
            double w = json_number_value(json_array_get(json_array_get(prev, l), h));
            ck_assert_msg(fabs(got - w) <= AGREE, "%s: layer %d head %d on i-1: %.5f, PyTorch %.5f",
                          what, l, h, got, w);
        }
}

/* ==== Tests ================================================================= */

START_TEST(test_byte_tokenizer) {
    ck_assert_uint_eq(api_bpe_vocab_size(bpe), 256);
    for (int b = 0; b < 256; b++) {
        const char *bytes;
        size_t len;
        ck_assert_int_eq(api_bpe_token_bytes(bpe, b, &bytes, &len), 0);
        ck_assert_uint_eq(len, 1);
        ck_assert_int_eq((unsigned char)bytes[0], b);
    }
    const char *texts[] = {"ROMEO:\nBut, soft! what light through yonder window breaks?",
                           "  two  spaces\t\ttabs\r\n\n\nand 's 't 're 1234 !!",
                           "caf\xc3\xa9 \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 x\xcc\x81",
                           "\x01\x02\x7f<|endoftext|>", ""};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        size_t len = strlen(texts[k]), n, back_len;
        int32_t *ids = NULL;
        char *back = NULL;
        ck_assert_int_eq(api_bpe_encode(bpe, texts[k], len, &ids, &n), 0);
        ck_assert_uint_eq(n, len);
        for (size_t i = 0; i < n; i++) ck_assert_int_eq(ids[i], (unsigned char)texts[k][i]);
        ck_assert_int_eq(api_bpe_decode(bpe, ids, n, &back, &back_len), 0);
        ck_assert_uint_eq(back_len, len);
        ck_assert(memcmp(back, texts[k], len) == 0);
        free(ids);
        free(back);
    }
}
END_TEST

START_TEST(test_config) {
    api_buf out = {0};
    api_limits lim = {.models = models};
    ck_assert_int_eq(api_models_json(&lim, &out), 0);
    json_t *j = json_loadb(out.data, out.len, 0, NULL);
    json_t *cfg = json_object_get(json_array_get(json_object_get(j, "models"), 0), "config");
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "vocab_size")), 256);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "block_size")), T_MAX);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_layer")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_head")), N_HEAD);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_embd")), 128);
    json_decref(j);
    api_buf_free(&out);
}
END_TEST

/* The last 10% of the corpus: WINDOWS whole windows, evenly spaced. */
START_TEST(test_heldout_corpus) {
    size_t len;
    char *text = read_file(CORPUS, &len);
    size_t start = (size_t)(0.9 * (double)len), n = len - start;
    size_t stride = ((n - 1) / T_MAX) / WINDOWS;
    static figures f;
    memset(&f, 0, sizeof f);
    for (size_t j = 0; j < WINDOWS; j++)
        add_window((const unsigned char *)text + start + j * stride * T_MAX, T_MAX, &f);
    json_t *want = pytorch_figures("test_subset");
    compare("held-out corpus", &f, want);
    json_decref(want);
    double loss = f.loss / (double)f.n_loss;
    ck_assert_msg(loss < LOSS_BOUND, "held-out loss %.4f nats/byte", loss);
    int prev_heads = 0;
    for (int l = 0; l < f.layers; l++)
        for (int h = 0; h < f.heads; h++)
            if (f.prev[l][h] / (double)f.n_prev >= PREV_BOUND) {
                printf("previous-token head: layer %d head %d, %.3f of its weight on i-1\n", l,
                       h, f.prev[l][h] / (double)f.n_prev);
                prev_heads++;
            }
    ck_assert_msg(prev_heads >= 1, "no head puts %.2f of its weight on the previous position",
                  PREV_BOUND);
    free(text);
}
END_TEST

/* The bytes that occur in the corpus: seen[b] = 1. */
static void corpus_alphabet(int seen[256]) {
    size_t len;
    char *text = read_file(CORPUS, &len);
    memset(seen, 0, 256 * sizeof *seen);
    for (size_t i = 0; i < len; i++) seen[(unsigned char)text[i]] = 1;
    free(text);
}

/* The maps the server gives for the ids of idx: attn_weights [L][H][T][T]. */
static json_t *maps_of_idx(json_t *idx) {
    json_t *req = json_pack("{s:s, s:O, s:[s]}", "model", "shakespeare", "idx", idx, "return",
                            "attn_weights");
    char *body = json_dumps(req, JSON_COMPACT);
    api_limits lim = {.max_elements = 50000000, .models = models};
    api_reply r = {0};
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &r), 200);
    json_t *reply = json_loadb(r.body.data, r.body.len, 0, NULL);
    ck_assert(reply != NULL);
    json_t *maps = json_incref(json_object_get(reply, "attn_weights"));
    json_decref(reply);
    api_reply_free(&r);
    free(body);
    json_decref(req);
    return maps;
}

/* TransformerLens's induction score of one head's map P [T][T] for ids:
 * sum(P * D) / sum(P), D[q][k] = 1 where 1 <= k <= q and ids[k-1] ==
 * ids[q] (k - 1 < q). */
static double induction_score(json_t *map, const int *ids, int t) {
    double hit = 0.0, all = 0.0;
    for (int q = 0; q < t; q++) {
        json_t *row = json_array_get(map, (size_t)q);
        for (int k = 0; k < t; k++) {
            double p = json_number_value(json_array_get(row, (size_t)k));
            all += p;
            if (k >= 1 && k <= q && ids[k - 1] == ids[q]) hit += p;
        }
    }
    return hit / all;
}

/* A random sequence of the corpus's bytes written twice, as a user would
 * make one: every head's induction score equal to PyTorch's. */
START_TEST(test_induction_scores) {
    json_t *want = pytorch_figures("induction");
    json_t *idx = json_object_get(want, "idx"), *scores = json_object_get(want, "scores");
    int t = (int)json_array_size(idx), ids[T_MAX], seen[256];
    ck_assert_int_eq(t, T_MAX);
    corpus_alphabet(seen);
    for (int i = 0; i < t; i++) {
        ids[i] = (int)json_integer_value(json_array_get(idx, (size_t)i));
        ck_assert_msg(ids[i] >= 0 && ids[i] < 256 && seen[ids[i]], "byte %d: %d", i, ids[i]);
    }
    for (int i = 0; i < t / 2; i++) ck_assert_int_eq(ids[i], ids[t / 2 + i]);
    json_t *maps = maps_of_idx(idx);
    ck_assert_int_eq((int)json_array_size(maps), (int)json_array_size(scores));
    double best = 0.0;
    for (size_t l = 0; l < json_array_size(maps); l++)
        for (size_t h = 0; h < json_array_size(json_array_get(maps, l)); h++) {
            double got = induction_score(json_array_get(json_array_get(maps, l), h), ids, t);
            double w = json_number_value(json_array_get(json_array_get(scores, l), h));
            ck_assert_msg(fabs(got - w) <= AGREE, "layer %zu head %zu induction %.5f, PyTorch %.5f",
                          l, h, got, w);
            best = fmax(best, got);
        }
    printf("induction: the best head scores %.3f (PyTorch's figures within %g)\n", best, AGREE);
    json_decref(maps);
    json_decref(want);
}
END_TEST

/* Each poem of heldout_poems.txt in windows of T_MAX as the script cuts it
 * (from its first byte, the last window shorter). */
START_TEST(test_heldout_poems) {
    size_t len;
    char *text = read_file(POEMS, &len);
    int poems = 0;
    for (char *at = strstr(text, "\n=== "); at; poems++) {
        char *title = at + 5, *body = strchr(title, '\n') + 1, *next = strstr(body, "\n=== ");
        size_t n = next ? (size_t)(next - body) + 1 : strlen(body); /* the text keeps its '\n' */
        while (n > 1 && body[n - 1] == '\n' && body[n - 2] == '\n') n--;
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(title, ',') - title), title);
        static figures f;
        memset(&f, 0, sizeof f);
        for (size_t s = 0; s + 1 < n; s += T_MAX) {
            int t = (int)(n - 1 - s < T_MAX ? n - 1 - s : T_MAX);
            add_window((const unsigned char *)body + s, t, &f);
        }
        json_t *want = pytorch_figures(key);
        compare(key, &f, want);
        json_decref(want);
        ck_assert_msg(f.loss / (double)f.n_loss < LOSS_BOUND, "%s: loss %.4f", key,
                      f.loss / (double)f.n_loss);
        at = next;
    }
    ck_assert_int_eq(poems, 2);
    free(text);
}
END_TEST

/* The last row of the logits the server gives for ids[0..n) (at most T_MAX). */
static void last_logits(const int32_t *ids, int n, float *row) {
    json_t *idx = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(idx, json_integer(ids[i]));
    json_t *req = json_pack("{s:s, s:o, s:[s]}", "model", "shakespeare", "idx", idx, "return",
                            "logits");
    char *body = json_dumps(req, JSON_COMPACT);
    api_limits lim = {.max_elements = 50000000, .models = models};
    api_reply r = {0};
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &r), 200);
    json_t *reply = json_loadb(r.body.data, r.body.len, 0, NULL);
    json_t *last = json_array_get(json_object_get(reply, "logits"), (size_t)n - 1);
    ck_assert_int_eq((int)json_array_size(last), 256);
    for (int v = 0; v < 256; v++) row[v] = (float)json_number_value(json_array_get(last, v));
    json_decref(reply);
    api_reply_free(&r);
    free(body);
    json_decref(req);
}

/* The book's generate() (temperature, top-k, torch.manual_seed before the
 * loop, the context cropped to the last T_MAX ids) with the server's logits
 * and core's sampler writes PyTorch's text (training_run.json's sample). */
START_TEST(test_generate_like_pytorch) {
    json_t *want = pytorch_figures("sample");
    const char *prompt = json_string_value(json_object_get(want, "prompt"));
    json_t *want_idx = json_object_get(want, "idx");
    int total = (int)json_array_size(want_idx), n = (int)strlen(prompt);
    attn_sampler s = ATTN_SAMPLER_GREEDY;
    s.temperature = json_number_value(json_object_get(want, "temperature"));
    s.top_k = (int)json_integer_value(json_object_get(want, "top_k"));
    int32_t *ids = malloc((size_t)total * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = (unsigned char)prompt[i];
    size_t bytes = attn_sample_scratch_size(&s, 256);
    void *scratch = malloc(bytes);
    attn_rng rng;
    attn_rng_seed(&rng, (uint64_t)json_integer_value(json_object_get(want, "seed")));
    for (; n < total; n++) {
        float row[256];
        int t = n < T_MAX ? n : T_MAX;
        last_logits(ids + n - t, t, row);
        attn_token_logprob chosen;
        ck_assert_int_eq(attn_sample(&s, row, 256, &rng, scratch, bytes, &chosen, NULL, 0, NULL),
                         ATTN_OK);
        ids[n] = chosen.id;
        ck_assert_msg(ids[n] == json_integer_value(json_array_get(want_idx, (size_t)n)),
                      "byte %d: %d, PyTorch's generate() wrote %d", n, ids[n],
                      (int)json_integer_value(json_array_get(want_idx, (size_t)n)));
    }
    printf("generate(): %d bytes after the prompt, PyTorch's text\n", total - (int)strlen(prompt));
    free(scratch);
    free(ids);
    json_decref(want);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("model_shakespeare");
    const TTest *tests[] = {test_byte_tokenizer, test_config, test_heldout_corpus,
                            test_heldout_poems, test_induction_scores, test_generate_like_pytorch,
                            NULL};
    TCase *tc = tcase_with(s, "server path", 120, tests);
    tcase_add_checked_fixture(tc, load, unload);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
