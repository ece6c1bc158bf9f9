/* test_api_loaders.c - what the loaders and the number paths refuse (issue
 * 24, findings 7 and 8): a FIFO given as a tokenizer file or a checkpoint
 * (refused at once instead of blocking the start), an empty merges.txt (but
 * a byte-level one with only its #version line loads), a merge table sized
 * by its merges (20 MB of newlines took 1 GB), a NUL in a merges line,
 * control bytes kept out of the messages, a checkpoint without blocks, a
 * NaN named with the file's c_fc, lm_head.weight's dtype and shape named,
 * float32's largest value accepted as input, float16 replies that would
 * carry infinity refused, and a truncated gzip body or one with trailing
 * bytes answered as invalid gzip, not as too large.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "api/api.h"
#include "support/api_call.h"
#include "support/bpe_files.h"
#include "support/check_main.h"
#include "support/ckpt_files.h"
#include "support/procs.h"
#include "support/tmpdir.h"

static void write_text(const char *name, const char *text, size_t len) {
    char p[128];
    ttmp_path(p, sizeof p, name);
    ck_assert_int_eq(ckf_write(p, text, len), 0);
}

/* vocab.json of the 256 byte symbols (a byte-level tokenizer). */
static void write_vocab(void) {
    json_t *v = tbpe_vocab(NULL);
    char p[128];
    ttmp_path(p, sizeof p, "vocab.json");
    ck_assert_int_eq(json_dump_file(v, p, 0), 0);
    json_decref(v);
}

/* api_bpe_load of the test's directory: 0 or the error code, the message in err. */
static int load_bpe(char *err, size_t size) {
    api_bpe *b = NULL;
    int rc = api_bpe_load(ttmp_dir(), &b, err, size);
    api_bpe_free(b);
    return rc;
}

/* ==== Tokenizer files ==================================================== */

START_TEST(t_bpe_fifo_refused) {
    ttmp_make();
    const char *names[] = {"vocab.json", "merges.txt"};
    char p[128], err[512];
    ttmp_path(p, sizeof p, names[_i]);
    if (_i == 1) write_vocab();
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    double t0 = procs_now();
    ck_assert_int_ne(load_bpe(err, sizeof err), 0); /* blocked for ever before */
    ck_assert_double_lt(procs_now() - t0, 2);
    ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
    ttmp_remove();
}
END_TEST

START_TEST(t_bpe_merges_files) {
    ttmp_make();
    write_vocab();
    char err[512];
    write_text("merges.txt", "", 0);
    ck_assert_int_ne(load_bpe(err, sizeof err), 0);
    ck_assert_msg(strstr(err, "empty"), "%s", err);

    write_text("merges.txt", "#version: 0.2\n", 14); /* byte-level: no merge, a real use */
    ck_assert_int_eq(load_bpe(err, sizeof err), 0);

    static const char nul[] = "#version: 0.2\n\xc4\xa0 t\n\xc4\xa0\0t a\n";
    write_text("merges.txt", nul, sizeof nul - 1);
    ck_assert_int_ne(load_bpe(err, sizeof err), 0);
    ck_assert_msg(strstr(err, ":3: a NUL byte"), "%s", err);

    static const char esc[] = "#version: 0.2\n\x1b[31m red\n";
    write_text("merges.txt", esc, sizeof esc - 1);
    ck_assert_int_ne(load_bpe(err, sizeof err), 0);
    for (const char *c = err; *c; c++) ck_assert_msg((unsigned char)*c >= ' ', "a control byte in: %s", err);
    ttmp_remove();
}
END_TEST

/* The resident memory of this process, bytes. */
static double rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* 20 MB of newlines and no merge: the table had a slot pair per line (a
 * gigabyte); now it is sized by the merges. */
START_TEST(t_bpe_table_sized_by_merges) {
    ttmp_make();
    write_vocab();
    size_t n = 20u << 20;
    char *text = malloc(n);
    ck_assert_ptr_nonnull(text);
    memcpy(text, "#version: 0.2\n", 14);
    memset(text + 14, '\n', n - 14);
    write_text("merges.txt", text, n);
    free(text);
    double before = rss();
    api_bpe *b = NULL;
    char err[512];
    ck_assert_int_eq(api_bpe_load(ttmp_dir(), &b, err, sizeof err), 0);
    double grew = rss() - before;
    api_bpe_free(b);
    ck_assert_msg(grew < 64.0 * (1 << 20), "loading took %.0f MiB", grew / (1 << 20));
    ttmp_remove();
}
END_TEST

/* ==== Checkpoints ======================================================== */

static int load_model(const char *file, char *why, size_t size) {
    char spec[600];
    snprintf(spec, sizeof spec, "m=%.590s", file);
    api_models *m = NULL;
    int rc = api_models_load(&m, spec, why, size);
    api_models_free(m);
    return rc;
}

START_TEST(t_checkpoint_fifo_refused) {
    ttmp_make();
    char p[128], why[768];
    ttmp_path(p, sizeof p, "model.safetensors");
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    double t0 = procs_now();
    ck_assert_int_ne(load_model(p, why, sizeof why), 0);
    ck_assert_double_lt(procs_now() - t0, 2);
    ck_assert_msg(strstr(why, "not a regular file"), "%s", why);
    ttmp_remove();
}
END_TEST

static void drop_blocks(json_t *hdr, void *arg) {
    (void)arg;
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(hdr, tmp, key, v) if (strncmp(key, "h.", 2) == 0) json_object_del(hdr, key);
}

/* The golden checkpoint's lm_head.weight as I32, or as [C][V]: the same
 * bytes either way. */
static void head_as(json_t *hdr, void *arg) {
    json_t *head = json_object_get(hdr, "lm_head.weight"), *shape = json_object_get(head, "shape");
    if (strcmp(arg, "I32") == 0) {
        json_object_set_new(head, "dtype", json_string("I32"));
        return;
    }
    json_int_t v = json_integer_value(json_array_get(shape, 0)), c = json_integer_value(json_array_get(shape, 1));
    json_array_set_new(shape, 0, json_integer(c)); /* transposed: [C][V] */
    json_array_set_new(shape, 1, json_integer(v));
}

START_TEST(t_checkpoint_messages) {
    ttmp_make();
    char src[128], dst[128], why[768];
    ttmp_path(src, sizeof src, "random.safetensors");
    ttmp_path(dst, sizeof dst, "variant.safetensors");
    ck_assert_int_eq(ckf_write_random(src, 64, 16, 2, 32, 2, 7), 0);
    ck_assert_int_eq(load_model(src, why, sizeof why), 0);

    ck_assert_int_eq(ckf_variant(src, dst, drop_blocks, NULL, 1), 0);
    ck_assert_int_ne(load_model(dst, why, sizeof why), 0); /* a 0-layer GPT-2 before */
    ck_assert_msg(strstr(why, "no transformer block"), "%s", why);

    ck_assert_int_eq(ckf_variant(src, dst, NULL, NULL, 0), 0);
    ck_assert_int_eq(ckf_patch_f32(dst, "h.0.mlp.c_fc.weight", 5, 0.0f / 0.0f), 0);
    ck_assert_int_ne(load_model(dst, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "h.0.mlp.c_fc.weight") && strstr(why, "NaN"), "%s", why);

    char golden[512]; /* PyTorch's file, with lm_head.weight (equal to wte.weight) */
    ck_assert_ptr_nonnull(ckf_golden(golden, sizeof golden, "tiny_f32.safetensors"));
    ck_assert_int_eq(load_model(golden, why, sizeof why), 0);
    ck_assert_int_eq(ckf_variant(golden, dst, head_as, "I32", 0), 0);
    ck_assert_int_ne(load_model(dst, why, sizeof why), 0); /* "differs from wte.weight" before */
    ck_assert_msg(strstr(why, "lm_head.weight is I32"), "%s", why);
    ck_assert_int_eq(ckf_variant(golden, dst, head_as, "shape", 0), 0);
    ck_assert_int_ne(load_model(dst, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "lm_head.weight is [") && strstr(why, "], wte.weight ["), "%s", why);
    ttmp_remove();
}
END_TEST

/* ==== Numbers ============================================================ */

/* api_handle: the status, and the error code of a JSON error reply. */
static int handle(const char *body, char *code, size_t size, char *msg, size_t msize) {
    api_reply rep;
    api_handle(API_EP_SIMPLE, body, strlen(body), NULL, &rep);
    int status = rep.status;
    code[0] = msg[0] = '\0';
    if (status != 200) {
        json_t *j = json_loadb(rep.body.data, rep.body.len, 0, NULL);
        json_t *e = json_object_get(j, "error");
        snprintf(code, size, "%s", json_string_value(json_object_get(e, "code")));
        snprintf(msg, msize, "%s", json_string_value(json_object_get(e, "message")));
        json_decref(j);
    }
    api_reply_free(&rep);
    return status;
}

/* float32's largest value as the server prints it (3.4028235e38) is read as
 * itself; it was refused as "beyond the float32 range", which the next
 * decimal up is. (Squared in the scores it then overflows: a result error.) */
START_TEST(t_float32_max_accepted) {
    char code[64], msg[512];
    ck_assert_int_eq(handle("{\"inputs\": [[3.4028235e38, -3.4028235e38]]}", code, sizeof code,
                            msg, sizeof msg), 400);
    ck_assert_msg(strstr(msg, "overflowed") && !strstr(msg, "beyond the float32 range"), "%s", msg);
    ck_assert_int_eq(handle("{\"inputs\": [[3.4028236e38, 0]]}", code, sizeof code, msg, sizeof msg),
                     400);
    ck_assert_msg(strstr(msg, "beyond the float32 range"), "%s", msg);
    ck_assert_int_eq(handle("{\"inputs\": [[1e18, 2]]}", code, sizeof code, msg, sizeof msg), 200);
}
END_TEST

/* A float16 reply of a context of 1e5: refused (it was sent as infinity);
 * 6e4 fits. Base64 in JSON and safetensors alike. */
START_TEST(t_float16_beyond_refused) {
    static const char *const formats[] = {"base64", "safetensors"};
    for (int i = 0; i < 2; i++) {
        char body[256], code[64], msg[512];
        snprintf(body, sizeof body, "{\"inputs\": [[100000.0, 1.0]], \"return\": [\"context\"], "
                 "\"output_format\": \"%s\", \"dtype\": \"float16\"}", formats[i]);
        ck_assert_int_eq(handle(body, code, sizeof code, msg, sizeof msg), 400);
        ck_assert_str_eq(code, "non_finite");
        ck_assert_msg(strstr(msg, "float16"), "%s", msg);
        snprintf(body, sizeof body, "{\"inputs\": [[60000.0, 1.0]], \"return\": [\"context\"], "
                 "\"output_format\": \"%s\", \"dtype\": \"float16\"}", formats[i]);
        ck_assert_int_eq(handle(body, code, sizeof code, msg, sizeof msg), 200);
    }
}
END_TEST

/* ==== gzip bodies ========================================================= */

static size_t gz(const char *text, unsigned char *out, size_t cap) {
    z_stream z = {0};
    ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)text;
    z.avail_in = (unsigned)strlen(text);
    z.next_out = out;
    z.avail_out = (unsigned)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    deflateEnd(&z);
    return n;
}

/* Cut short, or with bytes after the member: invalid (400 invalid_gzip);
 * before, the broken trailer's size made it 413 "inflates to 3603245204
 * bytes". A member that really inflates past the limit stays too large. */
START_TEST(t_gzip_truncated_or_trailing) {
    char *text = malloc(200001);
    ck_assert_ptr_nonnull(text);
    for (int i = 0; i < 200000; i++) text[i] = (char)('a' + (i * 7919) % 26);
    text[200000] = '\0';
    unsigned char z[300000];
    size_t n = gz(text, z, sizeof z);
    char *out, why[128];
    size_t len;
    ck_assert_int_eq(api_gunzip(z, n, 1 << 20, &out, &len, why), API_GZ_OK);
    free(out);
    ck_assert_int_eq(api_gunzip(z, n / 2, 1 << 20, &out, &len, why), API_GZ_INVALID);
    memcpy(z + n, "garbage!", 8);
    ck_assert_int_eq(api_gunzip(z, n + 8, 1 << 20, &out, &len, why), API_GZ_INVALID);
    ck_assert_int_eq(api_gunzip(z, n, 100000, &out, &len, why), API_GZ_TOO_LARGE);
    free(text);
}
END_TEST

static Suite *loaders_suite(void) {
    Suite *s = suite_create("api_loaders");
    TCase *tc = tcase_with(s, "loaders", 60, (const TTest *[]){t_bpe_merges_files,
        t_bpe_table_sized_by_merges, t_checkpoint_fifo_refused, t_checkpoint_messages,
        t_float32_max_accepted, t_float16_beyond_refused, t_gzip_truncated_or_trailing, NULL});
    tcase_add_loop_test(tc, t_bpe_fifo_refused, 0, 2);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {loaders_suite}};
