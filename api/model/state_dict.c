/* state_dict.c - a POST /model "state_dict" into core's parameter buffer,
 * under the architecture's own names (attn_lm_param_get: seed 003's
 * wte.weight, h.0.attn.c_attn.weight, ...; the book's tok_emb.weight,
 * trf_blocks.0.att.W_query.weight, ..., out_head.weight). */
#include "api/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* "names as GPT2's state_dict: wte.weight, wpe.weight, h.0.ln_1.weight, ..."
 * from the architecture's first entries. */
static void names_hint(const attn_lm_plan *plan, char *out, size_t size) {
    size_t n = (size_t)snprintf(out, size, "names as %s's state_dict: ",
                                attn_arch_name(plan->cfg.arch));
    for (int i = 0, shown = 0; i < plan->param_count && shown < 4 && n < size; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        if (p.buffer) continue;
        n += (size_t)snprintf(out + n, size - n, "%s, ", p.name);
        shown++;
    }
    if (n < size) snprintf(out + n, size - n, "...");
}

/* Every key of sd is an entry of the architecture's state_dict. */
static int check_names(const json_t *sd, const attn_lm_plan *plan, api_err *e) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)sd, key, v) {
        const char *tied = attn_lm_tied_head_name(plan);
        int found = tied && strcmp(key, tied) == 0;
        for (int i = 0; i < plan->param_count && !found; i++) {
            attn_param p;
            attn_lm_param_get(plan, i, &p);
            found = strcmp(p.name, key) == 0;
        }
        if (!found) {
            char echo[API_ECHO_MAX + 4], field[API_ECHO_MAX + 16], hint[256];
            snprintf(field, sizeof field, "state_dict.%s", api__echo(echo, sizeof echo, key));
            names_hint(plan, hint, sizeof hint);
            return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s has no parameter \"%s\" (%s)",
                             attn_arch_name(plan->cfg.arch), echo, hint);
        }
    }
    return 0;
}

/* A tied head (GPT2's lm_head.weight), when given: the same values as the
 * token embedding (the state_dict's first entry). */
static int check_tied(const json_t *sd, const attn_lm_plan *plan, const float *params, api_err *e) {
    const char *tied = attn_lm_tied_head_name(plan);
    const json_t *v = tied ? json_object_get(sd, tied) : NULL;
    if (v == NULL) return 0;
    attn_param emb;
    attn_lm_param_get(plan, 0, &emb);
    size_t n = (size_t)plan->V * (size_t)plan->C;
    float *head = malloc(n * sizeof *head);
    if (head == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "out of memory");
    int shape[2] = {plan->V, plan->C};
    char field[80];
    snprintf(field, sizeof field, "state_dict.%s", tied);
    int rc = api__tensor_read_into(v, field, 2, shape, head, e);
    if (rc == 0 && memcmp(head, params, n * sizeof *head) != 0)
        rc = api__fail(e, API_E_INVALID_ARGUMENT, field, "%s is tied to %s: leave it out or give the "
                       "same values", tied, emb.name);
    free(head);
    return rc ? -1 : 0;
}

/* state_dict into params: every parameter, buffers optional (filled as the
 * module registers them), a tied head optional but equal to the token
 * embedding; then the values checked (finite, the mask buffers). */
int api__model_state_dict_read(const json_t *sd, const attn_lm_plan *plan, float *params,
                               api_err *e) {
    if (check_names(sd, plan, e)) return -1;
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        char field[ATTN_PARAM_NAME_MAX + 16], shape[64];
        snprintf(field, sizeof field, "state_dict.%s", p.name);
        const json_t *v = json_object_get(sd, p.name);
        if (v == NULL && p.buffer) {
            attn_param_buffer_fill(&p, params + p.offset);
            continue;
        }
        api__shape_str(shape, sizeof shape, p.rank, p.shape);
        if (v == NULL)
            return api__fail(e, API_E_MISSING_FIELD, field, "state_dict has no \"%s\": %s needs it "
                             "with shape %s", p.name, attn_arch_name(plan->cfg.arch), shape);
        if (api__tensor_read_into(v, field, p.rank, p.shape, params + p.offset, e)) return -1;
    }
    if (check_tied(sd, plan, params, e)) return -1;
    attn_error ae = {0};
    if (attn_lm_params_check(plan, params, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    return 0;
}
