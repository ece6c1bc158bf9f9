/* viewer.S - embeds the viewer page served at GET / (build/gen/viewer.html:
 * server/static/index.html with its scripts inlined by server/static/inline.py),
 * NUL-terminated, as srv__viewer_html (srv_viewer_html() in viewer.h). The
 * Makefile passes its path as SRV_VIEWER_HTML. */
    .section .rodata
    .globl srv__viewer_html
    .type srv__viewer_html, @object
    .balign 16
srv__viewer_html:
    .incbin SRV_VIEWER_HTML
    .byte 0
    .size srv__viewer_html, . - srv__viewer_html

    /* no executable stack */
    .section .note.GNU-stack, "", @progbits
