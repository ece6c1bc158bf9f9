/* embed.c - POST /v1/embeddings as OpenAI's Embeddings API defines it, on a
 * model loaded at start (the kind's steps, pipeline.h):
 *
 *   {"model": "minilm", "input": "a text" | ["texts", ...] | [ids] | [[ids], ...],
 *    "encoding_format": "float" | "base64", "dimensions": 384, "user": "..."}
 *   -> {"object": "list", "data": [{"object": "embedding", "index": 0,
 *        "embedding": [...] or "<base64 of little-endian float32>"}, ...],
 *       "model": "minilm", "usage": {"prompt_tokens": N, "total_tokens": N}}
 *
 * Texts go through the model's tokenizer with an encoder's template (the
 * <s> A </s> of RoBERTa's byte-level BPE; api/model/text.c); token ids are
 * the model's input as they are ([CLS] and [SEP] included). The inputs run
 * as one batch, padded rows packed (their tokens alone through the
 * projections), and each is pooled as the folder's sentence-transformers
 * config says (mean over the tokens without one), normalised when it has
 * a Normalize module. "dimensions" is taken only equal to the embeddings'
 * width (this server does not shorten them); "user" is ignored. A text is
 * truncated to the folder's max_seq_length as sentence-transformers does
 * (longest first); token ids are at most the model's positions and that
 * max_seq_length. Errors are the service's error object, as /v1/completions'. */
#include "api/bpe/bpe.h"
#include "api/model/model.h"
#include "api/numbers/numbers.h"
#include "api/openai/openai.h"

#include <stdlib.h>
#include <string.h>

#define EMBED_MAX_INPUTS 2048

typedef struct {
    model_rq rq;               /* the model, the batch (idx, mask) */
    int base64;
    attn_lm_plan plan;
    float *last, *emb;         /* [B][T][C] the last hidden states, [B][width] pooled */
    int width;
    long long tokens;          /* prompt_tokens */
    api_buf data, usage, model_json;
    api_item items[4];
} embed_state;

static const char *const fields[] = {"model", "input", "encoding_format", "dimensions", "user", NULL};

static int read_model(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "model");
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, "model", "model is required (GET /v1/models lists them)");
    if (!json_is_string(v)) return api__field_wrong_type(e, "model", v, "a string");
    rq->model = api__models_find(lim ? lim->models : NULL, json_string_value(v));
    if (rq->model == NULL) {
        char echo[API_ECHO_MAX + 4], names[256];
        api__models_names(lim ? lim->models : NULL, names, sizeof names);
        return api__fail(e, API_E_NOT_FOUND, "model", "the model \"%s\" does not exist (loaded: %s)",
                         api__echo(echo, sizeof echo, json_string_value(v)), names);
    }
    rq->cfg = rq->model->cfg;
    rq->tok = rq->model->bpe ? &rq->model->tok : NULL;
    rq->text_flags = API_BPE_ADD_SPECIAL; /* the folder's template, as sentence-transformers' encode */
    rq->text_max = rq->model->max_tokens; /* and its truncation="longest_first" to max_seq_length */
    rq->pooling = rq->model->pooling.modes ? rq->model->pooling : (attn_lm_pooling){.modes = ATTN_POOL_MEAN};
    return 0;
}

/* input: a text, texts, ids or lists of ids; then every row within the
 * positions and the folder's max_seq_length. */
static int read_input(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "input"), *first = json_array_get(v, 0);
    size_t budget = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, "input", "input is required");
    if (json_is_array(v) && (json_array_size(v) == 0 || json_array_size(v) > EMBED_MAX_INPUTS))
        return api__fail(e, API_E_INVALID_ARGUMENT, "input", "input lists 1 to %d inputs", EMBED_MAX_INPUTS);
    int ids = json_is_array(v) && !json_is_string(first);
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
        if (json_is_string(json_array_get(v, i)) == ids)
            return api__fail(e, API_E_INVALID_ARGUMENT, "input", "input is a text, texts, token ids or "
                             "lists of token ids, not a mix of them");
    if (!ids && rq->tok == NULL)
        return api__fail(e, API_E_INVALID_ARGUMENT, "input", "model \"%s\" has no tokenizer this server "
                         "reads (tokenizer.json, or vocab.json + merges.txt): give token ids", rq->model->name);
    int rc = ids ? api__model_rows_read(v, "input", rq, &budget, e) : api__model_text_read(v, "input", lim, rq, e);
    if (rc) return -1;
    attn_lm_plan p;
    if (api__model_plan1(rq, &p, e)) return -1;
    int most = rq->cfg.context - (p.spec.pos_after_pad ? p.spec.pad_id + 1 : 0);
    if (rq->model->max_tokens && rq->model->max_tokens < most) most = rq->model->max_tokens;
    for (int b = 0; b < rq->B; b++) {
        int n = 0;
        for (int t = 0; t < rq->T; t++) n += !rq->mask || rq->mask[(size_t)b * rq->T + (size_t)t];
        if (n > most)
            return api__fail(e, API_E_INVALID_ARGUMENT, "input", "input %d is %d tokens, over the %d this "
                             "model embeds (its %s)", b, n, most, most == rq->model->max_tokens ?
                             "max_seq_length" : "positions");
    }
    return 0;
}

static int parse(api_job *j, const json_t *root, api_err *e) {
    embed_state *s = j->state;
    const char *bad = json_is_object(root) ? api__unknown_key(root, fields) : NULL;
    if (!json_is_object(root)) return api__fail(e, API_E_INVALID_TYPE, NULL, "the body must be a JSON object");
    if (bad) {
        char echo[API_ECHO_MAX + 4];
        return api__fail(e, API_E_UNKNOWN_FIELD, api__echo(echo, sizeof echo, bad), "Unrecognized request "
                         "argument supplied: %s (/v1/embeddings takes model, input, encoding_format, "
                         "dimensions and user)", echo);
    }
    static const char *const formats[] = {"float", "base64", NULL};
    int dims = 0;
    if (read_model(root, j->lim, &s->rq, e) || api__field_choice(root, "encoding_format", formats, &s->base64, e) < 0 ||
        api__field_int(root, "dimensions", 1, INT32_MAX, &dims, e) < 0 || read_input(root, j->lim, &s->rq, e))
        return -1;
    s->width = attn_lm_pool_width(&s->rq.pooling, s->rq.cfg.width);
    if (dims && dims != s->width)
        return api__fail(e, API_E_INVALID_ARGUMENT, "dimensions", "this model's embeddings have %d "
                         "dimensions: dimensions must be %d or left out (they are not shortened here)",
                         s->width, s->width);
    j->fmt = (api_fmt){.format = API_FORMAT_NESTED};
    return 0;
}

static int plan(api_job *j, api_err *e) {
    embed_state *s = j->state;
    attn_lm_plan *p = &s->plan;
    attn_error ae = {0};
    if (attn_lm_plan_make(&s->rq.cfg, s->rq.B, s->rq.T, 0, p, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    size_t BTC = (size_t)p->B * (size_t)p->T * (size_t)p->C, out = (size_t)p->B * (size_t)s->width;
    /* the run's work space and these outputs; the reply's text (about 12
     * bytes a value, 3 floats' worth) */
    size_t need = p->total_elements - p->n_params - p->n_logits - p->n_hidden - p->n_attn - p->n_dropout +
                  BTC + out + 3 * out;
    api__job_sized(j, need, need + p->n_params, out, "request", "its activations and embeddings");
    j->ops = p->ops - attn_lm_head_ops(p, (double)p->B * p->T);
    j->ops_field = "input";
    return 0;
}

static int prepare(api_job *j, api_err *e) {
    (void)j, (void)e;
    return 0;
}

static int compute(api_job *j, api_err *e) {
    embed_state *s = j->state;
    const attn_lm_plan *p = &s->plan;
    s->last = api__arrays_take(&j->arrays, (size_t)p->B * (size_t)p->T * (size_t)p->C, sizeof(float));
    s->emb = api__arrays_take(&j->arrays, (size_t)p->B * (size_t)s->width, sizeof(float));
    if (j->arrays.failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the embeddings");
    attn_lm_inputs in = {.idx = s->rq.idx, .attention_mask = s->rq.mask, .token_type_ids = s->rq.types,
                         .pool = j->lim ? j->lim->compute : NULL};
    attn_lm_outputs out = {.last_hidden = s->last};
    attn_error ae = {0};
    if (attn_lm_run(p, s->rq.model->params, &in, NULL, &out, &ae) != ATTN_OK ||
        attn_lm_pool(&s->rq.pooling, s->last, s->rq.mask, p->B, p->T, p->C, s->emb, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    for (size_t i = 0; i < (size_t)p->B * (size_t)p->T; i++) s->tokens += !s->rq.mask || s->rq.mask[i];
    return 0;
}

/* One embedding: numbers (the shortest that read back), or base64. */
static void one(api_buf *b, const float *x, int n, int base64) {
    if (base64) {
        size_t bytes = 4 * (size_t)n;
        uint8_t *raw = malloc(bytes);
        if (raw == NULL || api__buf_reserve(b, api__b64_encoded_size(bytes) + 3)) {
            free(raw);
            b->failed = 1;
            return;
        }
        api__float_bytes(raw, x, (size_t)n, 0);
        api__buf_puts(b, "\"");
        b->len += api__b64_encode(raw, bytes, b->data + b->len);
        api__buf_puts(b, "\"");
        free(raw);
        return;
    }
    api__buf_puts(b, "[");
    for (int i = 0; i < n; i++) {
        char num[API_FLOAT_MAX + API_FLOAT_SLACK];
        int len = api__format_float(num, x[i], 0);
        if (i) api__buf_puts(b, ",");
        api__buf_put(b, num, (size_t)len);
    }
    api__buf_puts(b, "]");
}

static int contents(api_job *j, api_contents *c, api_err *e) {
    embed_state *s = j->state;
    api__buf_puts(&s->data, "[");
    for (int b = 0; b < s->plan.B; b++) {
        api__buf_printf(&s->data, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", b ? "," : "", b);
        one(&s->data, s->emb + (size_t)b * (size_t)s->width, s->width, s->base64);
        api__buf_puts(&s->data, "}");
    }
    api__buf_puts(&s->data, "]");
    api__buf_printf(&s->usage, "{\"prompt_tokens\":%lld,\"total_tokens\":%lld}", s->tokens, s->tokens);
    api__buf_json_string(&s->model_json, s->rq.model->name);
    if (s->data.failed || s->usage.failed || s->model_json.failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    const char *values[4] = {"\"list\"", s->data.data, s->model_json.data, s->usage.data};
    static const char *const names[4] = {"object", "data", "model", "usage"};
    for (int i = 0; i < 4; i++) s->items[i] = (api_item){.name = names[i], .kind = API_ITEM_JSON, .data = values[i]};
    c->module = NULL; /* OpenAI's object */
    c->item = s->items;
    c->n = 4;
    return 0;
}

static void release(api_job *j) {
    embed_state *s = j->state;
    api__model_rq_free(&s->rq);
    api_buf_free(&s->data);
    api_buf_free(&s->usage);
    api_buf_free(&s->model_json);
}

API_KIND_DEFINE(api__embed_kind, embed_state, 1u << API_FORMAT_NESTED);
