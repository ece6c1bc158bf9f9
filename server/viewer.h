/* viewer.h - the attention map viewer page served at GET /: one HTML file
 * with its script and style inline (server/static/index.html and its .js
 * files, joined by server/static/inline.py at build time), embedded in
 * the binary by server/viewer.S. */
#ifndef SRV_VIEWER_H
#define SRV_VIEWER_H

/* The page, static and NUL-terminated. */
static inline const char *srv_viewer_html(void) {
    extern const char srv__viewer_html[];
    return srv__viewer_html;
}

#endif
