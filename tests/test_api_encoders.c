/* test_api_encoders.c - the encoder families from Hugging Face folders
 * (tests/golden/encoders/<case>/: config.json, model.safetensors in F32, F16
 * or BF16 under the MLM class's or BertModel's bare names, sentence-
 * transformers' modules.json and pooling, RoBERTa's vocab.json + merges.txt,
 * and expected.gpt2 written by tests/golden/generate_encoders.py from
 * PyTorch references transcribed from modeling_bert/roberta/distilbert.py),
 * loaded as `--model NAME=DIR` loads them and asked through POST /model:
 *
 *   a padded batch (rows of different lengths, token types of sentence
 *     pairs) with every hook: logits, hidden states, every hook, pooled
 *     embeddings, pooler_output and fill_mask's top tokens within 1e-4 +
 *     1e-3 |want| of PyTorch's; every padded position null, masked scores
 *     null where PyTorch's are -inf;
 *   the same batch as idx [B][T] with attention_mask and no hook (the packed
 *     run: the tokens alone through the projections);
 *   the neuron view of a head: q, k, q*k, q.k, scores and weights equal to
 *     PyTorch's hooks (and a decoder's, after its rotary positions);
 *   a decoder's padded batch: each row's logits and hooks equal to the
 *     golden's first positions (a causal prefix), next_token at each row's
 *     last token;
 *   RoBERTa's text template (<s> A </s></s> B </s>, <mask> taking its space);
 *   the errors of what a model cannot give.
 * Run from the repository root. */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "tests/support/api_call.h"
#include "tests/support/check_main.h"
#include "tests/support/golden_tensors.h"

#define DIR_ROOT "tests/golden/encoders"
#define MAX_CASES 16

static gt_case_name g_cases[MAX_CASES];
static int g_n;

/* A loaded case: its golden file, the model, the batch's shape and mask. */
typedef struct {
    gt_file g;
    api_models *models;
    api_limits lim;
    int B, T;
    const int32_t *idx, *mask, *types;
} tcase;

static void case_open(tcase *c, const char *dir_root, const char *name) {
    char dir[512], path[600], spec[600], why[512];
    snprintf(dir, sizeof dir, "%s/%s", dir_root, name);
    snprintf(path, sizeof path, "%s/expected.gpt2", dir);
    snprintf(spec, sizeof spec, "m=%s", dir);
    gt_load(path, &c->g);
    c->models = NULL;
    ck_assert_msg(api_models_load(&c->models, spec, why, sizeof why) == 0, "%s: %s", dir, why);
    c->lim = (api_limits){.max_elements = 100000000, .models = c->models};
    c->B = gt_value(&c->g, "B") ? atoi(gt_value(&c->g, "B")) : 1;
    c->idx = gt_find(&c->g, "idx")->data;
    c->T = (int)(gt_find(&c->g, "idx")->n / (size_t)c->B);
    c->mask = gt_find(&c->g, "attention_mask") ? gt_find(&c->g, "attention_mask")->data : NULL;
    c->types = gt_find(&c->g, "token_type_ids") ? gt_find(&c->g, "token_type_ids")->data : NULL;
}

static void case_close(tcase *c) {
    api_models_free(c->models);
    gt_free(&c->g);
}

static int row_len(const tcase *c, int b) {
    int n = 0;
    for (int t = 0; t < c->T; t++) n += c->mask ? c->mask[b * c->T + t] != 0 : 1;
    return n;
}

/* Rows of v [B][T] as JSON: each row's tokens alone (ragged), or all T. */
static json_t *rows_json(const tcase *c, const int32_t *v, int ragged) {
    json_t *a = json_array();
    for (int b = 0; b < c->B; b++) {
        json_t *r = json_array();
        int n = ragged ? row_len(c, b) : c->T;
        for (int t = 0; t < n; t++) json_array_append_new(r, json_integer(v[b * c->T + t]));
        json_array_append_new(a, r);
    }
    return a;
}

/* Where a reply tensor's padded query positions are: [lead][B][T][width],
 * or (map) [lead][B][H][T][T]. */
typedef struct {
    const tcase *c;
    size_t width, H;
    int map;
} pad_shape;

/* 1 when element i of the tensor ctx (a pad_shape) describes is at a padded
 * query position. */
static int padded(const void *ctx, size_t i) {
    const pad_shape *p = ctx;
    const tcase *c = p->c;
    size_t T = (size_t)c->T, b, t;
    if (p->map) {
        size_t row = i / T; /* [..][B][H][T] */
        t = row % T, b = row / T / p->H % (size_t)c->B;
    } else {
        size_t pos = i / p->width; /* [..][B][T] */
        t = pos % T, b = pos / T % (size_t)c->B;
    }
    return c->mask && !c->mask[b * T + t];
}

/* A flat reply tensor against want: null at padded positions and where
 * PyTorch has -inf, else within tolerance. The largest difference. */
static double expect(const tcase *c, const char *what, const json_t *got, const gt_tensor *want,
                     int map, int lead) {
    size_t BT = (size_t)c->B * (size_t)c->T;
    pad_shape p = {c, want->n / BT / (size_t)lead, map ? want->n / (BT * (size_t)c->T) : 1, map};
    return gt_expect_flat(what, got, want, padded, &p);
}

static int is_hook(const char *name) { return strncmp(name, "blocks.", 7) == 0; }
static int is_map(const char *name) { return strstr(name, "hook_attn_scores") || strstr(name, "hook_pattern"); }

/* The batch into request r: its rows (each row's tokens, or [B][T] with
 * attention_mask) and their token types (models that have them). */
static void batch_json(const tcase *c, json_t *r, int ragged) {
    json_object_set_new(r, "idx", rows_json(c, c->idx, ragged));
    if (!ragged) json_object_set_new(r, "attention_mask", rows_json(c, c->mask, 0));
    const char *mt = gt_value(&c->g, "model_type");
    if (c->types && mt && strcmp(mt, "distilbert") != 0)
        json_object_set_new(r, "token_type_ids", rows_json(c, c->types, ragged));
}

/* The request: the batch (ragged, or [B][T] with attention_mask), the
 * outputs the golden file holds, hooks or not, fill_mask. */
static char *body_of(const tcase *c, int ragged, int hooks) {
    json_t *r = json_object(), *ret = json_array();
    json_object_set_new(r, "model", json_string("m"));
    batch_json(c, r, ragged);
    static const char *const outs[] = {"logits", "hidden_states", "embeddings", "pooler_output"};
    for (size_t i = 0; i < 4; i++)
        if (gt_find(&c->g, outs[i])) json_array_append_new(ret, json_string(outs[i]));
    for (int i = 0; hooks && i < c->g.n; i++)
        if (is_hook(c->g.t[i].name)) json_array_append_new(ret, json_string(c->g.t[i].name));
    json_object_set_new(r, "return", ret);
    json_object_set_new(r, "output_format", json_string("flat"));
    if (gt_find(&c->g, "fill_ids"))
        json_object_set_new(r, "fill_mask", json_pack("{s:i,s:i}", "top_k", atoi(gt_value(&c->g, "top_k")),
                                                      "mask_id", atoi(gt_value(&c->g, "mask_id"))));
    return tapi_body(r, NULL);
}

/* fill_mask's list against the golden's positions, ids and probabilities. */
static void expect_fill(const tcase *c, const json_t *fm) {
    const gt_tensor *pos = gt_find(&c->g, "fill_pos"), *ids = gt_find(&c->g, "fill_ids");
    const gt_tensor *probs = gt_find(&c->g, "fill_probs");
    size_t k = (size_t)atoi(gt_value(&c->g, "top_k")), n = pos->n / 2;
    ck_assert_uint_eq(json_array_size(fm), n);
    for (size_t m = 0; m < n; m++) {
        const json_t *f = json_array_get(fm, m);
        const int32_t *p = (const int32_t *)pos->data + 2 * m;
        ck_assert_int_eq(json_integer_value(json_object_get(f, "batch")), p[0]);
        ck_assert_int_eq(json_integer_value(json_object_get(f, "position")), p[1]);
        for (size_t j = 0; j < k; j++) {
            int32_t want = ((const int32_t *)ids->data)[m * k + j];
            float pw = ((const float *)probs->data)[m * k + j];
            ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(f, "ids"), j)), want);
            ck_assert(fabs(json_number_value(json_array_get(json_object_get(f, "probs"), j)) - pw) <= GT_ATOL);
        }
    }
}

/* The blocks of the golden file's model (its hook_resid_pre hooks). */
static int blocks(const tcase *c) {
    int n = 0;
    for (int i = 0; i < c->g.n; i++) n += strstr(c->g.t[i].name, ".hook_resid_pre") != NULL;
    return n;
}

/* The outputs of one request against the golden file. */
static double check_reply(const tcase *c, const json_t *r, int hooks) {
    double worst = 0.0, w;
    static const char *const outs[] = {"logits", "hidden_states", "embeddings", "pooler_output"};
    for (size_t i = 0; i < 4; i++) {
        const gt_tensor *want = gt_find(&c->g, outs[i]);
        if (!want) continue;
        /* pooled rows have no positions: embeddings and pooler_output */
        const tcase *cc = i < 2 ? c : &(tcase){.B = c->B, .T = 1};
        w = expect(cc, outs[i], json_object_get(r, outs[i]), want, 0, i == 1 ? blocks(c) + 1 : 1);
        worst = w > worst ? w : worst;
    }
    for (int i = 0; hooks && i < c->g.n; i++) {
        const char *name = c->g.t[i].name;
        if (!is_hook(name)) continue;
        const json_t *got = json_object_get(json_object_get(r, "cache"), name);
        ck_assert_msg(got != NULL, "no %s in the reply's cache", name);
        w = expect(c, name, got, &c->g.t[i], is_map(name) != 0, 1);
        worst = w > worst ? w : worst;
    }
    if (gt_find(&c->g, "fill_ids")) expect_fill(c, json_object_get(r, "fill_mask"));
    return worst;
}

START_TEST(encoder_case) {
    tcase c;
    case_open(&c, DIR_ROOT, g_cases[_i]);
    for (int form = 0; form < 2; form++) { /* ragged with hooks; [B][T] + mask, packed */
        char *body = body_of(&c, form == 0, form == 0);
        json_t *r = tapi_call(API_EP_MODEL, body, &c.lim, 200);
        ck_assert_str_eq(json_string_value(json_object_get(r, "module")), gt_value(&c.g, "family"));
        double worst = check_reply(&c, r, form == 0);
        printf("%s (%s, %s): within tolerance, padded positions null (largest difference %.3g)\n",
               g_cases[_i], gt_value(&c.g, "family"), form ? "[B][T] + attention_mask, packed" :
               "rows of different lengths, every hook", worst);
        json_decref(r);
        free(body);
    }
    case_close(&c);
}
END_TEST

/* ==== The neuron view ====================================================== */

/* The i-th value of a flat tensor of the reply's group g (NULL for null). */
static const json_t *at(const json_t *g, const char *key, size_t i) {
    return json_array_get(json_object_get(json_object_get(g, key), "data"), i);
}

static int near(const json_t *x, double want) { return json_is_number(x) && gt_near(json_number_value(x), want); }

/* hook's [B][T][heads][D] row (b, t, head) of the golden file. */
static const float *head_row(const tcase *c, const char *hook, int b, int t, int head, int D) {
    const gt_tensor *g = gt_find(&c->g, hook);
    ck_assert_msg(g != NULL, "no %s in %s", hook, c->g.path);
    size_t heads = g->n / ((size_t)c->B * (size_t)c->T * (size_t)D);
    return (const float *)g->data + (((size_t)b * (size_t)c->T + (size_t)t) * heads + (size_t)head) * (size_t)D;
}

typedef struct {
    const char *qk;            /* "" (hook_q, hook_k) or "rot_" */
    int layer, head, kv_head, query, batch;
} neuron_case;

/* Key j of the view: k, q*k (null for a padded key), the dot, the scores
 * (dot times scale; null where PyTorch's is -inf) and the weight. */
static void neuron_key(const tcase *c, const neuron_case *n, const json_t *nv, const float *qw, int D,
                       int j, const float *srow, const float *prow) {
    char hk[96];
    snprintf(hk, sizeof hk, "blocks.%d.attn.hook_%sk", n->layer, n->qk);
    const float *kw = head_row(c, hk, n->batch, j, n->kv_head, D);
    int pad = c->mask && !c->mask[n->batch * c->T + j];
    double dot = 0.0, scale = json_number_value(json_object_get(nv, "scale"));
    for (int d = 0; d < D; d++) {
        size_t i = (size_t)(j * D + d);
        ck_assert_msg(pad ? json_is_null(at(nv, "k", i)) : near(at(nv, "k", i), kw[d]), "k[%d][%d]", j, d);
        ck_assert_msg(pad ? json_is_null(at(nv, "q_times_k", i)) : near(at(nv, "q_times_k", i), (double)qw[d] * kw[d]),
                      "q_times_k[%d][%d]", j, d);
        dot += (double)qw[d] * kw[d];
    }
    ck_assert_msg(near(at(nv, "dot", (size_t)j), dot), "dot[%d]", j);
    ck_assert_msg(isinf(srow[j]) ? json_is_null(at(nv, "scores", (size_t)j))
                                 : near(at(nv, "scores", (size_t)j), srow[j]) && gt_near(dot * scale, srow[j]),
                  "scores[%d]", j);
    ck_assert_msg(fabs(json_number_value(at(nv, "weights", (size_t)j)) - prow[j]) <= GT_ATOL, "weights[%d]", j);
}

/* The view of one head and query against the golden hooks. */
static void check_neuron(const tcase *c, const neuron_case *n) {
    char hq[96], hs[96], hp[96];
    json_t *rq = json_pack("{s:s,s:[],s:s,s:{s:i,s:i,s:i,s:i}}", "model", "m", "return", "output_format",
                           "flat", "neuron_view", "layer", n->layer, "head", n->head, "query", n->query,
                           "batch", n->batch);
    batch_json(c, rq, 1);
    char *body = tapi_body(rq, NULL);
    json_t *r = tapi_call(API_EP_MODEL, body, &c->lim, 200), *nv = json_object_get(r, "neuron_view");
    snprintf(hq, sizeof hq, "blocks.%d.attn.hook_%sq", n->layer, n->qk);
    snprintf(hs, sizeof hs, "blocks.%d.attn.hook_attn_scores", n->layer);
    snprintf(hp, sizeof hp, "blocks.%d.attn.hook_pattern", n->layer);
    ck_assert_str_eq(json_string_value(json_object_get(nv, "q_hook")), hq);
    ck_assert_int_eq(json_integer_value(json_object_get(nv, "kv_head")), n->kv_head);
    int D = (int)json_array_size(json_object_get(json_object_get(nv, "q"), "data"));
    const float *qw = head_row(c, hq, n->batch, n->query, n->head, D);
    for (int d = 0; d < D; d++) ck_assert_msg(near(at(nv, "q", (size_t)d), qw[d]), "q[%d]", d);
    size_t H = gt_find(&c->g, hs)->n / ((size_t)c->B * (size_t)c->T * (size_t)c->T);
    size_t row = (((size_t)n->batch * H + (size_t)n->head) * (size_t)c->T + (size_t)n->query) * (size_t)c->T;
    for (int j = 0; j < c->T; j++)
        neuron_key(c, n, nv, qw, D, j, (const float *)gt_find(&c->g, hs)->data + row,
                   (const float *)gt_find(&c->g, hp)->data + row);
    printf("%s: neuron view of layer %d head %d query %d row %d: q, k, q*k, q.k, scores and weights "
           "are PyTorch's\n", c->g.path, n->layer, n->head, n->query, n->batch);
    json_decref(r);
    free(body);
}

START_TEST(neuron_views) {
    /* an encoder's padded row (its padded keys null), and two decoders after
     * their rotary positions (one with grouped key/value heads) */
    tcase c;
    case_open(&c, DIR_ROOT, "bert_mlm_pairs_f32");
    check_neuron(&c, &(neuron_case){"", 1, 2, 2, 3, 1});
    case_close(&c);
    case_open(&c, "tests/golden/families", "mistral_window4_gqa4x2_f32");
    check_neuron(&c, &(neuron_case){"rot_", 1, 3, 1, 7, 1});
    case_close(&c);
    case_open(&c, "tests/golden/families", "pythia_parallel_h3_f16");
    check_neuron(&c, &(neuron_case){"rot_", 0, 2, 2, 5, 0});
    case_close(&c);
}
END_TEST

/* ==== A decoder's padded batch =============================================== */

/* Row 1 of a family golden cut to `keep` tokens and padded: its logits and
 * hooks at those positions are the golden's (a causal model's prefix), its
 * padded positions null, next_token each row's last token's argmax; with
 * hooks (the dense run, padding as the kernels' key mask) and without (the
 * packed run). */
static void decoder_padded(const char *name, int keep) {
    tcase c;
    case_open(&c, "tests/golden/families", name);
    ck_assert_int_eq(c.B, 2);
    int32_t *mask = malloc((size_t)c.B * (size_t)c.T * sizeof *mask);
    for (int i = 0; i < c.B * c.T; i++) mask[i] = i < c.T || i - c.T < keep;
    c.mask = mask;
    for (int hooks = 0; hooks < 2; hooks++) {
        json_t *r = json_object(), *ret = json_pack("[s,s]", "logits", "next_token");
        json_object_set_new(r, "model", json_string("m"));
        json_object_set_new(r, "idx", rows_json(&c, c.idx, 1));
        for (int i = 0; hooks && i < c.g.n; i++)
            if (is_hook(c.g.t[i].name)) json_array_append_new(ret, json_string(c.g.t[i].name));
        json_object_set_new(r, "return", ret);
        json_object_set_new(r, "output_format", json_string("flat"));
        char *body = tapi_body(r, NULL);
        json_t *rep = tapi_call(API_EP_MODEL, body, &c.lim, 200);
        double worst = check_reply(&c, rep, hooks);
        const gt_tensor *lg = gt_find(&c.g, "logits");
        size_t V = lg->n / ((size_t)c.B * (size_t)c.T);
        for (int b = 0; b < c.B; b++) {
            const float *row = (const float *)lg->data + ((size_t)b * (size_t)c.T + (size_t)(row_len(&c, b) - 1)) * V;
            size_t best = 0;
            for (size_t v = 1; v < V; v++) best = row[v] > row[best] ? v : best;
            ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(rep, "next_token"), (size_t)b)), (json_int_t)best);
        }
        printf("%s, row 1 cut to %d tokens and padded%s: equal to PyTorch's prefix (largest difference "
               "%.3g), padding null, next_token at each row's last token\n", name, keep,
               hooks ? ", every hook" : ", no hook (packed where no window)", worst);
        json_decref(rep);
        free(body);
    }
    free(mask);
    case_close(&c);
}

START_TEST(decoders_padded) {
    decoder_padded("llama2_mha_untied_f32", 5);
    decoder_padded("mistral_window4_gqa4x2_f32", 6);
    decoder_padded("pythia_parallel_h3_f16", 3);
}
END_TEST

/* ==== RoBERTa's text ========================================================== */

/* The folder's byte-level tokenizer: <s> 0, </s> 2, byte b at 4 + b, " t"
 * 260, <mask> 261. A text with <mask> (taking the space before it), and a
 * pair, give the template's ids; their logits are the ids' own. */
START_TEST(roberta_text) {
    tcase c;
    case_open(&c, DIR_ROOT, "roberta_mlm_f16");
    const char *body = "{\"model\":\"m\",\"text\":[\"Hi <mask>!\",[\"to be\",\"it\"]],"
                       "\"return\":[\"idx\",\"tokens\",\"logits\"],\"fill_mask\":{\"top_k\":3}}";
    json_t *r = tapi_call(API_EP_MODEL, body, &c.lim, 200);
    static const int want[2][11] = {{0, 4 + 'H', 4 + 'i', 261, 4 + '!', 2, 1, 1, 1, 1, 1},
                                    {0, 4 + 't', 4 + 'o', 4 + ' ', 4 + 'b', 4 + 'e', 2, 2, 4 + 'i', 4 + 't', 2}};
    const json_t *idx = json_object_get(r, "idx");
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 11; t++)
            ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(idx, (size_t)b), (size_t)t)), want[b][t]);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "sentence_b_start"), 1)), 8);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "sentence_b_start"), 0)), -1);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(json_object_get(r, "tokens"), 0), 3)), "<mask>");
    ck_assert(json_is_null(json_array_get(json_array_get(json_array_get(json_object_get(r, "logits"), 0), 6), 0)));
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(r, "fill_mask"), 0), "position")), 3);
    /* the same ids given as idx: the same logits */
    json_t *r2 = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[[0,76,109,261,37,2],[0,120,115,36,102,105,2,2,109,120,2]]}",
                           &c.lim, 200);
    ck_assert(json_equal(json_object_get(r, "logits"), json_object_get(r2, "logits")));
    printf("RoBERTa's text: <s> A </s> and <s> A </s></s> B </s>, <mask> with its space, the ids' logits\n");
    json_decref(r);
    json_decref(r2);
    case_close(&c);
}
END_TEST

/* ==== BERT's vocab.txt ======================================================== */

/* The BERT golden's weights with a WordPiece vocab.txt of its 120 rows (no
 * tokenizer_config.json: BertTokenizer's defaults, lowercase and accents
 * stripped): a pair is [CLS] A [SEP] B [SEP] with token types 0 then 1. */
START_TEST(bert_vocab_txt) {
    static const char *const words[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                        "cat", "sat", "it", "was", "tired", ".", "##s"};
    char dir[] = "/tmp/attn_bert_vocab_XXXXXX", path[600], src[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    static const char *const files[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        ck_assert_ptr_nonnull(realpath(DIR_ROOT "/bert_mlm_pairs_f32", src));
        snprintf(src + strlen(src), sizeof src - strlen(src), "/%s", files[i]);
        ck_assert_int_eq(symlink(src, path), 0);
    }
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 120; i++)
        i < 13 ? fprintf(f, "%s\n", words[i]) : fprintf(f, "w%d\n", i);
    fclose(f);
    api_models *models = NULL;
    char spec[600], why[512];
    snprintf(spec, sizeof spec, "m=%s", dir);
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.max_elements = 100000000, .models = models};
    json_t *r = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"text\":[[\"The CATS s\\u00e1t.\",\"It was tired\"]],"
                          "\"return\":[\"idx\",\"token_type_ids\",\"tokens\"]}", &lim, 200);
    static const int want[11] = {2, 5, 6, 12, 7, 11, 3, 8, 9, 10, 3}, types[11] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    const json_t *idx = json_array_get(json_object_get(r, "idx"), 0);
    const json_t *tt = json_array_get(json_object_get(r, "token_type_ids"), 0);
    ck_assert_int_eq(json_array_size(idx), 11);
    for (size_t t = 0; t < 11; t++) {
        ck_assert_int_eq(json_integer_value(json_array_get(idx, t)), want[t]);
        ck_assert_int_eq(json_integer_value(json_array_get(tt, t)), types[t]);
    }
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "sentence_b_start"), 0)), 7);
    /* the tokens as the vocabulary spells them (encoding.tokens), no space before a word */
    const json_t *tok = json_array_get(json_object_get(r, "tokens"), 0);
    ck_assert_str_eq(json_string_value(json_array_get(tok, 0)), "[CLS]");
    ck_assert_str_eq(json_string_value(json_array_get(tok, 1)), "the");
    ck_assert_str_eq(json_string_value(json_array_get(tok, 3)), "##s");
    /* the folder states no truncation: a row over the 40 positions is a 400 */
    char body[600] = "{\"model\":\"m\",\"text\":\"";
    for (int i = 0; i < 40; i++) strcat(body, "cat ");
    strcat(body, "\"}");
    tapi_expect_field(API_EP_MODEL, body, &lim, 400, "text");
    printf("BERT's vocab.txt: [CLS] the cat ##s sat . [SEP] it was tired [SEP], types 0 then 1\n");
    json_decref(r);
    api_models_free(models);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, i < 2 ? files[i] : "vocab.txt");
        unlink(path);
    }
    rmdir(dir);
}
END_TEST

/* ==== The batch's own inputs in a reply left in place ========================= */

/* attention_mask and token_type_ids asked of a padded pair batch as
 * safetensors in parts (api_limits.zero_copy, the server's way): once the
 * request is released and the reply flattened, they are the batch's (they
 * pointed at the freed request: ASan's heap-use-after-free). */
START_TEST(inputs_in_parts) {
    tcase c;
    case_open(&c, DIR_ROOT, "bert_mlm_pairs_f32");
    ck_assert_ptr_nonnull(c.mask);
    ck_assert_ptr_nonnull(c.types);
    json_t *r = json_object();
    json_object_set_new(r, "model", json_string("m"));
    batch_json(&c, r, 1);
    json_object_set_new(r, "return", json_pack("[s, s]", "attention_mask", "token_type_ids"));
    json_object_set_new(r, "output_format", json_string("safetensors"));
    char *body = tapi_body(r, NULL);
    c.lim.zero_copy = 1;
    api_reply rep;
    api_handle(API_EP_MODEL, body, strlen(body), &c.lim, &rep);
    ck_assert_int_eq(rep.status, 200);
    ck_assert_uint_eq(api_reply_flatten(&rep), 0);
    uint64_t n;
    memcpy(&n, rep.body.data, 8);
    json_t *hdr = json_loadb(rep.body.data + 8, (size_t)n, 0, NULL);
    ck_assert_ptr_nonnull(hdr);
    const char *base = rep.body.data + 8 + n;
    size_t BT = (size_t)c.B * (size_t)c.T;
    const json_t *tt = json_object_get(json_object_get(hdr, "token_type_ids"), "data_offsets");
    const json_t *am = json_object_get(json_object_get(hdr, "attention_mask"), "data_offsets");
    ck_assert_ptr_nonnull(tt);
    ck_assert_ptr_nonnull(am);
    for (size_t i = 0; i < BT; i++) {
        int32_t t;
        memcpy(&t, base + json_integer_value(json_array_get(tt, 0)) + 4 * i, 4);
        uint8_t m = (uint8_t)base[json_integer_value(json_array_get(am, 0)) + (json_int_t)i];
        ck_assert_int_eq(m, c.mask[i] != 0);
        if (c.mask[i]) ck_assert_int_eq(t, c.types[i]);
    }
    json_decref(hdr);
    api_reply_free(&rep);
    free(body); /* tapi_body took r */
    case_close(&c);
}
END_TEST

/* ==== Importance on a padded batch ============================================ */

/* The numbers of v (nested arrays) into out[*n ..), at most cap. */
static void numbers(const json_t *v, double *out, size_t *n, size_t cap) {
    if (json_is_number(v) && *n < cap) out[(*n)++] = json_number_value(v);
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) numbers(json_array_get(v, i), out, n, cap);
}

/* The golden's padded batch ([B][T] + attention_mask, token types) asked
 * for importance: each row's scores are the row's alone, unpadded (the
 * loss scores the row's tokens; the ablated runs keep the padding). */
static void importance_case(const char *name) {
    tcase c;
    case_open(&c, DIR_ROOT, name);
    json_t *req = json_object();
    json_object_set_new(req, "model", json_string("m"));
    batch_json(&c, req, 0);
    json_object_set_new(req, "analysis", json_pack("[s]", "importance"));
    json_object_set_new(req, "return", json_array());
    char *body = json_dumps(req, JSON_COMPACT);
    json_t *r = tapi_call(API_EP_MODEL, body, &c.lim, 200);
    free(body);
    enum { MAX_HEADS = 256 };
    static double all[8 * MAX_HEADS], alone[MAX_HEADS];
    size_t n_all = 0, n_alone;
    numbers(json_object_get(json_object_get(r, "analysis"), "importance"), all, &n_all, 8 * MAX_HEADS);
    size_t per_row = n_all / (size_t)c.B;
    ck_assert_int_gt(per_row, 0);
    double worst = 0.0;
    for (int b = 0; b < c.B; b++) {
        json_t *one = json_deep_copy(req), *idx = json_array_get(json_object_get(req, "idx"), (size_t)b);
        json_t *types = json_array_get(json_object_get(req, "token_type_ids"), (size_t)b);
        int n = row_len(&c, b);
        json_t *ri = json_array(), *rt = json_array();
        for (int t = 0; t < n; t++) {
            json_array_append(ri, json_array_get(idx, (size_t)t));
            if (types) json_array_append(rt, json_array_get(types, (size_t)t));
        }
        json_object_set_new(one, "idx", json_pack("[o]", ri));
        json_object_del(one, "attention_mask");
        if (types) json_object_set_new(one, "token_type_ids", json_pack("[o]", rt));
        else json_decref(rt);
        body = json_dumps(one, JSON_COMPACT);
        json_t *r1 = tapi_call(API_EP_MODEL, body, &c.lim, 200);
        n_alone = 0;
        numbers(json_object_get(json_object_get(r1, "analysis"), "importance"), alone, &n_alone, MAX_HEADS);
        ck_assert_uint_eq(n_alone, per_row);
        for (size_t i = 0; i < per_row; i++) {
            double d = fabs(all[(size_t)b * per_row + i] - alone[i]);
            worst = d > worst ? d : worst;
            ck_assert_msg(d < GT_ATOL + GT_RTOL * fabs(alone[i]), "%s row %d head %zu: importance %g, the row alone %g",
                          name, b, i, all[(size_t)b * per_row + i], alone[i]);
        }
        free(body);
        json_decref(r1);
        json_decref(one);
    }
    printf("%s: importance of a padded batch = each row's alone (largest difference %.2g)\n", name, worst);
    json_decref(r);
    json_decref(req);
    case_close(&c);
}

START_TEST(importance_padded) {
    importance_case("bert_mlm_pairs_f32");
    importance_case("roberta_mlm_f16");
}
END_TEST

/* ==== Texts through the folder's own tokenizer ================================ */

/* The first words of the vocabularies below (ids 0..12); w13 .. up to the
 * model's vocab_size after them. */
static const char *const g_words[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                      "cat", "sat", "it", "was", "tired", ".", "##s"};
#define N_WORDS 13

/* A temporary model folder: golden case `from`'s files in links linked,
 * then file `name` written with text; *dir ("/tmp/attn_enc_XXXXXX") is made. */
static void folder_make(char *dir, const char *from, const char *const *links, const char *name,
                        const char *text) {
    char path[600], src[PATH_MAX + 64], rel[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (int i = 0; links[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, links[i]);
        snprintf(rel, sizeof rel, "%s/%s", DIR_ROOT, from);
        ck_assert_ptr_nonnull(realpath(rel, src));
        snprintf(src + strlen(src), sizeof src - strlen(src), "/%s", links[i]);
        ck_assert_int_eq(symlink(src, path), 0);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void folder_remove(const char *dir, const char *const *links, const char *name) {
    char path[600];
    for (int i = 0; links[i]; i++) snprintf(path, sizeof path, "%s/%s", dir, links[i]), unlink(path);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    rmdir(dir);
}

/* A BERT tokenizer.json of n tokens (g_words, then wN), lowercasing, with
 * the [CLS] A [SEP] B:1 [SEP]:1 template and truncation to 10, longest
 * first: into a malloc'd string. */
static char *bert_tokenizer_json(int n) {
    json_t *vocab = json_object(), *added = json_array();
    for (int i = 0; i < n; i++) {
        char w[16];
        snprintf(w, sizeof w, "w%d", i);
        json_object_set_new(vocab, i < N_WORDS ? g_words[i] : w, json_integer(i));
        if (i < 5)
            json_array_append_new(added, json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", i, "content", g_words[i],
                                                   "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1));
    }
    json_t *root = json_pack(
        "{s:s, s:{s:s, s:i, s:s, s:i}, s:n, s:o, s:{s:s, s:b, s:b, s:n, s:b}, s:{s:s},"
        " s:{s:s, s:[{s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}],"
        "      s:[{s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}],"
        "      s:{s:{s:s, s:[i], s:[s]}, s:{s:s, s:[i], s:[s]}}},"
        " s:{s:s, s:s, s:b}, s:{s:s, s:s, s:s, s:i, s:o}}",
        "version", "1.0", "truncation", "direction", "Right", "max_length", 10, "strategy", "LongestFirst", "stride", 0,
        "padding", "added_tokens", added, "normalizer", "type", "BertNormalizer", "clean_text", 1,
        "handle_chinese_chars", 1, "strip_accents", "lowercase", 1, "pre_tokenizer", "type", "BertPreTokenizer",
        "post_processor", "type", "TemplateProcessing",
        "single", "SpecialToken", "id", "[CLS]", "type_id", 0, "Sequence", "id", "A", "type_id", 0,
        "SpecialToken", "id", "[SEP]", "type_id", 0,
        "pair", "SpecialToken", "id", "[CLS]", "type_id", 0, "Sequence", "id", "A", "type_id", 0,
        "SpecialToken", "id", "[SEP]", "type_id", 0, "Sequence", "id", "B", "type_id", 1,
        "SpecialToken", "id", "[SEP]", "type_id", 1,
        "special_tokens", "[CLS]", "id", "[CLS]", "ids", 2, "tokens", "[CLS]", "[SEP]", "id", "[SEP]", "ids", 3,
        "tokens", "[SEP]",
        "decoder", "type", "WordPiece", "prefix", "##", "cleanup", 1,
        "model", "type", "WordPiece", "unk_token", "[UNK]", "continuing_subword_prefix", "##",
        "max_input_chars_per_word", 100, "vocab", vocab);
    ck_assert_ptr_nonnull(root);
    char *text = json_dumps(root, 0);
    json_decref(root);
    return text;
}

/* The BERT golden's weights with a tokenizer.json that truncates to 10,
 * longest first: texts and pairs through POST /model are the library's
 * encodings (npm tokenizers 0.23.2's encode(a, b) on this file gave the
 * ids, type ids and tokens below), each row cut to 10, [MASK] its id, the
 * tokens as the vocabulary spells them ("##s", "the"). */
START_TEST(bert_tokjson_truncation) {
    static const char *const links[] = {"config.json", "model.safetensors", NULL};
    char dir[] = "/tmp/attn_enc_XXXXXX", spec[600], why[512];
    char *tj = bert_tokenizer_json(120);
    folder_make(dir, "bert_mlm_pairs_f32", links, "tokenizer.json", tj);
    free(tj);
    api_models *models = NULL;
    snprintf(spec, sizeof spec, "m=%s", dir);
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.max_elements = 100000000, .models = models};
    json_t *r = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"text\":[[\"The cats sat. It was tired, the cat sat.\","
                          "\"It was tired the cats\"],\"the cat sat the cat sat the cat sat\",[\"Cats [MASK] sat\","
                          "\"xyz sats\"]],\"return\":[\"idx\",\"token_type_ids\",\"tokens\"]}", &lim, 200);
    static const int want[3][10] = {{2, 5, 6, 12, 7, 3, 8, 9, 10, 3}, {2, 5, 6, 7, 5, 6, 7, 5, 6, 3},
                                    {2, 6, 12, 4, 7, 3, 1, 7, 12, 3}};
    static const int types[3][10] = {{0, 0, 0, 0, 0, 0, 1, 1, 1, 1}, {0}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1}};
    static const char *const tokens[10] = {"[CLS]", "the", "cat", "##s", "sat", "[SEP]", "it", "was", "tired", "[SEP]"};
    for (size_t b = 0; b < 3; b++) {
        const json_t *idx = json_array_get(json_object_get(r, "idx"), b);
        const json_t *tt = json_array_get(json_object_get(r, "token_type_ids"), b);
        ck_assert_int_eq(json_array_size(idx), 10);
        for (size_t t = 0; t < 10; t++) {
            ck_assert_int_eq(json_integer_value(json_array_get(idx, t)), want[b][t]);
            ck_assert_int_eq(json_integer_value(json_array_get(tt, t)), types[b][t]);
        }
    }
    const json_t *tok0 = json_array_get(json_object_get(r, "tokens"), 0);
    for (size_t t = 0; t < 10; t++) ck_assert_str_eq(json_string_value(json_array_get(tok0, t)), tokens[t]);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "sentence_b_start"), 0)), 6);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "sentence_b_start"), 1)), -1);
    /* without the template: the same truncation, counting no special tokens */
    json_t *r2 = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"text\":\"the cat sat the cat sat the cat sat it was\","
                           "\"add_special\":false,\"return\":[\"idx\"]}", &lim, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r2, "idx")), 10);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r2, "idx"), 9)), 8);
    printf("BERT's tokenizer.json: pairs truncated to 10 longest first, [MASK], ##s, as npm tokenizers\n");
    json_decref(r);
    json_decref(r2);
    api_models_free(models);
    folder_remove(dir, links, "tokenizer.json");
}
END_TEST

/* vocab.txt for a model of n tokens: g_words, then wN. */
static char *vocab_txt(int n) {
    char *s = malloc((size_t)n * 8 + 1), *p = s;
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < n; i++) p += i < N_WORDS ? sprintf(p, "%s\n", g_words[i]) : sprintf(p, "w%d\n", i);
    return s;
}

/* The MiniLM golden (max_seq_length 16) with a vocab.txt: a text of 22
 * tokens through /v1/embeddings is cut to 16 as sentence-transformers'
 * tokenizer(..., truncation="longest_first", max_length=16) cuts it
 * ([CLS], 14 words, [SEP]): its embedding is those ids', prompt_tokens 16.
 * Ids over 16 stay a 400 (ids are taken as given). */
START_TEST(embeddings_truncated) {
    static const char *const links[] = {"config.json", "model.safetensors", "modules.json",
                                        "sentence_bert_config.json", "1_Pooling", NULL};
    char dir[] = "/tmp/attn_enc_XXXXXX", spec[600], why[512];
    char *v = vocab_txt(100);
    folder_make(dir, "minilm_st_mean_norm_bf16", links, "vocab.txt", v);
    free(v);
    api_models *models = NULL;
    snprintf(spec, sizeof spec, "m=%s", dir);
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.max_elements = 100000000, .models = models};
    json_t *r = tapi_call(API_EP_V1_EMBEDDINGS, "{\"model\":\"m\",\"input\":\"the cat sat the cat sat the cat sat "
                          "the cat sat the cat sat the cat sat it was\"}", &lim, 200);
    json_t *r2 = tapi_call(API_EP_V1_EMBEDDINGS, "{\"model\":\"m\",\"input\":[[2,5,6,7,5,6,7,5,6,7,5,6,7,5,6,3]]}", &lim, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "usage"), "prompt_tokens")), 16);
    const json_t *e1 = json_object_get(json_array_get(json_object_get(r, "data"), 0), "embedding"),
                 *e2 = json_object_get(json_array_get(json_object_get(r2, "data"), 0), "embedding");
    ck_assert_int_gt(json_array_size(e1), 0);
    ck_assert(json_equal(e1, e2));
    tapi_expect_field(API_EP_V1_EMBEDDINGS, "{\"model\":\"m\",\"input\":[[2,5,6,7,5,6,7,5,6,7,5,6,7,5,6,7,3]]}", &lim,
                      400, "input");
    /* POST /model on the same folder: transformers' tokenizer(text) does not truncate, the positions (64) bound it */
    json_t *r3 = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"text\":\"the cat sat the cat sat the cat sat the cat sat "
                           "the cat sat the cat sat it was\",\"return\":[\"idx\"]}", &lim, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r3, "idx")), 22);
    /* RoBERTa's vocab.json + merges.txt (the template made from <s> and </s>): 28 tokens cut to 16 */
    tcase c;
    case_open(&c, DIR_ROOT, "roberta_mlm_f16");
    json_t *r4 = tapi_call(API_EP_V1_EMBEDDINGS, "{\"model\":\"m\",\"input\":\"abcdefghijklmnopqrstuvwxyz\"}", &c.lim, 200);
    char ids16[200] = "{\"model\":\"m\",\"input\":[[0";
    for (int i = 0; i < 14; i++) snprintf(ids16 + strlen(ids16), sizeof ids16 - strlen(ids16), ",%d", 4 + 'a' + i);
    strcat(ids16, ",2]]}");
    json_t *r5 = tapi_call(API_EP_V1_EMBEDDINGS, ids16, &c.lim, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r4, "usage"), "prompt_tokens")), 16);
    ck_assert(json_equal(json_object_get(json_array_get(json_object_get(r4, "data"), 0), "embedding"),
                         json_object_get(json_array_get(json_object_get(r5, "data"), 0), "embedding")));
    json_decref(r4);
    json_decref(r5);
    case_close(&c);
    printf("/v1/embeddings: a 22-token text cut to max_seq_length 16 as sentence-transformers cuts it (and "
           "RoBERTa's 28 with vocab.json + merges.txt)\n");
    json_decref(r);
    json_decref(r2);
    json_decref(r3);
    api_models_free(models);
    folder_remove(dir, links, "vocab.txt");
}
END_TEST

/* ==== What a model cannot give ================================================ */

START_TEST(encoder_errors) {
    tcase m, d, b;
    case_open(&m, DIR_ROOT, "minilm_st_mean_norm_bf16");
    case_open(&d, DIR_ROOT, "distilbert_mlm_bf16");
    case_open(&b, "tests/golden/families", "llama2_mha_untied_f32");
    /* BertModel without its MLM head: hidden states and embeddings, no logits */
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[1,5,2],\"return\":[\"logits\"]}", &m.lim, 400, "return");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[1,4,2],\"fill_mask\":{\"mask_id\":4}}", &m.lim, 400, "fill_mask");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[1,5,2],\"logit_lens\":{\"k\":2}}", &m.lim, 400, "logit_lens");
    json_t *r = tapi_call(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[1,5,2]}", &m.lim, 200);
    ck_assert(json_object_get(r, "embeddings") && !json_object_get(r, "logits"));
    ck_assert_str_eq(json_string_value(json_object_get(r, "module")), "BertModel");
    json_decref(r);
    /* an encoder has no next token, no generation, no pooler unless it has one */
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[2,5,3],\"return\":[\"next_token\"]}", &d.lim, 400, "return");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[2,5,3],\"generate\":{\"max_new_tokens\":2}}", &d.lim, 400, "generate");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[2,5,3],\"return\":[\"pooler_output\"]}", &d.lim, 400, "return");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[2,5,3],\"token_type_ids\":[0,0,0]}", &d.lim, 400, "token_type_ids");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[2,5,3],\"fill_mask\":{\"mask_id\":4}}", &d.lim, 400, "fill_mask");
    /* padding: a row of padding alone, a query there, a padded patch */
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[[2,5,3],[2,5,3]],\"attention_mask\":[[1,1,1],[0,0,0]]}", &d.lim, 400, "attention_mask");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[[2,5,3],[2,5]],\"neuron_view\":{\"layer\":0,\"head\":0,\"query\":2,\"batch\":1}}", &d.lim, 400, "neuron_view.query");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[[2,5,3],[2,5]],\"token_type_ids\":[[0,0,0],[0]]}", &m.lim, 400, "token_type_ids[1]");
    /* a causal model's padding comes after its tokens */
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[[2,5,3],[2,5,3]],\"attention_mask\":[[1,1,1],[0,1,1]]}", &b.lim, 400, "attention_mask");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[[2,5,3],[2,5]],\"patch\":{\"corrupted_idx\":[[2,5,3],[2,5,3]],\"logit_diff\":[1,2]}}", &b.lim, 400, "patch");
    tapi_expect_field(API_EP_MODEL, "{\"model\":\"m\",\"idx\":[2,5,3],\"attention_mask\":[1,1,0],\"generate\":{\"max_new_tokens\":2}}", &b.lim, 400, "generate");
    case_close(&m);
    case_close(&d);
    case_close(&b);
}
END_TEST

/* Every encoder family has a case, so that a missing folder cannot make
 * this program pass with nothing run. */
START_TEST(every_family_covered) {
    static const char *const families[] = {"BertForMaskedLM", "BertModel", "RobertaForMaskedLM",
                                           "DistilBertForMaskedLM"};
    gt_expect_families(DIR_ROOT, g_cases, g_n, families, sizeof families / sizeof families[0]);
}
END_TEST

static Suite *suite(void) {
    g_n = gt_list_cases(DIR_ROOT, g_cases, MAX_CASES);
    Suite *s = suite_create("api_encoders");
    TCase *tc = tcase_create("encoders");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_family_covered);
    tcase_add_loop_test(tc, encoder_case, 0, g_n);
    tcase_add_test(tc, neuron_views);
    tcase_add_test(tc, decoders_padded);
    tcase_add_test(tc, roberta_text);
    tcase_add_test(tc, bert_vocab_txt);
    tcase_add_test(tc, bert_tokjson_truncation);
    tcase_add_test(tc, importance_padded);
    tcase_add_test(tc, embeddings_truncated);
    tcase_add_test(tc, encoder_errors);
    tcase_add_test(tc, inputs_in_parts);
    suite_add_tcase(s, tc);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
