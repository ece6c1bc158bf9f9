/* sse.h - server-sent events (text/event-stream) read back by the tests:
 * blocks separated by a blank line, each with an optional "event:" line and
 * "data:" lines (joined by newlines), as a browser's EventSource reads them. */
#ifndef TESTS_SUPPORT_SSE_H
#define TESTS_SUPPORT_SSE_H

#include <stddef.h>

#define SSE_MAX_EVENTS 4096

typedef struct {
    char *event;   /* "message" when the block names none */
    char *data;
} sse_event;

typedef struct {
    sse_event ev[SSE_MAX_EVENTS];
    int n;
    int complete;  /* the text ended with a blank line (no partial block left) */
} sse_list;

/* Parses text[0..len) into *out (the strings malloc'd). Returns the count. */
int sse_parse(const char *text, size_t len, sse_list *out);
void sse_free(sse_list *l);

#endif
