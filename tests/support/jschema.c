/* jschema.c - see jschema.h. */
#include "jschema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting of schemas visited for one value: a $ref cycle that consumes no
 * instance depth ends here as a schema error. */
#define JSCHEMA_MAX_DEPTH 256

typedef struct {
    const json_t *doc;
    char path[512];    /* instance location, "$..." */
    size_t plen;
    char spath[512];   /* schema location, "#/..." */
    size_t slen;
    int depth;
    jschema_error *err;
} ctx;

/* ==== Locations ========================================================= */

static size_t push(char *buf, size_t *len, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends to a location; returns the old length for pop(). Truncates quietly. */
static size_t push(char *buf, size_t *len, size_t cap, const char *fmt, ...) {
    size_t old = *len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + old, cap - old, fmt, ap);
    va_end(ap);
    if (n > 0) *len = old + (size_t)n < cap ? old + (size_t)n : cap - 1;
    return old;
}

static void pop(char *buf, size_t *len, size_t old) {
    *len = old;
    buf[old] = '\0';
}

static int is_ident(const char *k) {
    if (!*k || (*k >= '0' && *k <= '9')) return 0;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
              *k == '_'))
            return 0;
    return 1;
}

static size_t push_key(ctx *c, const char *k) {
    if (is_ident(k)) return push(c->path, &c->plen, sizeof c->path, ".%s", k);
    return push(c->path, &c->plen, sizeof c->path, "[\"%s\"]", k);
}

static size_t push_index(ctx *c, size_t i) {
    return push(c->path, &c->plen, sizeof c->path, "[%zu]", i);
}

/* One JSON pointer token, with ~ and / escaped. */
static size_t push_schema(ctx *c, const char *tok) {
    size_t old = c->slen;
    push(c->spath, &c->slen, sizeof c->spath, "/");
    for (; *tok; tok++) {
        if (*tok == '~') push(c->spath, &c->slen, sizeof c->spath, "~0");
        else if (*tok == '/') push(c->spath, &c->slen, sizeof c->spath, "~1");
        else push(c->spath, &c->slen, sizeof c->spath, "%c", *tok);
    }
    return old;
}

static size_t push_schema_index(ctx *c, const char *kw, size_t i) {
    size_t old = push_schema(c, kw);
    push(c->spath, &c->slen, sizeof c->spath, "/%zu", i);
    return old;
}

static int report(ctx *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int report(ctx *c, int rc, const char *fmt, ...) {
    if (c->err) {
        snprintf(c->err->path, sizeof c->err->path, "%s", c->path);
        snprintf(c->err->schema_path, sizeof c->err->schema_path, "%s", c->spath);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ==== Values ============================================================ */

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE: case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* 1 if v has the JSON Schema type name, 0 if not, -1 for an unknown name. */
static int has_type(const json_t *v, const char *name) {
    if (strcmp(name, "null") == 0) return json_is_null(v);
    if (strcmp(name, "boolean") == 0) return json_is_boolean(v);
    if (strcmp(name, "object") == 0) return json_is_object(v);
    if (strcmp(name, "array") == 0) return json_is_array(v);
    if (strcmp(name, "string") == 0) return json_is_string(v);
    if (strcmp(name, "number") == 0) return json_is_number(v);
    if (strcmp(name, "integer") == 0) {
        if (json_is_integer(v)) return 1;
        double d = json_is_real(v) ? json_real_value(v) : NAN;
        return isfinite(d) && d == floor(d);
    }
    return -1;
}

/* JSON Schema equality: numbers by value, objects regardless of key order. */
static int equal(const json_t *a, const json_t *b) {
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b)) return 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!equal(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            const json_t *w = json_object_get(b, k);
            if (w == NULL || !equal(v, w)) return 0;
        }
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

const json_t *jschema_resolve(const json_t *doc, const char *ref) {
    if (doc == NULL || ref == NULL || ref[0] != '#') return NULL;
    const char *p = ref + 1;
    const json_t *node = doc;
    while (*p) {
        if (*p != '/') return NULL;
        p++;
        char tok[256];
        size_t n = 0;
        for (; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~') {
                if (p[1] == '0') ch = '~';
                else if (p[1] == '1') ch = '/';
                else return NULL;
                p++;
            }
            if (n + 1 >= sizeof tok) return NULL;
            tok[n++] = ch;
        }
        tok[n] = '\0';
        if (json_is_object(node)) {
            node = json_object_get(node, tok);
        } else if (json_is_array(node)) {
            char *end;
            unsigned long i = strtoul(tok, &end, 10);
            if (*tok == '\0' || *end != '\0') return NULL;
            node = json_array_get(node, i);
        } else {
            return NULL;
        }
        if (node == NULL) return NULL;
    }
    return node;
}

/* ==== Keywords ========================================================== */

static const char *const descriptive[] = {"description", "title", "example", "examples", "format",
                                          "deprecated", "default", "$comment", "externalDocs", NULL};

static int in_list(const char *const *list, const char *k) {
    for (; *list; list++)
        if (strcmp(*list, k) == 0) return 1;
    return 0;
}

static int is_schema(const json_t *s) { return json_is_object(s) || json_is_boolean(s); }

static int is_count(const json_t *v) {
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

/* Checks the keywords of one schema object (not its subschemas): names known,
 * values of the right form, $ref resolvable. */
static int check_node(ctx *c, const json_t *s) {
    if (json_is_boolean(s)) return JSCHEMA_VALID;
    if (!json_is_object(s)) return report(c, JSCHEMA_SCHEMA_ERROR, "a schema must be an object or a boolean, not %s", type_name(s));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        int ok;
        if (in_list(descriptive, k)) continue;
        if (strcmp(k, "type") == 0) {
            ok = json_is_string(v) && has_type(json_null(), json_string_value(v)) >= 0;
            if (json_is_array(v)) {
                ok = json_array_size(v) > 0;
                for (size_t i = 0; i < json_array_size(v); i++) {
                    const json_t *t = json_array_get(v, i);
                    ok &= json_is_string(t) && has_type(json_null(), json_string_value(t)) >= 0;
                }
            }
        } else if (strcmp(k, "enum") == 0) {
            ok = json_is_array(v);
        } else if (strcmp(k, "const") == 0) {
            ok = 1;
        } else if (strcmp(k, "properties") == 0) {
            ok = json_is_object(v);
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) ok &= is_schema(pv);
        } else if (strcmp(k, "required") == 0) {
            ok = json_is_array(v);
            for (size_t i = 0; ok && i < json_array_size(v); i++) ok = json_is_string(json_array_get(v, i));
        } else if (strcmp(k, "additionalProperties") == 0 || strcmp(k, "items") == 0) {
            ok = is_schema(v);
        } else if (strcmp(k, "prefixItems") == 0 || strcmp(k, "oneOf") == 0 ||
                   strcmp(k, "anyOf") == 0 || strcmp(k, "allOf") == 0) {
            ok = json_is_array(v) && json_array_size(v) > 0;
            for (size_t i = 0; ok && i < json_array_size(v); i++) ok = is_schema(json_array_get(v, i));
        } else if (strcmp(k, "minimum") == 0 || strcmp(k, "maximum") == 0) {
            ok = json_is_number(v);
        } else if (strcmp(k, "minItems") == 0 || strcmp(k, "maxItems") == 0) {
            ok = is_count(v);
        } else if (strcmp(k, "$ref") == 0) {
            if (!json_is_string(v))
                return report(c, JSCHEMA_SCHEMA_ERROR, "$ref must be a string");
            const json_t *t = jschema_resolve(c->doc, json_string_value(v));
            if (t == NULL || !is_schema(t))
                return report(c, JSCHEMA_SCHEMA_ERROR, "dangling $ref \"%s\"", json_string_value(v));
            ok = 1;
        } else {
            return report(c, JSCHEMA_SCHEMA_ERROR, "unknown keyword \"%s\"", k);
        }
        if (!ok) return report(c, JSCHEMA_SCHEMA_ERROR, "malformed value of \"%s\"", k);
    }
    return JSCHEMA_VALID;
}

/* ==== Validation ======================================================== */

static int validate(ctx *c, const json_t *s, const json_t *inst);

/* Runs one subschema in a silent copy of c; its error lands in *out. */
static int try_branch(const ctx *c, const json_t *s, const json_t *inst, jschema_error *out) {
    ctx sub = *c;
    sub.err = out;
    return validate(&sub, s, inst);
}

/* oneOf and anyOf: counts the matching branches. With none, the reported
 * error is that of the branch that got deepest into the instance. */
static int combine(ctx *c, const char *kw, const json_t *list, const json_t *inst, int exactly_one) {
    int matched = 0;
    size_t first = 0, best_depth = 0;
    jschema_error best = {{0}, {0}, {0}}, e;
    for (size_t i = 0; i < json_array_size(list); i++) {
        size_t sold = push_schema_index(c, kw, i);
        memset(&e, 0, sizeof e);
        int rc = try_branch(c, json_array_get(list, i), inst, &e);
        pop(c->spath, &c->slen, sold);
        if (rc == JSCHEMA_SCHEMA_ERROR) {
            if (c->err) *c->err = e;
            return rc;
        }
        if (rc == JSCHEMA_VALID) {
            if (matched++ == 0) first = i;
            else if (exactly_one) {
                size_t sold2 = push_schema(c, kw);
                int r = report(c, JSCHEMA_INVALID, "matches branches %zu and %zu of oneOf, not exactly one", first, i);
                pop(c->spath, &c->slen, sold2);
                return r;
            }
            if (!exactly_one) return JSCHEMA_VALID;
        } else if (best.message[0] == '\0' || strlen(e.path) > best_depth) {
            best = e;
            best_depth = strlen(e.path);
        }
    }
    if (matched) return JSCHEMA_VALID;
    if (c->err) {
        *c->err = best;
        char msg[sizeof best.message];
        snprintf(msg, sizeof msg, "no branch of %s matches; closest: %.400s", kw, best.message);
        memcpy(c->err->message, msg, sizeof msg);
    }
    return JSCHEMA_INVALID;
}

static int validate_object(ctx *c, const json_t *s, const json_t *inst) {
    const json_t *props = json_object_get(s, "properties");
    const json_t *req = json_object_get(s, "required");
    const json_t *add = json_object_get(s, "additionalProperties");
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *name = json_string_value(json_array_get(req, i));
        if (json_object_get(inst, name) == NULL) {
            size_t sold = push_schema(c, "required");
            int r = report(c, JSCHEMA_INVALID, "missing required property \"%s\"", name);
            pop(c->spath, &c->slen, sold);
            return r;
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)inst, k, v) {
        const json_t *sub = json_object_get(props, k);
        size_t sold;
        if (sub) {
            sold = push_schema(c, "properties");
            push_schema(c, k);
        } else if (add) {
            sold = push_schema(c, "additionalProperties");
            sub = add;
        } else {
            continue;
        }
        size_t pold = push_key(c, k);
        int rc = json_is_false(sub) ? report(c, JSCHEMA_INVALID, "property \"%s\" is not allowed", k)
                                    : validate(c, sub, v);
        pop(c->path, &c->plen, pold);
        pop(c->spath, &c->slen, sold);
        if (rc != JSCHEMA_VALID) return rc;
    }
    return JSCHEMA_VALID;
}

static int validate_array(ctx *c, const json_t *s, const json_t *inst) {
    size_t n = json_array_size(inst);
    const json_t *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
    if (mn && (json_int_t)n < json_integer_value(mn)) {
        size_t sold = push_schema(c, "minItems");
        int r = report(c, JSCHEMA_INVALID, "%zu items, fewer than minItems %lld", n,
                       (long long)json_integer_value(mn));
        pop(c->spath, &c->slen, sold);
        return r;
    }
    if (mx && (json_int_t)n > json_integer_value(mx)) {
        size_t sold = push_schema(c, "maxItems");
        int r = report(c, JSCHEMA_INVALID, "%zu items, more than maxItems %lld", n,
                       (long long)json_integer_value(mx));
        pop(c->spath, &c->slen, sold);
        return r;
    }
    const json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    size_t np = json_array_size(prefix);
    for (size_t i = 0; i < n; i++) {
        const json_t *sub;
        size_t sold;
        if (i < np) {
            sub = json_array_get(prefix, i);
            sold = push_schema_index(c, "prefixItems", i);
        } else if (items) {
            sub = items;
            sold = push_schema(c, "items");
        } else {
            break;
        }
        size_t pold = push_index(c, i);
        int rc = json_is_false(sub) ? report(c, JSCHEMA_INVALID, "item %zu is not allowed", i)
                                    : validate(c, sub, json_array_get(inst, i));
        pop(c->path, &c->plen, pold);
        pop(c->spath, &c->slen, sold);
        if (rc != JSCHEMA_VALID) return rc;
    }
    return JSCHEMA_VALID;
}

static int validate(ctx *c, const json_t *s, const json_t *inst) {
    if (++c->depth > JSCHEMA_MAX_DEPTH) {
        c->depth--;
        return report(c, JSCHEMA_SCHEMA_ERROR, "schemas nested deeper than %d ($ref cycle?)", JSCHEMA_MAX_DEPTH);
    }
    int rc = check_node(c, s);
    if (rc != JSCHEMA_VALID) goto out;
    if (json_is_boolean(s)) {
        rc = json_is_true(s) ? JSCHEMA_VALID : report(c, JSCHEMA_INVALID, "the schema false allows nothing");
        goto out;
    }

    const json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        const char *r = json_string_value(ref);
        char saved[sizeof c->spath];
        size_t saved_len = c->slen;
        memcpy(saved, c->spath, sizeof saved);
        c->slen = 0;
        push(c->spath, &c->slen, sizeof c->spath, "%s", r);
        rc = validate(c, jschema_resolve(c->doc, r), inst);
        memcpy(c->spath, saved, sizeof saved);
        c->slen = saved_len;
        if (rc != JSCHEMA_VALID) goto out;
    }

    const json_t *type = json_object_get(s, "type");
    if (type) {
        int ok = 0;
        if (json_is_string(type)) ok = has_type(inst, json_string_value(type));
        for (size_t i = 0; i < json_array_size(type); i++)
            ok |= has_type(inst, json_string_value(json_array_get(type, i))) == 1;
        if (!ok) {
            char want[128];
            if (json_is_string(type)) {
                snprintf(want, sizeof want, "%s", json_string_value(type));
            } else {
                size_t w = 0;
                want[0] = '\0';
                for (size_t i = 0; i < json_array_size(type); i++)
                    push(want, &w, sizeof want, "%s%s", i ? " or " : "", json_string_value(json_array_get(type, i)));
            }
            size_t sold = push_schema(c, "type");
            rc = report(c, JSCHEMA_INVALID, "expected %s, got %s", want, type_name(inst));
            pop(c->spath, &c->slen, sold);
            goto out;
        }
    }

    const json_t *en = json_object_get(s, "enum");
    if (en) {
        int found = 0;
        for (size_t i = 0; i < json_array_size(en) && !found; i++) found = equal(json_array_get(en, i), inst);
        if (!found) {
            char *text = json_dumps(inst, JSON_COMPACT | JSON_ENCODE_ANY);
            size_t sold = push_schema(c, "enum");
            rc = report(c, JSCHEMA_INVALID, "%.200s is not one of the enum", text ? text : "value");
            pop(c->spath, &c->slen, sold);
            free(text);
            goto out;
        }
    }
    const json_t *cst = json_object_get(s, "const");
    if (cst && !equal(cst, inst)) {
        size_t sold = push_schema(c, "const");
        rc = report(c, JSCHEMA_INVALID, "not equal to const");
        pop(c->spath, &c->slen, sold);
        goto out;
    }

    if (json_is_number(inst)) {
        double x = json_number_value(inst);
        const json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
        if ((mn && x < json_number_value(mn)) || (mx && x > json_number_value(mx))) {
            int low = mn && x < json_number_value(mn);
            size_t sold = push_schema(c, low ? "minimum" : "maximum");
            rc = report(c, JSCHEMA_INVALID, "%g is %s %g", x, low ? "below the minimum" : "above the maximum",
                        json_number_value(low ? mn : mx));
            pop(c->spath, &c->slen, sold);
            goto out;
        }
    }
    if (json_is_object(inst) && (rc = validate_object(c, s, inst)) != JSCHEMA_VALID) goto out;
    if (json_is_array(inst) && (rc = validate_array(c, s, inst)) != JSCHEMA_VALID) goto out;

    const json_t *all = json_object_get(s, "allOf");
    for (size_t i = 0; i < json_array_size(all); i++) {
        size_t sold = push_schema_index(c, "allOf", i);
        rc = validate(c, json_array_get(all, i), inst);
        pop(c->spath, &c->slen, sold);
        if (rc != JSCHEMA_VALID) goto out;
    }
    const json_t *any = json_object_get(s, "anyOf");
    if (any && (rc = combine(c, "anyOf", any, inst, 0)) != JSCHEMA_VALID) goto out;
    const json_t *one = json_object_get(s, "oneOf");
    if (one && (rc = combine(c, "oneOf", one, inst, 1)) != JSCHEMA_VALID) goto out;
    rc = JSCHEMA_VALID;
out:
    c->depth--;
    return rc;
}

static void ctx_init(ctx *c, const json_t *doc, const json_t *schema, jschema_error *err) {
    memset(c, 0, sizeof *c);
    c->doc = doc ? doc : schema;
    c->err = err;
    push(c->path, &c->plen, sizeof c->path, "$");
    push(c->spath, &c->slen, sizeof c->spath, "#");
    if (err) memset(err, 0, sizeof *err);
}

int jschema_validate(const json_t *doc, const json_t *schema, const json_t *instance,
                     jschema_error *err) {
    ctx c;
    ctx_init(&c, doc, schema, err);
    if (schema == NULL || instance == NULL)
        return report(&c, JSCHEMA_SCHEMA_ERROR, "no %s", schema ? "instance" : "schema");
    return validate(&c, schema, instance);
}

/* ==== Schema walk ======================================================= */

static int check_tree(ctx *c, const json_t *s) {
    int rc = check_node(c, s);
    if (rc != JSCHEMA_VALID || !json_is_object(s)) return rc;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (strcmp(k, "properties") == 0) {
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) {
                size_t sold = push_schema(c, "properties");
                push_schema(c, pk);
                rc = check_tree(c, pv);
                pop(c->spath, &c->slen, sold);
                if (rc != JSCHEMA_VALID) return rc;
            }
        } else if (strcmp(k, "additionalProperties") == 0 || strcmp(k, "items") == 0) {
            size_t sold = push_schema(c, k);
            rc = check_tree(c, v);
            pop(c->spath, &c->slen, sold);
            if (rc != JSCHEMA_VALID) return rc;
        } else if (strcmp(k, "prefixItems") == 0 || strcmp(k, "oneOf") == 0 ||
                   strcmp(k, "anyOf") == 0 || strcmp(k, "allOf") == 0) {
            for (size_t i = 0; i < json_array_size(v); i++) {
                size_t sold = push_schema_index(c, k, i);
                rc = check_tree(c, json_array_get(v, i));
                pop(c->spath, &c->slen, sold);
                if (rc != JSCHEMA_VALID) return rc;
            }
        }
    }
    return JSCHEMA_VALID;
}

int jschema_check(const json_t *doc, const json_t *schema, jschema_error *err) {
    ctx c;
    ctx_init(&c, doc, schema, err);
    if (schema == NULL) return report(&c, JSCHEMA_SCHEMA_ERROR, "no schema");
    return check_tree(&c, schema);
}
