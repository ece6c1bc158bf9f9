/* pipeline.h - one request's way through api/ (private; prefix api__).
 *
 * api_handle (handle.c) runs the same steps for every endpoint:
 *
 *   read      the body: tensor arrays by the scanner (numbers/), the rest by
 *             jansson
 *   parse     the kind reads its fields (request/ getters, the shared
 *             options of api__options_read) into its own state
 *   plan      the kind sizes everything: elements held, work, reply values
 *   admit     the limits: 413 over --max-elements, deferral to a worker,
 *             the memory budget's reservation
 *   prepare   the kind builds its parameters; then the tree is freed
 *   compute   the kind runs core
 *   contents  the kind lists what the reply holds (reply.h's api_contents)
 *   write     the row of the requested format in API_FORMAT_MAP writes it
 *
 * A kind (API_KIND_* in api.h) is a table of those steps (api_kind_ops);
 * an endpoint is a row of API_ENDPOINT_MAP naming its kind.
 */
#ifndef API_PIPELINE_H
#define API_PIPELINE_H

#include <jansson.h>

#include "api/maps/maps.h"
#include "api/reply/reply.h"
#include "api/request/request.h"

/* One request in flight: what every step shares. */
typedef struct api_job {
    api_endpoint ep;
    const api_limits *lim;     /* may be NULL: no limits */
    size_t max;                /* lim->max_elements, or ATTN_MAX_ELEMENTS */
    api_fmt fmt;               /* the reply's format and number options (parse) */
    size_t need;               /* elements the request holds at most (plan): --max-elements
                                  and the memory budget */
    size_t work;               /* elements that stand for its work (plan): deferral */
    int generates;             /* it writes token after token (plan): lim->defer_generation */
    double ops;                /* its work in multiply-adds (plan): lim->max_work */
    const char *ops_field;     /*   the field whose length sets it, named in the 413 */
    size_t reply_values;       /* values in the reply (plan): its first reservation */
    const char *need_noun;     /* the 413's message (plan): "this request" or "this model" */
    const char *need_what;     /*   "needs about N values (inputs, parameters, ...)" */
    api_arrays arrays;         /* every result array, handed to a reply sent in parts */
    double t0;                 /* when the request began (api__now_ms) */
    const char *error_event;   /* set once a kind has handed events over (api_limits.events):
                                  a failure then ends the stream as this event, its data the
                                  error object ("event: error\ndata: ", OpenAI's "data: ") */
    void *state;               /* the kind's own (api_kind_ops.state_size bytes, zeroed) */
} api_job;

/* What plan found: the elements held (need), those that stand for the work
 * (work), the reply's values, and the 413's words ("this <noun> needs about N
 * values (<what>)"). */
static inline void api__job_sized(api_job *j, size_t need, size_t work, size_t reply_values,
                                  const char *noun, const char *what) {
    j->need = need;
    j->work = work;
    j->reply_values = reply_values;
    j->need_noun = noun;
    j->need_what = what;
}

/* The steps of a kind: 0, or -1 with e filled. */
typedef struct {
    size_t state_size;
    unsigned formats;          /* bits (1 << api_format) of the formats it writes */
    int (*parse)(api_job *j, const json_t *root, api_err *e);
    int (*plan)(api_job *j, api_err *e);
    int (*prepare)(api_job *j, api_err *e);
    int (*compute)(api_job *j, api_err *e);
    int (*contents)(api_job *j, api_contents *c, api_err *e);
    void (*release)(api_job *j); /* frees what the state holds (not the arrays) */
} api_kind_ops;

/* Defines a kind's table in its run.c, whose six steps are static functions
 * named parse, plan, prepare, compute, contents and release:
 *     API_KIND_DEFINE(api__tokens_kind, tokens_state, 1u << API_FORMAT_NESTED);
 */
#define API_KIND_DEFINE(name, state_type, format_bits)                                            \
    const api_kind_ops name = {.state_size = sizeof(state_type), .formats = (format_bits),        \
                               .parse = parse, .plan = plan, .prepare = prepare,                  \
                               .compute = compute, .contents = contents, .release = release}

/* The kind of each API_KIND_*, or NULL out of range (handle.c): the one
 * table of kinds, which the document lists too. */
const api_kind_ops *api__kind_get(api_kind k);

/* The kinds (api/module/, api/model/, api/openai/, api/tokens/). */
extern const api_kind_ops api__module_kind;
extern const api_kind_ops api__model_kind;
extern const api_kind_ops api__openai_kind;
extern const api_kind_ops api__embed_kind;
extern const api_kind_ops api__tokens_kind;

#endif
