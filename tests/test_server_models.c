/* test_server_models.c - checkpoints loaded at start against the real
 * attention-server: --model NAME=FILE (and ATTN_MODELS) loads the golden
 * checkpoints written by PyTorch, --model NAME=DIR a model folder with its
 * tokenizer, GET /models lists them, POST /model/gpt2
 * {"model": NAME} gives PyTorch's logits over HTTP, unknown names are 400s
 * naming the field, a bad file stops the server before it listens (exit 2,
 * the problem on stderr), so does a file cut short while it loads (not
 * SIGBUS), and the parameters are held once: requests do not
 * copy them (the peak resident memory over many requests stays far below
 * the size of the model); without --model the demo model built into the
 * binary is served, the very model of models/shakespeare/ on disk. */
#include <cblas.h> /* openblas_set_num_threads */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "support/api_call.h"
#include "support/check_main.h"
#include "support/ckpt_files.h"
#include "support/files.h"
#include "support/procs.h"
#include "support/server_harness.h"

static srvt_server srv;

static void teardown(void) { srvt_release(&srv); }

static void stop(void) {
    int rc = srvt_stop(&srv, 30);
    ck_assert_msg(rc == 0, "server exit status %d, log:\n%s", rc, srv.log ? srv.log : "");
    srvt_release(&srv);
}

static json_t *post_json(const char *path, const char *body, long want) {
    srvt_reply r;
    ck_assert_int_eq(srvt_post(&srv, path, body, &r), 0);
    ck_assert_msg(r.status == want, "status %ld, expected %ld: %.400s", r.status, want, r.body);
    json_t *j = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    srvt_reply_free(&r);
    return j;
}

START_TEST(load_list_and_run) {
    char f32[512], f16[512], a[600], b[600];
    snprintf(a, sizeof a, "tiny=%s", ckf_golden(f32, sizeof f32, "tiny_f32.safetensors"));
    snprintf(b, sizeof b, "--model=half=%s:heads=4", ckf_golden(f16, sizeof f16, "tiny_f16.safetensors"));
    const char *args[] = {"--model", a, b, "--threads", "2", NULL};
    ck_assert_msg(srvt_start(&srv, args, NULL) == 0, "cannot start %s", srvt_binary());

    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *list = json_loads(r.body, 0, NULL);
    srvt_reply_free(&r);
    json_t *m = json_object_get(list, "models");
    ck_assert_uint_eq(json_array_size(m), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 0), "name")), "tiny");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 1), "name")), "half");
    json_t *cfg = json_object_get(json_array_get(m, 0), "config");
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "vocab_size")), 61);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_layer")), 2);
    json_decref(list);

    /* PyTorch's logits over HTTP */
    char ref_path[512];
    json_t *ref = json_load_file(ckf_golden(ref_path, sizeof ref_path, "tiny_f32.json"), 0, NULL);
    ck_assert_ptr_nonnull(ref);
    json_t *rq = json_pack("{s:s, s:O, s:[s]}", "model", "tiny", "idx", json_object_get(ref, "idx"),
                           "return", "logits");
    char *body = json_dumps(rq, 0);
    json_t *reply = post_json("/model/gpt2", body, 200);
    json_t *got = json_object_get(reply, "logits"), *want = json_object_get(ref, "logits");
    size_t at = 0;
    for (size_t bi = 0; bi < json_array_size(got); bi++)
        for (size_t t = 0; t < json_array_size(json_array_get(got, bi)); t++) {
            json_t *row = json_array_get(json_array_get(got, bi), t);
            for (size_t v = 0; v < json_array_size(row); v++, at++) {
                double x = json_number_value(json_array_get(row, v));
                double y = json_number_value(json_array_get(want, at));
                ck_assert_msg(fabs(x - y) <= 1e-4 + 1e-3 * fabs(y), "logit %zu: %.9g, PyTorch %.9g",
                              at, x, y);
            }
        }
    ck_assert_uint_eq(at, json_array_size(want));
    free(body);
    json_decref(rq);
    json_decref(reply);
    json_decref(ref);

    /* errors name the field */
    ck_assert_int_eq(srvt_post(&srv, "/model/gpt2", "{\"model\":\"gpt2-xl\",\"idx\":[1]}", &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 400, "invalid_argument"), 0);
    ck_assert_msg(strstr(r.body, "\"field\":\"model\"") && strstr(r.body, "\\\"tiny\\\", \\\"half\\\""),
                  "%s", r.body);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_post(&srv, "/model/gpt2", "{\"model\":\"half\",\"idx\":[40]}", &r), 0);
    ck_assert_int_eq(srvt_check_error(&r, 400, "invalid_argument"), 0);
    ck_assert_msg(strstr(r.body, "\"field\":\"idx[0]\""), "%s", r.body);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_post(&srv, "/models", "{}", &r), 0);
    ck_assert_int_eq(r.status, 405);
    srvt_reply_free(&r);
    stop();
}
END_TEST

START_TEST(from_environment) {
    char f32[512], f16[512], env[1200];
    snprintf(env, sizeof env, "ATTN_MODELS=one=%s,two=%s:heads=4",
             ckf_golden(f32, sizeof f32, "tiny_f32.safetensors"),
             ckf_golden(f16, sizeof f16, "tiny_f16.safetensors"));
    const char *envs[] = {env, NULL};
    ck_assert_msg(srvt_start(&srv, NULL, envs) == 0, "cannot start %s", srvt_binary());
    json_t *j = post_json("/model/gpt2", "{\"model\":\"two\",\"idx\":[1,2],\"return\":[\"next_token\"]}", 200);
    ck_assert(json_is_integer(json_object_get(j, "next_token")));
    json_decref(j);
    stop();
}
END_TEST

/* A bad file stops the server before it listens: exit 2, the file and the
 * problem on stderr. */
START_TEST(bad_file_stops_the_server) {
    char dir[] = "/tmp/ckpt-srv-XXXXXX", p[256], src[512], spec[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    size_t len;
    char *good = tfile_read(ckf_golden(src, sizeof src, "tiny_f32.safetensors"), &len);
    ck_assert_ptr_nonnull(good);
    snprintf(p, sizeof p, "%s/cut.safetensors", dir);
    ck_assert_int_eq(ckf_write(p, good, len / 2), 0);
    snprintf(spec, sizeof spec, "gpt2=%s", p);
    char port[16];
    snprintf(port, sizeof port, "%d", procs_free_port());
    const char *args[] = {"--port", port, "--model", spec, NULL};
    char *err = NULL;
    ck_assert_int_eq(srvt_run(args, NULL, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "--model gpt2=") && strstr(err, "cut.safetensors") &&
                      strstr(err, "the file is truncated"), "stderr: %s", err ? err : "");
    ck_assert_msg(!strstr(err, "listening"), "it listened: %s", err);
    free(err);
    /* a spec without a file, and a missing file */
    const char *args2[] = {"--port", port, "--model", "gpt2", NULL};
    ck_assert_int_eq(srvt_run(args2, NULL, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "expected NAME=DIR or NAME=FILE.safetensors"), "stderr: %s", err ? err : "");
    free(err);
    const char *args3[] = {"--port", port, "--model", "gpt2=/nonexistent.safetensors", NULL};
    ck_assert_int_eq(srvt_run(args3, NULL, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "cannot open"), "stderr: %s", err ? err : "");
    free(err);
    unlink(p);
    rmdir(dir);
    free(good);
}
END_TEST

/* 1 when the file at path is mapped in process pid (its /proc/PID/maps). */
static int maps_file(pid_t pid, const char *path) {
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    char *text = tfile_read(maps, NULL);
    int found = text && strstr(text, path) != NULL;
    free(text);
    return found;
}

/* A model file cut short while the server reads it (the moment it is
 * mapped): the server stops with exit 2 naming the file, as for any bad
 * file, instead of dying of SIGBUS (exit 135) when it touches a page past
 * the new end. The file: 270 MB of zeros in GPT-2's layout, a hole on disk,
 * so that the copy outlasts the test's reaction by far. */
START_TEST(file_cut_while_loading) {
    char dir[] = "/tmp/ckpt-cut-XXXXXX", p[256], spec[300], port[16], log[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/big.safetensors", dir);
    ck_assert_int_eq(ckf_write_zeros(p, 16384, 1024, 4, 1024, 16), 0);
    snprintf(spec, sizeof spec, "big=%s", p);
    snprintf(port, sizeof port, "%d", procs_free_port());
    snprintf(log, sizeof log, "%s/stderr", dir);
    const char *argv[] = {srvt_binary(), "--port", port, "--model", spec, NULL};
    procs_io io = {.err = log};
    pid_t pid = procs_spawn(argv, &io);
    ck_assert_int_gt(pid, 0);
    int mapped = 0;
    for (int i = 0; i < 20000 && !mapped && !procs_exited(pid); i++) {
        mapped = maps_file(pid, p);
        if (!mapped) usleep(500);
    }
    ck_assert_msg(mapped, "the server never mapped %s", p);
    ck_assert_int_eq(truncate(p, 4096), 0);
    int status = 0;
    ck_assert_msg(procs_wait(pid, 60, &status), "the server went on after the cut");
    char *err = tfile_read(log, NULL);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2,
                  "%s %d, stderr: %s", WIFSIGNALED(status) ? "killed by signal" : "exit status",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err ? err : "");
    ck_assert_msg(err && strstr(err, "--model big=") && strstr(err, p) && strstr(err, "changed while"),
                  "stderr: %s", err ? err : "");
    ck_assert_msg(!strstr(err, "listening"), "it listened: %s", err);
    free(err);
    unlink(p);
    unlink(log);
    rmdir(dir);
}
END_TEST

/* --model NAME=DIR: a Hugging Face folder with its tokenizer answers text
 * without a tokenizer field, with next_token_text; GET /models names its
 * tokenizer; a folder with a fault stops the server naming the file. */
START_TEST(folder) {
    char dir[512], spec[600];
    snprintf(spec, sizeof spec, "gpt2=%s", ckf_golden(dir, sizeof dir, "folder_gpt2"));
    const char *args[] = {"--model", spec, NULL};
    ck_assert_msg(srvt_start(&srv, args, NULL) == 0, "cannot start %s", srvt_binary());
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    ck_assert_msg(strstr(r.body, "\"tokenizer\":{\"name\":\"gpt2\",\"tokens\":257}"), "%s", r.body);
    srvt_reply_free(&r);
    json_t *j = post_json("/model/gpt2", "{\"model\":\"gpt2\",\"text\":\"the cat\"}", 200);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(j, "idx"), 0)), 't');
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "tokens"), 3)), " ");
    json_t *next = json_object_get(j, "next_token"), *text = json_object_get(j, "next_token_text");
    /* the model's 300 ids outnumber the tokenizer's 257: null past them */
    ck_assert(json_is_integer(next) && (json_integer_value(next) < 257 ? json_is_string(text) : json_is_null(text)));
    if (json_integer_value(next) < 128 && json_integer_value(next) >= 32)
        ck_assert_int_eq(json_string_value(text)[0], (char)json_integer_value(next));
    json_decref(j);
    stop();
    /* config.json disagrees with the tensors: exit 2, the file and the fault */
    char tmp[] = "/tmp/folder-srv-XXXXXX", cmd[1400];
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s/m' && sed -i 's/\"n_layer\": 2/\"n_layer\": 4/' '%s/m/config.json'",
             dir, tmp, tmp);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(spec, sizeof spec, "gpt2=%s/m", tmp);
    char port[16], *err = NULL;
    snprintf(port, sizeof port, "%d", procs_free_port());
    const char *bad[] = {"--port", port, "--model", spec, NULL};
    ck_assert_int_eq(srvt_run(bad, NULL, NULL, &err), 2);
    ck_assert_msg(err && strstr(err, "/m/model.safetensors: config.json says n_layer 4, the tensors 2"),
                  "stderr: %s", err ? err : "");
    free(err);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* No --model: the demo model "shakespeare" built into the binary, with its
 * tokenizer, answering as the folder it was embedded from does when loaded
 * from disk; --demo-model off (or ATTN_DEMO_MODEL=off) leaves it out. */
START_TEST(demo_model) {
    ck_assert_msg(srvt_start(&srv, NULL, NULL) == 0, "cannot start %s", srvt_binary());
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    json_t *list = json_loads(r.body, 0, NULL), *models = json_object_get(list, "models");
    srvt_reply_free(&r);
    ck_assert_uint_eq(json_array_size(models), 1);
    json_t *m = json_array_get(models, 0), *cfg = json_object_get(m, "config");
    ck_assert_str_eq(json_string_value(json_object_get(m, "name")), "shakespeare");
    ck_assert(json_is_true(json_object_get(m, "builtin")));
    ck_assert_str_eq(json_string_value(json_object_get(m, "folder")), "models/shakespeare");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(m, "tokenizer"), "tokens")), 256);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_layer")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(cfg, "n_head")), 4);
    json_decref(list);
    const char *body = "{\"model\":\"shakespeare\",\"text\":\"ROMEO:\\nBut soft, what light\","
                       "\"return\":[\"tokens\",\"logits\",\"attn_weights\"]}";
    json_t *served = post_json("/model/gpt2", body, 200);
    /* the model folder's tokenizer serves OpenAI's completions and /tokenize */
    json_t *c = post_json("/v1/completions", "{\"model\":\"shakespeare\",\"prompt\":\"ROMEO:\","
                          "\"max_tokens\":5,\"temperature\":0}", 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c, "usage"), "prompt_tokens")), 6);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(json_array_get(json_object_get(c, "choices"), 0),
                                                               "text"))), 5);
    json_decref(c);
    c = post_json("/tokenize", "{\"content\":\"hi\"}", 200);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(c, "tokens"), 1)), 'i');
    json_decref(c);
    stop();

    char dir[512], spec[600], why[512];
    tfile_path(dir, sizeof dir, "models/shakespeare");
    snprintf(spec, sizeof spec, "shakespeare=%s", dir);
    api_models *disk = NULL;
    ck_assert_msg(api_models_load(&disk, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.models = disk};
    openblas_set_num_threads(1); /* as the server runs its products */
    json_t *local = tapi_call(API_EP_MODEL_GPT2, body, &lim, 200);
    ck_assert_int_eq(json_array_size(json_object_get(served, "tokens")), 27); /* a token a byte */
    for (const char *const *k = (const char *const[]){"tokens", "logits", "attn_weights", NULL}; *k; k++)
        ck_assert_msg(json_equal(json_object_get(served, *k), json_object_get(local, *k)), "%s differs", *k);
    json_decref(local);
    json_decref(served);
    api_models_free(disk);

    const char *off[] = {"--demo-model", "off", NULL};
    ck_assert_msg(srvt_start(&srv, off, NULL) == 0, "cannot start %s", srvt_binary());
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    ck_assert_str_eq(r.body, "{\"models\":[],\"tokenizers\":[],\"default_tokenizer\":null}");
    srvt_reply_free(&r);
    json_t *j = post_json("/model/gpt2", body, 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "field")), "model");
    json_decref(j);
    stop();
    const char *env[] = {"ATTN_DEMO_MODEL=off", NULL};
    ck_assert_msg(srvt_start(&srv, NULL, env) == 0, "cannot start %s", srvt_binary());
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    ck_assert_str_eq(r.body, "{\"models\":[],\"tokenizers\":[],\"default_tokenizer\":null}");
    srvt_reply_free(&r);
    stop();
}
END_TEST

/* One rule picks the tokenizer of every endpoint: "tokenizer" names one;
 * else the request's model's own; else the server's default, the first
 * --tokenizer or else the first model folder's. A plain server with
 * --tokenizer (the demo model's loaded too) tokenizes with the one given,
 * and a seed-built model reads text with it; with only --model, a seed-built
 * model reads text with that folder's (both were 400s before). */
START_TEST(tokenizer_rule) {
    char dir[512], spec[600];
    ckf_golden(dir, sizeof dir, "folder_gpt2");
    snprintf(spec, sizeof spec, "gpt2=%s", dir);
    const char *args[] = {"--tokenizer", spec, NULL};
    ck_assert_msg(srvt_start(&srv, args, NULL) == 0, "cannot start %s", srvt_binary());
    srvt_reply r;
    ck_assert_int_eq(srvt_get(&srv, "/models", &r), 0);
    ck_assert_msg(strstr(r.body, "\"tokenizers\":[{\"name\":\"gpt2\",\"tokens\":257},"
                                 "{\"name\":\"shakespeare\",\"tokens\":256}],"
                                 "\"default_tokenizer\":\"gpt2\"}"), "%s", r.body);
    srvt_reply_free(&r);
    /* folder_gpt2's one merge (Ġ t) makes " t" one token (256); the demo's bytes two */
    json_t *j = post_json("/tokenize", "{\"content\":\" t\"}", 200);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "tokens")), 1);
    json_decref(j);
    j = post_json("/tokenize", "{\"content\":\" t\",\"model\":\"shakespeare\"}", 200);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "tokens")), 2);
    json_decref(j);
    j = post_json("/detokenize", "{\"tokens\":[116,104]}", 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "content")), "th");
    json_decref(j);
    const char *seed = "{\"vocab_size\":300,\"block_size\":8,\"n_layer\":1,\"n_head\":1,"
                       "\"n_embd\":4,\"init\":{\"seed\":0},\"text\":\" t\",\"return\":[\"idx\"]}";
    j = post_json("/model", seed, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "idx")), 1);
    json_decref(j);
    stop();
    const char *only_model[] = {"--model", spec, NULL};
    ck_assert_msg(srvt_start(&srv, only_model, NULL) == 0, "cannot start %s", srvt_binary());
    j = post_json("/model/gpt2", seed, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "idx")), 1);
    json_decref(j);
    stop();
    /* no tokenizer at all: a 400 on the field that says how to load one */
    const char *none[] = {"--demo-model", "off", NULL};
    ck_assert_msg(srvt_start(&srv, none, NULL) == 0, "cannot start %s", srvt_binary());
    j = post_json("/model", seed, 400);
    json_t *err = json_object_get(j, "error");
    ck_assert_str_eq(json_string_value(json_object_get(err, "field")), "text");
    ck_assert_msg(strstr(json_string_value(json_object_get(err, "message")), "--tokenizer NAME=DIR"),
                  "%s", json_string_value(json_object_get(err, "message")));
    json_decref(j);
    stop();
}
END_TEST

/* The parameters are held once, read in place by every request: with a
 * model of 64 MiB and requests that need a few kB each, the peak resident
 * memory over many requests on every worker grows by much less than the
 * model (a copy per request would add 64 MiB at least; the margin of 16 MiB
 * covers AddressSanitizer's quarantine in `make asan`). */
START_TEST(parameters_are_not_copied) {
    char dir[] = "/tmp/ckpt-mem-XXXXXX", p[256], spec[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/wide.safetensors", dir);
    /* wte 65536 x 256 floats = 64 MiB */
    ck_assert_int_eq(ckf_write_random(p, 65536, 16, 1, 256, 4, 7), 0);
    snprintf(spec, sizeof spec, "wide=%s", p);
    const char *args[] = {"--model", spec, "--threads", "2", NULL};
    ck_assert_msg(srvt_start(&srv, args, NULL) == 0, "cannot start %s", srvt_binary());
    const char *body = "{\"model\":\"wide\",\"idx\":[[1,2,3],[4,5,6]],\"return\":[\"next_token\"]}";
    for (int i = 0; i < 4; i++) json_decref(post_json("/model/gpt2", body, 200)); /* warm up */

    /* the file's mapping was released after the copy into core's layout */
    char maps[64];
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)srv.pid);
    char *text = tfile_read(maps, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(!strstr(text, "wide.safetensors"), "the file is still mapped");
    free(text);

    /* reset the peak ("5" > clear_refs), then many requests */
    char clear[64];
    snprintf(clear, sizeof clear, "/proc/%d/clear_refs", (int)srv.pid);
    FILE *f = fopen(clear, "w");
    ck_assert_ptr_nonnull(f);
    fputs("5", f);
    ck_assert_int_eq(fclose(f), 0);
    /* the peak just after the reset: the resident memory then (an idle
     * thread may have touched a page since, so not compared for equality) */
    long before = srvt_status_kb(srv.pid, "VmHWM");
    ck_assert_msg(before <= srvt_status_kb(srv.pid, "VmRSS") + 1024, "the peak was not reset");
    for (int i = 0; i < 16; i++) json_decref(post_json("/model/gpt2", body, 200));
    long peak = srvt_status_kb(srv.pid, "VmHWM");
    printf("resident %ld kB after loading a 64 MiB model; peak over 16 requests +%ld kB\n", before,
           peak - before);
    ck_assert_msg(before > 64 * 1024, "RSS %ld kB: the model is not resident?", before);
    ck_assert_msg(peak - before < 16 * 1024, "peak grew by %ld kB over 16 requests", peak - before);
    stop();
    unlink(p);
    rmdir(dir);
}
END_TEST

static Suite *models_suite(void) {
    const TTest *tests[] = {load_list_and_run, from_environment, bad_file_stops_the_server,
                            file_cut_while_loading, folder, parameters_are_not_copied, demo_model,
                            tokenizer_rule, NULL};
    return suite_with("server_models", "models", 60, tests, NULL, teardown);
}

const test_program TEST_PROGRAM = {.suites = {models_suite}};
