/* tiny_server.c - see tiny_server.h. */
#include "tiny_server.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "bpe_files.h"
#include "files.h"
#include "tmpdir.h"

void tiny_server_start(srvt_server *s) {
    char model[1200], tok[192], path[1024];
    if (ttmp_dir()[0] == '\0') ttmp_make();
    static const char *const extra[] = {"<|endoftext|>", NULL};
    ck_assert(tbpe_write_dir(ttmp_dir(), extra));
    tfile_path(path, sizeof path, "tests/golden/generation/tiny_hf.safetensors");
    snprintf(model, sizeof model, "--model=tiny=%s", path);
    snprintf(tok, sizeof tok, "--tokenizer=bytes=%s", ttmp_dir());
    const char *args[] = {model, tok, NULL};
    srvt_must_start(s, args);
}
