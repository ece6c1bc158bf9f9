/* api_requests.c - see api_requests.h. */
#include "api_requests.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"

static int add(api_request_list *l, const char *name, const char *path, json_t *body, char *err,
               size_t cap) {
    api_example_request *items = realloc(l->items, (l->count + 1) * sizeof *items);
    if (items == NULL) {
        json_decref(body);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    l->items = items;
    api_example_request *r = &items[l->count++];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->path, sizeof r->path, "%s", path);
    r->body = body;
    return 0;
}

/* The curl lines of the document rel (README.md, docs/NAME.md) that POST a
 * JSON body with -d '...' (other options, such as an Accept header, and what
 * the output is piped to are left out: the body is the request). */
static int load_doc(api_request_list *l, const char *rel, char *err, size_t cap) {
    char *text = tfile_read_rel(rel, NULL);
    if (text == NULL) {
        snprintf(err, cap, "cannot read %s", rel);
        return -1;
    }
    int line = 1, rc = 0;
    for (char *p = text; *p && rc == 0; line++) {
        char *eol = strchr(p, '\n');
        if (eol) *eol = '\0';
        const char *host = "localhost:8080/attention/", *at = strstr(p, host), *d = strstr(p, " -d '");
        const char *end = d ? strchr(d + 5, '\'') : NULL;   /* the bodies hold no ' */
        if (strncmp(p, "curl ", 5) == 0 && at && end) {
            char path[64], name[96];
            snprintf(path, sizeof path, "/attention/%.*s", (int)strcspn(at + strlen(host), " "),
                     at + strlen(host));
            snprintf(name, sizeof name, "%s:%d", rel, line);
            json_error_t je;
            json_t *body = json_loadb(d + 5, (size_t)(end - (d + 5)), 0, &je);
            if (body == NULL) {
                snprintf(err, cap, "%s: the body is not JSON: %s", name, je.text);
                rc = -1;
            } else {
                rc = add(l, name, path, body, err, cap);
            }
        }
        p = eol ? eol + 1 : p + strlen(p);
    }
    free(text);
    return rc;
}

/* The requests of README.md, then of docs/ (tfile_docs). */
static int load_docs(api_request_list *l, char *err, size_t cap) {
    char *names[64];
    int n = tfile_docs(names, 64), rc = 0;
    if (n < 0) {
        snprintf(err, cap, "cannot list docs/");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (rc == 0) rc = load_doc(l, names[i], err, cap);
        free(names[i]);
    }
    l->from_readme = l->count;
    return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_json(const struct dirent *d) {
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* api/examples/ENDPOINT[_what].json */
static int load_examples(api_request_list *l, char *err, size_t cap) {
    char dir[1024];
    struct dirent **names;
    int n = scandir(tfile_path(dir, sizeof dir, "api/examples"), &names, is_json, by_name);
    if (n < 0) {
        snprintf(err, cap, "cannot list %s", dir);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *f = names[i]->d_name;
        char file[1400], path[64], name[96];
        snprintf(file, sizeof file, "%s/%s", dir, f);
        snprintf(path, sizeof path, "/attention/%.*s", (int)strcspn(f, "_."), f);
        snprintf(name, sizeof name, "api/examples/%.80s", f);
        json_error_t je;
        json_t *body = rc ? NULL : json_load_file(file, 0, &je);
        if (rc == 0 && body == NULL) {
            snprintf(err, cap, "%s: %s", name, je.text);
            rc = -1;
        } else if (rc == 0) {
            rc = add(l, name, path, body, err, cap);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int api_requests_load(api_request_list *l, char *err, size_t cap) {
    memset(l, 0, sizeof *l);
    if (load_docs(l, err, cap) != 0 || load_examples(l, err, cap) != 0) {
        api_requests_free(l);
        return -1;
    }
    return 0;
}

void api_requests_free(api_request_list *l) {
    for (size_t i = 0; i < l->count; i++) json_decref(l->items[i].body);
    free(l->items);
    memset(l, 0, sizeof *l);
}
