/* run.c - the whole models' kind (pipeline.h's steps) for POST /model and
 * its alias /model/gpt2: any architecture of core's ATTN_ARCH_MAP (seed
 * 003's GPT2, the book's chapter-4 GPTModel, ...), core's attn_lm_* (one
 * forward for every architecture).
 *
 *   {"vocab_size": 50, "block_size": 16, "n_layer": 2, "n_head": 2, "n_embd": 8,
 *    "init": {"seed": 0}, "idx": [[1, 2, 3]], "return": ["logits", "attn_weights"]}
 *   {"module": "GPTModel", "vocab_size": 50, "context_length": 16, "emb_dim": 8, ...}
 *
 *   parse     request.c: the architecture ("module") and its config fields
 *             (config.c), or a checkpoint loaded at start ("model"); idx [T] or [B][T], or
 *             "text" through a loaded tokenizer; every tensor of a [T]
 *             request loses its batch axis
 *   plan      attn_lm_plan_make, and the maps' selection
 *   prepare   init.seed (torch.manual_seed(seed); GPT2(config) or
 *             GPTModel(cfg), bit for bit), the state_dict (state_dict.c), or a checkpoint's
 *             buffer read in place, never copied
 *   compute   attn_lm_forward, next_token, the selected maps, the dropout masks
 *   contents  model, config, shape, then the outputs in MODEL_OUTPUT_MAP's order
 *             (next_token_text after next_token when a tokenizer is at hand;
 *             params and dropout_masks as groups: groups.c)
 */
#include "api/bpe/bpe.h"
#include "api/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reply values per float in the JSON estimate (as the modules count them). */
#define REPLY_FLOATS_PER_VALUE 3
/* What a tensor of a group costs besides its values (its item, name and
 * JSON key), in floats. */
#define GROUP_TENSOR_FLOATS 64

/* attn_weights as the reply gives them: the layers of "layers", then the
 * heads of "heads", the rows of "query_rows", and with "top_k" the k largest
 * weights of each row (masked keys, above the causal diagonal, never chosen):
 * [n_layers][B][Hs][R][cols]. */
typedef struct {
    float *values;      /* the forward's own buffer, or a cut in the job's arrays */
    int32_t *indices;   /* top-k: the key of each value, -1 = padding; else NULL */
    int Hs, R, cols;
} model_maps;

/* and model, config, shape, generation, layers, next_token_text, cache,
 * patch, logit_lens, analysis, neuron_view, sentence_b_start, fill_mask */
enum { MAX_ITEMS = M_OUT_COUNT + 13 };

/* The outputs a forward pass computes (without them, or a look inside, none
 * runs: idx, tokens, params and a generation's own record need none). */
#define FORWARD_OUTPUTS                                                                            \
    (1u << M_OUT_LOGITS | 1u << M_OUT_NEXT_TOKEN | 1u << M_OUT_ATTN_WEIGHTS |                      \
     1u << M_OUT_HIDDEN_STATES | 1u << M_OUT_DROPOUT_MASKS | 1u << M_OUT_EMBEDDINGS |              \
     1u << M_OUT_POOLER_OUTPUT)

typedef struct {
    model_rq rq;
    attn_lm_plan plan;
    const void *weights;       /* the parameters: params, or a loaded checkpoint's (its
                                  weight matrices may be half-size) */
    float *params, *logits, *attn, *hidden;
    attn_lm_plan wide;         /* "params" of a half-size checkpoint: its float32 layout ... */
    const attn_lm_plan *params_plan; /* the layout "params" is read with (plan or wide) */
    const float *params_f32;   /* ... and its values widened (params), or weights */
    int32_t *next;
    int32_t *idx;              /* the request's ids in the job's arrays: a safetensors reply sent
                                  in parts outlives the request's own copy */
    attn_rng rng;
    attn_rng *rng_ptr;         /* the generator dropout draws from (NULL: a fresh process's) */
    model_maps maps;
    float *dropout;            /* dropout_masks: core's plan.n_dropout multipliers */
    inside_out io;             /* captures, patching, the logit lens (inside.h) */
    model_enc *enc;            /* embeddings, pooler_output, fill_mask (encoder.c) */
    api_item items[MAX_ITEMS];
    api_item *group_items;     /* params' and dropout_masks' tensors (malloc'd) */
    void *group_names;         /*   and their names (malloc'd) */
    api_buf config, shape, layers, name, tokens, next_text; /* JSON text of those items */
} model_state;

static model_state *state_of(api_job *j) { return j->state; }

static int returns(const model_state *s, int k) { return (s->rq.returns & 1u << k) != 0; }

static int runs_forward(const model_state *s) {
    const inside_rq *in = &s->rq.in;
    return (s->rq.returns & FORWARD_OUTPUTS) || in->n_hooks || in->n_ablate || in->patch || in->lens_k ||
           in->analyses || in->neuron || s->rq.fill_k;
}

static int parse(api_job *j, const json_t *root, api_err *e) {
    model_state *s = state_of(j);
    if (api__model_parse(root, j->lim, &s->rq, e)) return -1;
    j->fmt = s->rq.fmt;
    return 0;
}

/* ==== plan =============================================================== */

static void maps_dims(const model_rq *rq, const attn_lm_plan *p, model_maps *m) {
    const api_select *s = &rq->sel;
    m->Hs = s->n_heads ? s->n_heads : p->H;
    m->R = s->has_rows ? s->row_stop - s->row_start : p->T;
    m->cols = s->top_k ? s->top_k : p->T;
}

/* Elements of the selected view (values, and indices with top-k). */
static size_t maps_count(const model_rq *rq, const attn_lm_plan *p) {
    model_maps m;
    maps_dims(rq, p, &m);
    size_t n = (size_t)rq->n_layers * (size_t)p->B * (size_t)m.Hs * (size_t)m.R * (size_t)m.cols;
    return rq->sel.top_k ? 2 * n : n;
}

/* Tensors of the groups params and dropout_masks (0 when not asked for). */
static int group_tensors(const model_state *s) {
    return (returns(s, M_OUT_PARAMS) ? api__model_params_count(&s->plan) : 0) +
           (returns(s, M_OUT_DROPOUT_MASKS) ? api__model_dropout_count(&s->plan) : 0);
}

/* The values of the groups; and a safetensors reply holds at most
 * API_ST_MAX_ENTRIES tensors (idx, logits, next_token, the maps' two and
 * hidden_states besides the groups'). */
static int groups_plan(const model_state *s, size_t *values, api_err *e) {
    const attn_lm_plan *p = &s->plan;
    *values = 0;
    if (returns(s, M_OUT_DROPOUT_MASKS)) *values += p->n_dropout;
    if (returns(s, M_OUT_PARAMS))
        *values += p->n_params + (attn_lm_tied_head_name(p) ? (size_t)p->V * (size_t)p->C : 0);
    int n = group_tensors(s);
    if (s->rq.fmt.format == API_FORMAT_SAFETENSORS && n > API_ST_MAX_ENTRIES - 6)
        return api__fail(e, API_E_INVALID_ARGUMENT, "return",
                         "params and dropout_masks are %d tensors here, more than one safetensors "
                         "reply holds (%d): ask for them with a JSON output_format", n,
                         API_ST_MAX_ENTRIES - 6);
    return 0;
}

/* The outputs the plan's bound counts that this request never allocates:
 * the maps, hidden states and dropout masks it does not ask for, and all the
 * logits but the last position's when it asks for next_token alone (core's
 * own work space is the rest of the bound). */
static size_t unasked(const model_state *s) {
    const attn_lm_plan *p = &s->plan;
    size_t n = 0;
    if (!p->head) n += p->n_logits;
    else if (!returns(s, M_OUT_LOGITS) && !s->rq.fill_k) n += p->n_logits - (size_t)p->B * (size_t)p->V;
    if (!returns(s, M_OUT_ATTN_WEIGHTS)) n += p->n_attn;
    if (!returns(s, M_OUT_HIDDEN_STATES)) n += p->n_hidden;
    if (!returns(s, M_OUT_DROPOUT_MASKS)) n += p->n_dropout;
    return n;
}

/* The budget: the plan's bound (parameters, outputs, work space) and the
 * reply text; a loaded checkpoint's parameters are held once, not per
 * request, but they stand for the work all the same. */
static int plan(api_job *j, api_err *e) {
    model_state *s = state_of(j);
    const model_rq *rq = &s->rq;
    const attn_lm_plan *p = &s->plan;
    attn_error ae = {0};
    int T = rq->gen ? rq->gen->T_max : rq->T; /* a generation's final text at most */
    if (attn_lm_plan_make(&rq->cfg, rq->B, T, rq->training, &s->plan, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    size_t out_values = 0, need = runs_forward(s) ? p->total_elements - unasked(s) : p->n_params;
    if (returns(s, M_OUT_LOGITS)) out_values += p->n_logits;
    if (returns(s, M_OUT_ATTN_WEIGHTS)) out_values += p->n_attn;
    if (returns(s, M_OUT_HIDDEN_STATES)) out_values += p->n_hidden;
    size_t group_values;
    if (groups_plan(s, &group_values, e)) return -1;
    out_values += group_values;
    /* the selected maps are a copy (top_k: values and indices); their reply
     * text is counted instead of the whole maps' */
    if (returns(s, M_OUT_ATTN_WEIGHTS) && api__select_any(&rq->sel)) {
        size_t sel = maps_count(rq, p);
        out_values = out_values - p->n_attn + sel;
        need += sel;
    }
    if (rq->model) need -= p->n_params;
    if (rq->model && rq->cfg.weights_dtype != ATTN_DTYPE_F32 && returns(s, M_OUT_PARAMS))
        need += p->n_params; /* "params" widened to float32 for the reply */
    need += api__model_enc_floats(rq, p);
    inside_sizes in;
    if (api__inside_plan(&rq->in, p, attn_pool_width(j->lim ? j->lim->compute : NULL), &s->io,
                         &in, e))
        return -1;
    need += in.need;
    out_values += in.reply_values;
    need += out_values * REPLY_FLOATS_PER_VALUE; /* each term below 2^50 */
    need += (size_t)group_tensors(s) * GROUP_TENSOR_FLOATS;
    api__job_sized(j, need, need + (rq->model ? p->n_params : 0), out_values, "model",
                   "parameters, activations, outputs and reply");
    j->ops = p->ops + in.ops;
    j->ops_field = in.ops_field ? in.ops_field : rq->from_text ? "text" : "idx";
    return rq->gen ? api__model_gen_plan(&s->rq, j, e) : 0;
}

/* ==== prepare and compute ================================================= */

/* "params" of a checkpoint held half-size: its values widened to float32
 * (exactly), in the float32 layout of the same model. */
static int widen(api_job *j, model_state *s, api_err *e) {
    attn_lm_config c = s->rq.cfg;
    attn_error ae = {0};
    c.weights_dtype = ATTN_DTYPE_F32;
    if (attn_lm_plan_make(&c, s->plan.B, s->plan.T, s->plan.training, &s->wide, &ae) != ATTN_OK ||
        (s->params = api__arrays_take(&j->arrays, s->wide.n_params, sizeof(float))) == NULL ||
        attn_lm_params_convert(&s->wide, s->params, &s->plan, s->weights, &ae) != ATTN_OK)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot widen the model's parameters");
    s->params_plan = &s->wide, s->params_f32 = s->params;
    return 0;
}

/* The parameters: a checkpoint's buffer as it is, the state_dict, or
 * GPT2(config) after torch.manual_seed(seed), whose generator dropout then
 * continues from (or dropout_seed's). */
static int prepare(api_job *j, api_err *e) {
    model_state *s = state_of(j);
    const model_rq *rq = &s->rq;
    attn_error ae = {0};
    s->params_plan = &s->plan;
    if (rq->model) {
        s->weights = s->params_f32 = rq->model->params;
        if (returns(s, M_OUT_PARAMS) && rq->cfg.weights_dtype != ATTN_DTYPE_F32 && widen(j, s, e))
            return -1;
    } else {
        s->params = api__arrays_take(&j->arrays, s->plan.n_params, sizeof(float));
        if (s->params == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the model");
        s->weights = s->params_f32 = s->params;
        if (rq->params.state_dict) {
            if (api__model_state_dict_read(rq->params.state_dict, &s->plan, s->params, e)) return -1;
        } else {
            attn_rng_seed(&s->rng, rq->params.seed);
            if (attn_lm_params_init(&s->plan, s->params, &s->rng, &ae) != ATTN_OK) {
                api__from_attn(e, &ae, ATTN_MODULE_COUNT);
                return -1;
            }
            s->rng_ptr = &s->rng;
        }
    }
    if (rq->has_dropout_seed) {
        attn_rng_seed(&s->rng, rq->dropout_seed);
        s->rng_ptr = &s->rng;
    }
    return 0;
}

/* next[b]: argmax of the last token's logits (the last one that is not
 * padding), the first on ties (torch.argmax); logits are [B][T][V], or
 * [B][V] with last_only. */
static void next_tokens(const attn_lm_plan *p, const uint8_t *mask, const float *logits, int last_only,
                        int32_t *next) {
    for (int bi = 0; bi < p->B; bi++) {
        int t = p->T - 1;
        while (mask && t > 0 && !mask[(size_t)bi * p->T + (size_t)t]) t--;
        size_t at = last_only ? (size_t)bi : (size_t)bi * p->T + (size_t)t;
        const float *row = logits + at * (size_t)p->V;
        int best = 0;
        for (int v = 1; v < p->V; v++)
            if (row[v] > row[best]) best = v;
        next[bi] = best;
    }
}

/* The view of attn [n_layer][B][H][T][T]: the selected layers moved together
 * in place when nothing else is selected, else a cut (maps/select.c). */
static int maps_make(api_job *j, model_state *s, api_err *e) {
    const model_rq *rq = &s->rq;
    const attn_lm_plan *p = &s->plan;
    size_t T = (size_t)p->T, per = (size_t)p->B * (size_t)p->H * T * T;
    model_maps *m = &s->maps;
    maps_dims(rq, p, m);
    if (!api__select_any(&rq->sel)) {
        for (int i = 0; i < rq->n_layers; i++)
            if (rq->layers[i] != i)
                memmove(s->attn + (size_t)i * per, s->attn + (size_t)rq->layers[i] * per,
                        per * sizeof *s->attn);
        m->values = s->attn;
        return 0;
    }
    int outer = rq->n_layers * p->B;
    int *src_block = api__arrays_take(&j->arrays, (size_t)outer, sizeof(int));
    uint8_t *tril = rq->sel.top_k && !p->spec.bidirectional ? api__arrays_take(&j->arrays, T * T, 1) : NULL;
    if (j->arrays.failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the selected maps");
    for (int o = 0; o < outer; o++) src_block[o] = rq->layers[o / p->B] * p->B + o % p->B;
    for (size_t i = 0; tril && i < T; i++)
        for (size_t k = 0; k < T; k++) tril[i * T + k] = k > i; /* 1 = masked out */
    const api_select *sel = &rq->sel;
    api_map_src src = {.data = s->attn, .outer = outer, .outer_src = src_block, .H = p->H,
                       .rows = p->T, .cols = p->T, .mask = tril};
    api_map_cut cut = {.heads = sel->n_heads ? sel->heads : NULL, .n_heads = sel->n_heads,
                       .r0 = sel->has_rows ? sel->row_start : 0,
                       .r1 = sel->has_rows ? sel->row_stop : p->T, .top_k = sel->top_k};
    return api__map_cut(&src, &cut, &j->arrays, (void **)&m->values, &m->indices, e);
}

/* A generation first: the forward then runs over the text it wrote (its
 * last block_size tokens), when an output needs it. */
static int generate(api_job *j, model_state *s, api_err *e) {
    attn_error ae = {0};
    if (api__model_gen_run(&s->rq, j, s->weights, s->rng_ptr, e)) return -1;
    if (attn_lm_plan_make(&s->rq.cfg, 1, s->rq.T, 0, &s->plan, &ae) == ATTN_OK) return 0;
    api__from_attn(e, &ae, ATTN_MODULE_COUNT);
    return -1;
}

static int compute(api_job *j, api_err *e) {
    model_state *s = state_of(j);
    const attn_lm_plan *p = &s->plan;
    api_arrays *a = &j->arrays;
    if (s->rq.gen && generate(j, s, e)) return -1;
    if (returns(s, M_OUT_IDX)) { /* the final text's after a generation; kept with the reply */
        size_t n_idx = (size_t)s->rq.B * (size_t)s->rq.T;
        if ((s->idx = api__arrays_take(a, n_idx, sizeof(int32_t))) == NULL)
            return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the model");
        memcpy(s->idx, s->rq.idx, n_idx * sizeof(int32_t));
    }
    attn_lm_outputs out = {0};
    if (api__model_enc_alloc(&s->rq, p, a, &s->enc, &out, e)) return -1;
    if (!runs_forward(s)) return 0;
    /* next_token alone needs the last position's logits only: [B][V] */
    int last_only = !returns(s, M_OUT_LOGITS) && !s->rq.fill_k;
    if (p->head)
        s->logits = api__arrays_take(a, last_only ? (size_t)p->B * (size_t)p->V : p->n_logits, sizeof(float));
    if (returns(s, M_OUT_ATTN_WEIGHTS)) s->attn = api__arrays_take(a, p->n_attn, sizeof(float));
    if (returns(s, M_OUT_HIDDEN_STATES)) s->hidden = api__arrays_take(a, p->n_hidden, sizeof(float));
    if (returns(s, M_OUT_DROPOUT_MASKS)) s->dropout = api__arrays_take(a, p->n_dropout, sizeof(float));
    s->next = api__arrays_take(a, (size_t)p->B, sizeof(int32_t));
    if (a->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the model");
    out.logits = s->logits, out.attn_weights = s->attn, out.hidden_states = s->hidden;
    out.dropout_masks = s->dropout, out.last_only = last_only;
    attn_pool *pool = j->lim ? j->lim->compute : NULL;
    attn_lm_inputs in = {.idx = s->rq.idx, .pool = pool, .attention_mask = s->rq.mask,
                         .token_type_ids = s->rq.types};
    attn_error ae = {0};
    if (api__inside_inputs(&s->rq.in, p, &s->io, a, &in, &out, e)) return -1;
    if (attn_lm_run(p, s->weights, &in, s->rng_ptr, &out, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    if (api__inside_after(&s->rq.in, p, s->weights, s->logits, last_only, pool, &s->io, a, e))
        return -1;
    if (api__inside_neuron_run(&s->rq.in, p, s->rq.mask, &s->io, a, e)) return -1;
    if (s->logits) next_tokens(p, s->rq.mask, s->logits, last_only, s->next);
    if (api__model_enc_after(&s->rq, p, s->enc, s->logits, last_only, s->attn, s->hidden, &s->io, e))
        return -1;
    return returns(s, M_OUT_ATTN_WEIGHTS) ? maps_make(j, s, e) : 0;
}

/* ==== contents ============================================================ */

/* The texts of ids[0..n) as the tokenizer shows them (api_bpe_token_shown: WordPiece's "##ing";
 * U+FFFD for a piece of a character; null for padding (mask 0) and an id past its vocabulary,
 * since ids are checked below vocab_size, not below the tokenizer's size):
 * a list, or the one string when list is 0. */
static void id_texts(api_buf *b, const api_bpe *bpe, const int32_t *ids, const uint8_t *mask, int n,
                     int list) {
    size_t cap = 3 * api_bpe_max_token_bytes(bpe) + 1, len;
    char *text = malloc(cap);
    if (text == NULL) {
        b->failed = 1;
        return;
    }
    api__buf_puts(b, list ? "[" : "");
    for (int i = 0; i < n; i++) {
        if (i) api__buf_puts(b, ",");
        if ((!mask || mask[i]) && api_bpe_token_shown(bpe, ids[i], text, cap, &len) == 0)
            api__buf_json_stringn(b, text, len);
        else api__buf_puts(b, "null");
    }
    api__buf_puts(b, list ? "]" : "");
    free(text);
}

/* tokens: each token's text, [T] or [B][T]. */
static void tokens_json(api_buf *b, const model_rq *rq, const attn_lm_plan *p) {
    api__buf_puts(b, rq->batched ? "[" : "");
    for (int bi = 0; bi < p->B; bi++) {
        if (bi) api__buf_puts(b, ",");
        size_t at = (size_t)bi * (size_t)p->T;
        id_texts(b, rq->tok->bpe, rq->idx + at, rq->mask ? rq->mask + at : NULL, p->T, 1);
    }
    api__buf_puts(b, rq->batched ? "]" : "");
}

/* A tensor item [lead...][B][rest...], without the B axis for a [T] request. */
static api_item *tensor(api_item *it, const model_rq *rq, const char *name, api_item_kind kind,
                        const void *data, int n_lead, const int *lead, int n_rest, const int *rest) {
    *it = (api_item){.name = name, .kind = kind, .data = data};
    for (int i = 0; i < n_lead; i++) it->shape[it->rank++] = lead[i];
    if (rq->batched) it->shape[it->rank++] = rq->B;
    for (int i = 0; i < n_rest; i++) it->shape[it->rank++] = rest[i];
    return it;
}

static api_item json_item(const char *name, const api_buf *text) {
    return (api_item){.name = name, .kind = API_ITEM_JSON, .data = text->data};
}

/* The outputs after "model", "config" and "shape", in MODEL_OUTPUT_MAP's
 * order, the look inside before the timing; -1 with e filled. */
static int output_items(model_state *s, api_item *items, api_err *e) {
    const model_rq *rq = &s->rq;
    const attn_lm_plan *p = &s->plan;
    const model_maps *m = &s->maps;
    int n = 0, T[1] = {p->T}, TV[2] = {p->T, p->V}, TC[2] = {p->T, p->C}, L[1] = {rq->n_layers};
    int H1[1] = {p->n_layer + 1}, maps_rest[3] = {m->Hs, m->R, m->cols};
    if (returns(s, M_OUT_IDX)) tensor(&items[n++], rq, "idx", API_ITEM_I32, s->idx, 0, NULL, 1, T)->plain = 1;
    if (returns(s, M_OUT_TOKENS)) items[n++] = json_item("tokens", &s->tokens);
    if (returns(s, M_OUT_LOGITS)) tensor(&items[n++], rq, "logits", API_ITEM_F32, s->logits, 0, NULL, 2, TV);
    if (returns(s, M_OUT_NEXT_TOKEN))
        tensor(&items[n++], rq, "next_token", API_ITEM_I32, s->next, 0, NULL, 0, NULL)->plain = 1;
    if (returns(s, M_OUT_NEXT_TOKEN) && api__model_text_bpe(rq))
        items[n++] = json_item("next_token_text", &s->next_text);
    if (returns(s, M_OUT_ATTN_WEIGHTS)) {
        items[n++] = json_item("layers", &s->layers);
        tensor(&items[n++], rq, "attn_weights", API_ITEM_F32, m->values, 1, L, 3, maps_rest)->indices =
            m->indices;
    }
    if (returns(s, M_OUT_HIDDEN_STATES))
        tensor(&items[n++], rq, "hidden_states", API_ITEM_F32, s->hidden, 1, H1, 2, TC);
    int k = api__model_enc_items(rq, p, s->enc, items + n, e);
    if (k < 0) return -1;
    n += k;
    int np = returns(s, M_OUT_PARAMS) ? api__model_params_count(p) : 0;
    if (returns(s, M_OUT_DROPOUT_MASKS))
        items[n++] = (api_item){.name = "dropout_masks", .kind = API_ITEM_GROUP,
                                .items = s->group_items + np, .n_items = api__model_dropout_count(p)};
    if (np)
        items[n++] = (api_item){.name = "params", .kind = API_ITEM_GROUP, .items = s->group_items,
                                .n_items = np};
    k = api__inside_items(&rq->in, p, rq->batched, api__model_text_bpe(rq), &s->io, items + n, e);
    if (k < 0) return -1;
    n += k;
    if (returns(s, M_OUT_TIMING)) items[n++] = (api_item){.name = "timing", .kind = API_ITEM_TIMING};
    return n;
}

/* The tensors of params and dropout_masks: views, their names beside them. */
static int groups_make(model_state *s) {
    const attn_lm_plan *p = &s->plan;
    int np = returns(s, M_OUT_PARAMS) ? api__model_params_count(p) : 0;
    int nd = returns(s, M_OUT_DROPOUT_MASKS) ? api__model_dropout_count(p) : 0;
    if (np + nd == 0) return 0;
    s->group_items = malloc((size_t)(np + nd) * sizeof *s->group_items);
    s->group_names = malloc((size_t)np * ATTN_PARAM_NAME_MAX + (size_t)nd * API_MODEL_DROP_NAME);
    if (s->group_items == NULL || s->group_names == NULL) return -1;
    char *names = s->group_names;
    if (np)
        api__model_params_items(s->params_plan, s->params_f32, (char(*)[ATTN_PARAM_NAME_MAX])names,
                                s->group_items);
    if (nd)
        api__model_dropout_items(p, s->dropout, s->rq.batched,
                                 (char(*)[API_MODEL_DROP_NAME])(names + (size_t)np * ATTN_PARAM_NAME_MAX),
                                 s->group_items + np);
    return 0;
}

static int contents(api_job *j, api_contents *c, api_err *e) {
    model_state *s = state_of(j);
    const model_rq *rq = &s->rq;
    const attn_lm_plan *p = &s->plan;
    int n = 0;
    api__config_json(&s->config, &rq->cfg);
    api__buf_printf(&s->shape, "{\"batch\":%d,\"tokens\":%d,\"head_dim\":%d", p->B, p->T, p->D);
    /* grouped queries: query head h reads key/value head h / (H / Hkv) */
    if (p->Hkv != p->H) {
        api__buf_printf(&s->shape, ",\"heads\":%d,\"kv_heads\":%d,\"kv_head_of\":[", p->H, p->Hkv);
        for (int h = 0; h < p->H; h++) api__buf_printf(&s->shape, h ? ",%d" : "%d", h / (p->H / p->Hkv));
        api__buf_puts(&s->shape, "]");
    }
    api__buf_puts(&s->shape, "}");
    api__buf_puts(&s->layers, "[");
    for (int i = 0; i < rq->n_layers; i++) api__buf_printf(&s->layers, i ? ",%d" : "%d", rq->layers[i]);
    api__buf_puts(&s->layers, "]");
    if (rq->model) api__buf_json_string(&s->name, rq->model->name);
    if (returns(s, M_OUT_TOKENS)) tokens_json(&s->tokens, rq, p);
    if (returns(s, M_OUT_NEXT_TOKEN) && api__model_text_bpe(rq))
        id_texts(&s->next_text, rq->tok->bpe, s->next, NULL, p->B, rq->batched);
    if (s->config.failed || s->shape.failed || s->layers.failed || s->name.failed ||
        s->tokens.failed || s->next_text.failed || groups_make(s))
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    if (rq->model) s->items[n++] = json_item("model", &s->name);
    s->items[n++] = json_item("config", &s->config);
    s->items[n++] = json_item("shape", &s->shape);
    if (rq->gen && api__model_gen_items(&s->rq, &s->items[n++], c, e)) return -1;
    int k = output_items(s, s->items + n, e);
    if (k < 0) return -1;
    n += k;
    c->module = attn_arch_name(rq->cfg.arch);
    c->item = s->items;
    c->n = n;
    return 0;
}

static void release(api_job *j) {
    model_state *s = state_of(j);
    api_buf *texts[] = {&s->config, &s->shape, &s->layers, &s->name, &s->tokens, &s->next_text};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) api_buf_free(texts[i]);
    free(s->group_items);
    free(s->group_names);
    api__model_rq_free(&s->rq);
    api__inside_out_free(&s->io);
    api__model_enc_free(s->enc);
}

API_KIND_DEFINE(api__model_kind, model_state, API_MODEL_GEN_FORMATS);
