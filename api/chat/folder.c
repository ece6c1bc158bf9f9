/* folder.c - a model folder's chat template, read once at load:
 * chat_template.jinja when the folder has it (transformers 4.43 and later
 * save the template there, and it wins over the config's), else
 * tokenizer_config.json's "chat_template": a string, or a list of {"name",
 * "template"} whose "default" is the one transformers applies. With it the
 * texts of the special tokens transformers hands every template
 * (special_tokens_map: bos_token, eos_token, unk_token, pad_token; each a
 * string or an AddedToken object's "content"), and the ids
 * generation_config.json says end a reply. */
#include "api/chat/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_MAX ((size_t)64 << 20) /* bytes of tokenizer_config.json read */

static int fail(char *why, size_t size, const char *fmt, const char *a, const char *b) {
    if (why && size) snprintf(why, size, fmt, a, b);
    return -1;
}

/* The whole file dir/name (at most max bytes) into *out (malloc'd, NUL
 * after), or 1 when there is no such file; -1 on a fault. */
static int slurp(const char *dir, const char *name, size_t max, char **out, size_t *len, char *why,
                 size_t size) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) != 0) return 1;
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > max)
        return fail(why, size, "%s/%s: not a file, or over the size a chat template may have", dir, name);
    FILE *f = fopen(path, "rb");
    char *b = f ? malloc((size_t)st.st_size + 1) : NULL;
    size_t n = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
    if (f) fclose(f);
    if (b == NULL || n != (size_t)st.st_size) {
        free(b);
        return fail(why, size, "%s/%s: cannot be read", dir, name);
    }
    b[n] = '\0';
    *out = b;
    *len = n;
    return 0;
}

/* "chat_template" of the config: its string, or the list's "default". */
static const json_t *config_template(const json_t *cfg) {
    const json_t *v = json_object_get(cfg, "chat_template");
    if (json_is_string(v)) return v;
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (json_is_string(json_object_get(x, "template")) &&
            json_is_string(json_object_get(x, "name")) &&
            strcmp(json_string_value(json_object_get(x, "name")), "default") == 0)
            return json_object_get(x, "template");
    }
    return NULL;
}

/* The special tokens' texts into f->tokens. */
static int special_tokens(const json_t *cfg, api_chat_folder *f) {
    static const char *const names[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    f->tokens = json_object();
    if (f->tokens == NULL) return -1;
    for (size_t i = 0; cfg && i < sizeof names / sizeof names[0]; i++) {
        const json_t *v = json_object_get(cfg, names[i]);
        if (json_is_object(v)) v = json_object_get(v, "content");
        if (json_is_string(v) && json_object_set_new(f->tokens, names[i], json_string(json_string_value(v))))
            return -1;
    }
    return 0;
}

/* generation_config.json's eos_token_id: one id or a list (Llama 3.2
 * Instruct's [128001, 128008, 128009], Gemma 3's [1, 106]). */
static void generation_eos(const char *dir, api_chat_folder *f) {
    json_error_t je;
    char path[4096];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    json_t *g = json_load_file(path, 0, &je), *v = json_object_get(g, "eos_token_id");
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; v && i < n && f->n_eos < (int)(sizeof f->eos / sizeof f->eos[0]); i++) {
        const json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
        if (json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) < INT32_MAX)
            f->eos[f->n_eos++] = (int32_t)json_integer_value(x);
    }
    json_decref(g);
}

/* Compiles src into f (a template that does not compile is kept as its
 * error: the model still serves everything else). */
static void compile(api_chat_folder *f, const char *src, size_t len, const char *from) {
    api_chat_error err;
    snprintf(f->source, sizeof f->source, "%s", from);
    if (api__chat_compile(src, len, &f->t, &err) == 0) return;
    if (err.line) snprintf(f->error, sizeof f->error, "%s, line %d: %s", from, err.line, err.message);
    else snprintf(f->error, sizeof f->error, "%s: %s", from, err.message);
}

int api__chat_folder_load(const char *dir, api_chat_folder **out, char *why, size_t size) {
    char *text = NULL, *jinja = NULL;
    size_t len = 0, jlen = 0;
    *out = NULL;
    int rc = slurp(dir, "tokenizer_config.json", CONFIG_MAX, &text, &len, why, size);
    int rj = rc < 0 ? 1 : slurp(dir, "chat_template.jinja", API_CHAT_MAX_TEMPLATE, &jinja, &jlen, why, size);
    if (rc < 0 || rj < 0) {
        free(text);
        return -1;
    }
    json_error_t je;
    json_t *cfg = text ? json_loadb(text, len, 0, &je) : NULL;
    free(text);
    const json_t *src = cfg ? config_template(cfg) : NULL;
    int bad = text && !json_is_object(cfg);
    if (bad || (jinja == NULL && src == NULL)) { /* no template: not a chat model */
        if (bad) fail(why, size, "%s/tokenizer_config.json: %s", dir, cfg ? "not a JSON object" : je.text);
        json_decref(cfg);
        free(jinja);
        return bad ? -1 : 0;
    }
    api_chat_folder *f = calloc(1, sizeof *f);
    if (f == NULL || special_tokens(cfg, f)) {
        json_decref(cfg);
        free(jinja);
        api__chat_folder_free(f);
        return fail(why, size, "%s: %s", dir, "out of memory");
    }
    if (jinja) compile(f, jinja, jlen, "chat_template.jinja");
    else compile(f, json_string_value(src), json_string_length(src), "tokenizer_config.json's chat_template");
    generation_eos(dir, f);
    json_decref(cfg);
    free(jinja);
    *out = f;
    return 0;
}

void api__chat_folder_free(api_chat_folder *f) {
    if (f == NULL) return;
    api__chat_free(f->t);
    json_decref(f->tokens);
    free(f);
}
