/* state_dict.c - a /model/gpt2 "state_dict" (seed 003's names) into core's
 * GPT2 parameter buffer. */
#include "api/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* state_dict into params: every parameter, buffers optional, lm_head.weight
 * optional but equal to wte.weight. */
int api__model_state_dict_read(const json_t *sd, const attn_gpt2_plan *plan, float *params,
                                api_err *e) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)sd, key, v) {
        int found = strcmp(key, "lm_head.weight") == 0;
        for (int i = 0; i < plan->param_count && !found; i++) {
            attn_param p;
            attn_gpt2_param_get(plan, i, &p);
            found = strcmp(p.name, key) == 0;
        }
        if (!found) {
            char echo[API_ECHO_MAX + 4], field[API_ECHO_MAX + 16];
            snprintf(field, sizeof field, "state_dict.%s", api__echo(echo, sizeof echo, key));
            return api__fail(e, API_E_INVALID_ARGUMENT, field,
                             "GPT2 has no parameter \"%s\" (names as gpt2_min.py's state_dict: "
                             "wte.weight, h.0.attn.c_attn.weight, h.0.mlp.fc.weight, ...)", echo);
        }
    }
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_gpt2_param_get(plan, i, &p);
        char field[ATTN_PARAM_NAME_MAX + 16], shape[64];
        snprintf(field, sizeof field, "state_dict.%s", p.name);
        v = json_object_get(sd, p.name);
        if (v == NULL && p.buffer) {
            attn_param_buffer_fill(&p, params + p.offset);
            continue;
        }
        api__shape_str(shape, sizeof shape, p.rank, p.shape);
        if (v == NULL)
            return api__fail(e, API_E_MISSING_FIELD, field,
                             "state_dict has no \"%s\": GPT2 needs it with shape %s", p.name, shape);
        if (api__tensor_read_into(v, field, p.rank, p.shape, params + p.offset, e)) return -1;
    }
    v = json_object_get(sd, "lm_head.weight");
    if (v) {
        size_t n = (size_t)plan->V * (size_t)plan->C;
        float *head = malloc(n * sizeof *head);
        if (head == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "out of memory");
        int shape[2] = {plan->V, plan->C};
        int rc = api__tensor_read_into(v, "state_dict.lm_head.weight", 2, shape, head, e);
        if (rc == 0 && memcmp(head, params, n * sizeof *head) != 0)
            rc = api__fail(e, API_E_INVALID_ARGUMENT, "state_dict.lm_head.weight",
                           "lm_head.weight is tied to wte.weight: leave it out or give the "
                           "same values");
        free(head);
        if (rc) return -1;
    }
    attn_error ae = {0};
    if (attn_gpt2_params_check(plan, params, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    return 0;
}

