/* tiny_server.c - see tiny_server.h. */
#include "tiny_server.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "bpe_files.h"
#include "files.h"

void tiny_server_start(srvt_server *s, const char *prefix) {
    char dir[64], model[1200], tok[128], path[1024];
    snprintf(dir, sizeof dir, "/tmp/%sXXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    static const char *const extra[] = {"<|endoftext|>", NULL};
    ck_assert(tbpe_write_dir(dir, extra));
    tfile_path(path, sizeof path, "tests/golden/generation/tiny_hf.safetensors");
    snprintf(model, sizeof model, "--model=tiny=%s", path);
    snprintf(tok, sizeof tok, "--tokenizer=bytes=%s", dir);
    const char *args[] = {model, tok, NULL};
    srvt_must_start(s, args);
}
