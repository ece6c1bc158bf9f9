/* bpe_files.c - see bpe_files.h. */
#include "bpe_files.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

json_t *tbpe_vocab(const char *const extra[]) {
    json_t *v = json_object();
    unsigned n = 0;
    for (unsigned b = 0; b < 256; b++) {
        /* bytes_to_unicode: printable Latin-1 bytes are themselves, the
         * others 256, 257, ... in byte order */
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned cp = printable ? b : 256 + n++;
        char name[3] = {0};
        if (cp < 0x80) name[0] = (char)cp;
        else name[0] = (char)(0xC0 | cp >> 6), name[1] = (char)(0x80 | (cp & 0x3F));
        json_object_set_new(v, name, json_integer(b));
    }
    for (int i = 0; extra && extra[i]; i++) json_object_set_new(v, extra[i], json_integer(256 + i));
    return v;
}

int tbpe_write_dir(const char *dir, const char *const extra[]) {
    char path[1200];
    json_t *v = tbpe_vocab(extra);
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    int ok = json_dump_file(v, path, JSON_SORT_KEYS) == 0;
    json_decref(v);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    FILE *f = fopen(path, "w");
    ok = ok && f && fputs("#version: 0.2\n", f) >= 0;
    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

api_bpe *tbpe_load_bytes(const char *const extra[]) {
    char dir[] = "/tmp/bpe-bytes-XXXXXX", path[64], why[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    int written = tbpe_write_dir(dir, extra);
    api_bpe *bpe = NULL;
    int rc = written ? api_bpe_load(dir, &bpe, why, sizeof why) : -1;
    const char *const files[] = {"vocab.json", "merges.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    ck_assert_msg(written, "cannot write a tokenizer into %s", dir);
    ck_assert_msg(rc == 0, "%s", why);
    return bpe;
}
