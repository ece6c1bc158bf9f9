/* events.c - a reply as server-sent events (text/event-stream, the WHATWG
 * HTML standard's format): the events a generation wrote and has not handed
 * over yet, then its last event, whose data is the reply's JSON object on
 * one line (JSON text holds no raw newline), then the end (OpenAI's
 * "data: [DONE]"). */
#include "api/reply/reply.h"

#include <string.h>

int api__write_events(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e) {
    if (c->events && c->events->len) api__buf_put(b, c->events->data, c->events->len);
    if (c->last_event) {
        api__buf_printf(b, "event: %s\ndata: ", c->last_event);
        if (api__write_json(b, c, parts, e)) return -1;
        api__buf_puts(b, "\n"); /* the object ends with a newline: a blank line ends the event */
    }
    if (c->events_end) api__buf_puts(b, c->events_end);
    if (b->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    return 0;
}
