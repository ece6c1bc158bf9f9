/* models.c - GET /v1/models as OpenAI's Models API lists them:
 *   {"object": "list", "data": [{"id": "gpt2", "object": "model",
 *    "created": 1764000000, "owned_by": "attention-server"}]} */
#include "api/openai/openai.h"

int api_openai_models_json(const api_models *models, long long created, api_buf *out) {
    api__buf_puts(out, "{\"object\":\"list\",\"data\":[");
    for (int i = 0;; i++) {
        const api_model *m = api__models_at(models, i);
        if (m == NULL) break;
        api__buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        api__buf_json_string(out, m->name);
        api__buf_printf(out, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"attention-server\"}",
                        created);
    }
    api__buf_puts(out, "]}\n");
    return out->failed ? -1 : 0;
}
