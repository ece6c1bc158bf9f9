/* openapi_doc.S - embeds the OpenAPI document, NUL-terminated, as
 * api__openapi_doc (api_openapi_json() in api/api.h returns it). The file is
 * build/gen/openapi.json, made by `make` from the tables (api/tables.c) and
 * api/openapi/gen.py; the Makefile passes its path as API_OPENAPI_JSON. */
    .section .rodata
    .globl api__openapi_doc
    .type api__openapi_doc, @object
    .balign 16
api__openapi_doc:
    .incbin API_OPENAPI_JSON
    .byte 0
    .size api__openapi_doc, . - api__openapi_doc

    /* no executable stack */
    .section .note.GNU-stack, "", @progbits
