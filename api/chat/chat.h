/* chat.h - chat templates (private to api/, prefix api__chat_): the Jinja
 * subset of the chat_template strings that SmolLM2, Qwen2.5, Qwen3, Llama 3.2
 * and Gemma 3 ship in tokenizer_config.json, rendered as npm
 * @huggingface/jinja (transformers.js) renders them, byte for byte.
 * docs/chat-templates.md lists what is supported and what is refused.
 *
 *     api_chat_template *t;
 *     api_chat_error e;
 *     if (api__chat_compile(src, len, &t, &e) != 0) ... e.line, e.message
 *     api_chat_limits lim;
 *     api__chat_limits_default(&lim);
 *     char *text; size_t n;   // context: {"messages": [...], "add_generation_prompt": true,
 *                             //           "bos_token": "<s>", "eos_token": "</s>", ...}
 *     if (api__chat_render(t, context, &lim, &text, &n, &e) != 0) ... e.code
 *     free(text);
 *     api__chat_free(t);
 *
 * A compiled template is read-only: any number of threads may render it at
 * once. A render owns its memory (one arena) and stops with an error, never a
 * crash, at the limits below. Functions return 0 or a negative API_CHAT_E*.
 * The folder's files share jinja.h (prefix api__jinja_):
 *
 *   lex.c      whitespace control and tokens     parse.c   statements
 *   expr.c     expressions                       names.c   filter/test/method tables
 *   exec.c     statements run                    eval.c    expressions evaluated
 *   filters.c  filters                           call.c    methods and globals
 *   strings.c  string algorithms (split, ...)    text.c    UTF-8, JS whitespace
 *   value.c    values, JSON in                   print.c   values out, tojson
 *   rt.c       the arena, errors, output         template.c the interface */
#ifndef API_CHAT_H
#define API_CHAT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum {
    API_CHAT_OK = 0,
    API_CHAT_ENOMEM = -1,      /* an allocation failed */
    API_CHAT_ESYNTAX = -2,     /* the template is not Jinja */
    API_CHAT_EUNSUPPORTED = -3,/* Jinja this module refuses (a macro, an unknown filter) */
    API_CHAT_ERAISE = -4,      /* the template called raise_exception(message) */
    API_CHAT_ERENDER = -5,     /* an operation on the wrong types, a missing method */
    API_CHAT_ELIMIT = -6,      /* output, memory, iterations or nesting over the limits */
    API_CHAT_EARG = -7         /* a bad argument: context not an object, a clashing name */
};

#define API_CHAT_MAX_TEMPLATE ((size_t)1 << 20) /* bytes of template source */
#define API_CHAT_MAX_NESTING 128                /* depth of the syntax tree */

typedef struct api_chat_template api_chat_template;

typedef struct {
    int code;          /* API_CHAT_E* */
    int line;          /* the template line (1-based), 0 when none applies */
    char message[512]; /* for raise_exception: its message, cut to fit */
} api_chat_error;

typedef struct {
    size_t max_output;     /* bytes of rendered text */
    size_t max_memory;     /* bytes one render may allocate (values, strings) */
    size_t max_iterations; /* loop iterations and range() items in one render */
    int max_depth;         /* nesting of values: the context, tojson, printing */
    int64_t now;           /* strftime_now's clock in seconds since 1970 (local
                              time); 0: the current time */
} api_chat_limits;

/* 4 MiB of output, 64 MiB of memory, 100,000 iterations, depth 256, now. */
void api__chat_limits_default(api_chat_limits *lim);

/* One line for a code. */
const char *api__chat_strerror(int code);

/* Compiles len bytes of UTF-8 template source (a chat_template string as
 * tokenizer_config.json holds it, after JSON decoding): *out, or an error
 * with its line (err may be NULL, here and in render). Unknown filters and
 * tests are refused here, not when a render reaches them. */
int api__chat_compile(const char *src, size_t len, api_chat_template **out, api_chat_error *err);

void api__chat_free(api_chat_template *t); /* NULL: nothing */

/* Renders t with context, a JSON object whose members are the template's
 * variables (messages, add_generation_prompt, bos_token, eos_token, tools,
 * enable_thinking, ...; none may be named like a builtin: range, namespace,
 * raise_exception, strftime_now, true, none, ...): *text (malloc'd,
 * NUL-terminated, the caller frees) of *len bytes. lim may be NULL (the
 * defaults). On failure *text is NULL and err says why; raise_exception
 * gives API_CHAT_ERAISE with the template's message. context is only read,
 * and must outlive the call. */
int api__chat_render(const api_chat_template *t, const json_t *context, const api_chat_limits *lim,
                     char **text, size_t *len, api_chat_error *err);

/* ==== A model folder's template (folder.c) ==== */

typedef struct api_chat_folder {
    api_chat_template *t;   /* NULL when it did not compile: error says why */
    json_t *tokens;         /* {"bos_token": "<s>", "eos_token": ..., "unk_token", "pad_token"}:
                               those tokenizer_config.json sets, as strings */
    char source[48];        /* "chat_template.jinja" or "tokenizer_config.json's chat_template" */
    char error[600];        /* the compile error, with its file and line */
    int n_eos;              /* generation_config.json's eos_token_id (a number or a list) */
    int32_t eos[8];
} api_chat_folder;

/* The chat template of the folder dir (chat_template.jinja, else
 * tokenizer_config.json's chat_template) into *out, with the ids its
 * generation_config.json says end a reply (at most 8); a folder without one
 * gives NULL, and so does a missing tokenizer_config.json. -1 with why
 * only for a file that cannot be read or a config that is not JSON; a
 * template that does not compile is loaded as its error. */
int api__chat_folder_load(const char *dir, api_chat_folder **out, char *why, size_t size);
void api__chat_folder_free(api_chat_folder *f); /* NULL: nothing */

#endif
