/* test_api_folders.c - models loaded with --model NAME=DIR and the book's
 * GPTModel as a safetensors file (api/model/folder.c, ckpt_book.c): the
 * golden folders and file of tests/golden/ckpt/ (written by
 * tests/golden/generate_checkpoint.py with PyTorch) load and give PyTorch's
 * logits through POST /model/gpt2; a folder's tokenizer serves "text"
 * without a "tokenizer" field (and next_token_text); GET /models lists the
 * tokenizer; every broken folder is refused naming the file and the fault.
 *
 *   folder_gpt2    config.json (GPT2Config, n_head 3: not n_embd / 64),
 *                  model.safetensors, vocab.json + merges.txt
 *   folder_shards  the same with two shards and model.safetensors.index.json,
 *                  encoder.json + vocab.bpe
 *   folder_book    the book's GPT_CONFIG dict as config.json, GPTModel's
 *                  names, the mask buffers left out
 *   book_f32       GPTModel's state_dict as save_file writes it (masks in),
 *                  NAME=FILE:heads=2 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "tests/support/check_main.h"
#include "support/api_call.h"
#include "tests/support/ckpt_files.h"
#include "tests/support/files.h"
#include "tests/support/tmpdir.h"

#include <cblas.h> /* openblas_set_num_threads */

/* The reply's config holds the reference's (the family's names). */
static void expect_config(const json_t *reply, const json_t *ref) {
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(ref, "config"), key, v) {
        json_t *got = json_object_get(json_object_get(reply, "config"), key);
        ck_assert_msg(json_is_number(v) ? json_number_value(got) == json_number_value(v) : json_equal(got, v),
                      "config.%s", key);
    }
}

/* {"model": NAME, "text": ...}: the folder's tokenizer, its ids, PyTorch's logits. */
static void check_text(const api_models *models, const char *name, const char *module) {
    json_t *ref = ckf_golden_ref(name);
    json_t *rq = json_pack("{s:s, s:O, s:[ssss], s:s}", "model", name, "text", json_object_get(ref, "text"),
                           "return", "idx", "tokens", "logits", "next_token", "output_format", "flat");
    char *body = json_dumps(rq, 0);
    json_t *reply = ckf_call(models, body, 200);
    ck_assert_str_eq(json_string_value(json_object_get(reply, "module")), module);
    ck_assert_msg(json_equal(json_object_get(reply, "idx"), json_object_get(ref, "idx")), "%s: idx", name);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(reply, "tokens"), 1)), "h");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(reply, "tokens"), 14)), " t"); /* merged */
    ck_assert(json_is_string(json_object_get(reply, "next_token_text")));
    expect_config(reply, ref);
    ckf_expect_logits(reply, ref, name, 1000);
    free(body);
    json_decref(rq);
    json_decref(reply);
    json_decref(ref);
}

START_TEST(folders_answer_text) {
    api_models *models = NULL;
    ckf_load_golden(&models, "folder_gpt2", "folder_gpt2", "");
    ckf_load_golden(&models, "folder_shards", "folder_shards", "");
    ckf_load_golden(&models, "folder_book", "folder_book", "");
    check_text(models, "folder_gpt2", "GPT2");
    check_text(models, "folder_shards", "GPT2");
    check_text(models, "folder_book", "GPTModel");
    /* GET /models: each with its tokenizer, config.json's n_head, the shards */
    api_buf b = {0};
    ck_assert_int_eq(api_models_json(&(api_limits){.models = models}, &b), 0);
    json_t *root = json_loads(b.data, 0, NULL), *list = json_object_get(root, "models");
    api_buf_free(&b);
    json_t *g = json_array_get(list, 0), *s = json_array_get(list, 1), *k = json_array_get(list, 2);
    ck_assert_str_eq(json_string_value(json_object_get(g, "folder")), "folder_gpt2");
    ck_assert_str_eq(json_string_value(json_object_get(g, "file")), "model.safetensors");
    ck_assert_str_eq(json_string_value(json_object_get(g, "n_head_from")), "config.json");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(g, "config"), "n_head")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(g, "tokenizer"), "tokens")), 257);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(g, "tokenizer"), "name")), "folder_gpt2");
    ck_assert_int_eq(json_integer_value(json_object_get(s, "shards")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(s, "file")), "model.safetensors.index.json");
    ck_assert_str_eq(json_string_value(json_object_get(k, "module")), "GPTModel");
    ck_assert(json_is_true(json_object_get(json_object_get(k, "config"), "qkv_bias")));
    ck_assert_str_eq(json_string_value(json_object_get(k, "lm_head")), "out_head.weight, untied");
    /* every tokenizer a request may name: the three folders' */
    json_t *toks = json_object_get(root, "tokenizers");
    ck_assert_uint_eq(json_array_size(toks), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(toks, 2), "name")), "folder_book");
    json_decref(root);
    /* a folder's tokenizer by name, for a model built from a seed; and a
     * model without a tokenizer of its own takes "tokenizer" */
    json_t *r = ckf_call(models, "{\"vocab_size\":300,\"block_size\":8,\"n_layer\":1,\"n_head\":1,\"n_embd\":4,"
                             "\"init\":{\"seed\":1},\"text\":\"at the\",\"tokenizer\":\"folder_book\","
                             "\"return\":[\"idx\"]}", 200);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "idx"), 2)), 256);
    json_decref(r);
    /* three tokenizers loaded, none named, no model: the server's default,
     * the first loaded (folder_gpt2's, whose one merge is "Ġ t"), for text
     * and tokens; it adds no next_token_text to ids, a named one does */
    const char *seed = "{\"vocab_size\":300,\"block_size\":8,\"n_layer\":1,\"n_head\":1,\"n_embd\":4,"
                       "\"init\":{\"seed\":1},";
    char body[512];
    snprintf(body, sizeof body, "%s\"text\":\"a t\",\"return\":[\"idx\",\"tokens\"]}", seed);
    r = ckf_call(models, body, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r, "idx")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "tokens"), 1)), " t");
    json_decref(r);
    snprintf(body, sizeof body, "%s\"idx\":[65,66]}", seed);
    r = ckf_call(models, body, 200);
    ck_assert_ptr_null(json_object_get(r, "next_token_text"));
    json_decref(r);
    snprintf(body, sizeof body, "%s\"idx\":[65,66],\"tokenizer\":\"folder_gpt2\"}", seed);
    r = ckf_call(models, body, 200);
    ck_assert_ptr_nonnull(json_object_get(r, "next_token_text"));
    json_decref(r);
    api_models_free(models);
}
END_TEST

/* The book's GPTModel saved as one safetensors file, masks in. */
START_TEST(book_file) {
    api_models *models = NULL;
    json_t *ref = ckf_golden_ref("book_f32");
    ckf_load_golden(&models, "book_f32.safetensors", "book_f32.safetensors", ":heads=2");
    json_t *rq = json_pack("{s:s, s:O, s:[s], s:s}", "model", "book_f32.safetensors", "idx",
                           json_object_get(ref, "idx"), "return", "logits", "output_format", "flat");
    char *body = json_dumps(rq, 0);
    json_t *reply = ckf_call(models, body, 200);
    ck_assert_str_eq(json_string_value(json_object_get(reply, "module")), "GPTModel");
    expect_config(reply, ref);
    ckf_expect_logits(reply, ref, "book_f32", 1000);
    json_decref(reply);
    /* a GPTModel checkpoint takes GPTModel's module, and no config field of either family */
    reply = ckf_call(models, "{\"model\":\"book_f32.safetensors\",\"module\":\"GPT2\",\"idx\":[1]}", 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(reply, "error"), "field")), "module");
    json_decref(reply);
    reply = ckf_call(models, "{\"model\":\"book_f32.safetensors\",\"context_length\":8,\"idx\":[1]}", 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(reply, "error"), "field")),
                     "context_length");
    json_decref(reply);
    free(body);
    json_decref(rq);
    json_decref(ref);
    api_models_free(models);
}
END_TEST

/* ==== Broken folders ====================================================== */


/* A copy of golden folder name in tmpdir, then the shell command edit run
 * inside it; the refusal must say text. */
static void broken(const char *name, const char *edit, const char *text) {
    char src[512], cmd[2048], spec[300];
    static int n;
    snprintf(cmd, sizeof cmd, "d='%s/f%d' && cp -r '%s' \"$d\" && cd \"$d\" && %s", ttmp_dir(), ++n,
             ckf_golden(src, sizeof src, name), edit);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    snprintf(spec, sizeof spec, "m=%s/f%d", ttmp_dir(), n);
    ckf_expect_refused(spec, text);
}

#define SED_CONFIG(from, to) "sed -i 's/" from "/" to "/' config.json"

START_TEST(broken_folders) {
    broken("folder_gpt2", "rm config.json", "config.json: missing");
    broken("folder_gpt2", "echo '{' > config.json", "config.json: line 2");
    broken("folder_gpt2", "echo '[]' > config.json", "config.json: not a JSON object");
    broken("folder_gpt2", SED_CONFIG("\"n_embd\": 24", "\"n_embd\": 32"), "config.json says n_embd 32, the tensors 24");
    broken("folder_gpt2", SED_CONFIG("\"n_layer\": 2", "\"n_layer\": 3"), "config.json says n_layer 3, the tensors 2");
    broken("folder_gpt2", SED_CONFIG("\"n_positions\": 40", "\"n_positions\": 41"), "n_positions 41, the tensors 40");
    broken("folder_gpt2", SED_CONFIG("\"vocab_size\": 300", "\"vocab_size\": 299"), "vocab_size 299, the tensors 300");
    broken("folder_gpt2", SED_CONFIG("\"n_head\": 3", "\"n_head\": 5"), "n_embd must be divisible by n_head");
    broken("folder_gpt2", SED_CONFIG("  \"n_head\": 3,", ""), "config.json has no \"n_head\"");
    broken("folder_gpt2", SED_CONFIG("gelu_new", "relu"), "activation_function is not gelu_new");
    broken("folder_gpt2", SED_CONFIG("1e-05", "1e-06"), "layer_norm_epsilon is not 1e-5");
    broken("folder_gpt2", SED_CONFIG("\"gpt2\"", "\"bloom\""), "model_type is not one this server runs");
    /* another architecture's config over GPT-2's tensors: refused by their
     * names, before its own sizes (a 7B Llama's) are allocated */
    broken("folder_gpt2", SED_CONFIG("\"gpt2\"", "\"llama\""), "is not part of LlamaForCausalLM's state_dict");
    /* what a row does not compute, set in config.json: refused, not run wrongly */
    broken("folder_gpt2", SED_CONFIG("\"n_head\": 3,", "\"n_head\": 3, \"scale_attn_by_inverse_layer_idx\": true,"),
           "scale_attn_by_inverse_layer_idx is set: GPT2 runs only without it");
    broken("../families/gemma3_tokenizer_f32",
           SED_CONFIG("\"final_logit_softcapping\": null", "\"final_logit_softcapping\": 30.0"),
           "final_logit_softcapping is set: Gemma3ForCausalLM runs only without it");
    broken("../families/gemma3_tokenizer_f32",
           SED_CONFIG("\"use_bidirectional_attention\": false", "\"use_bidirectional_attention\": true"),
           "use_bidirectional_attention is set");
    /* a tokenizer token past the model's rows: only special tokens may be */
    broken("../families/gemma3_tokenizer_f32", "sed -i '67s/\"special\": true/\"special\": false/' tokenizer.json",
           "the tokenizer has 1049 tokens, more than the model's vocab_size 1048 (token 1048 is not a special token)");
    broken("folder_gpt2", "rm merges.txt", "merges.txt: missing beside vocab.json");
    broken("folder_gpt2", "echo x > merges.txt", "merges.txt");
    broken("folder_gpt2", "rm model.safetensors", "no model.safetensors or model.safetensors.index.json");
    broken("folder_gpt2", "mv model.safetensors pytorch_model.bin", "only pytorch_model.bin");
    broken("folder_gpt2", "head -c 5000 model.safetensors > x && mv x model.safetensors",
           "model.safetensors: tensor");
    /* shards: one missing, a tensor the map puts elsewhere or nowhere */
    broken("folder_shards", "rm model-00002-of-00002.safetensors",
           "model.safetensors.index.json: model-00002-of-00002.safetensors: cannot open");
    broken("folder_shards", "sed -i '0,/00001-of/s/00001-of/00002-of/' model.safetensors.index.json",
           "weight_map puts");
    broken("folder_shards", "sed -i '/transformer.wte.weight/d' model.safetensors.index.json",
           "which weight_map puts nowhere");
    broken("folder_shards", "sed -i 's/model-00002-of-00002.safetensors/..\\/x/' model.safetensors.index.json",
           "not a file of the folder");
    broken("folder_shards", "echo '{}' > model.safetensors.index.json", "no \"weight_map\"");
    /* a tensor named twice: once in a shard that exists nowhere (jansson kept the last) */
    broken("folder_shards", "sed -i 's/\"weight_map\": {/\"weight_map\": {\"transformer.wte.weight\": "
           "\"model-00009-of-00009.safetensors\",/' model.safetensors.index.json",
           "duplicate object key");
    /* files that are there but are no regular files: said so, not "missing" */
    broken("folder_gpt2", "rm model.safetensors && ln -s /dev/zero model.safetensors",
           "model.safetensors: not a regular file");
    broken("folder_gpt2", "rm merges.txt && ln -s /dev/null merges.txt", "merges.txt: not a regular file");
    broken("folder_gpt2", "rm config.json && mkfifo config.json", "config.json: not a regular file");
    broken("folder_shards", "rm model.safetensors.index.json && mkfifo model.safetensors.index.json",
           "model.safetensors.index.json: not a regular file");
    broken("folder_shards", "rm vocab.bpe", "vocab.bpe: missing beside encoder.json");
    /* the book's: its config against its tensors */
    broken("folder_book", SED_CONFIG("\"qkv_bias\": true", "\"qkv_bias\": false"),
           "config.json says qkv_bias false, the tensors true");
    broken("folder_book", SED_CONFIG("\"n_heads\": 2", "\"n_heads\": 3"), "emb_dim must be divisible by n_heads");
    broken("folder_book", SED_CONFIG("\"emb_dim\": 20", "\"emb_dim\": 21"), "config.json says emb_dim 21");
    broken("folder_book", SED_CONFIG("\"context_length\": 40,", ""), "config.json has no \"context_length\"");
    broken("folder_book", SED_CONFIG("\"drop_rate\": 0.1", "\"drop_rate\": 2"),
           "drop_rate\" is not a number in [0, 1]");
    /* a folder takes no :heads= (its config.json says n_head) */
    char path[512], spec[700];
    snprintf(spec, sizeof spec, "m=%s:heads=2", ckf_golden(path, sizeof path, "folder_gpt2"));
    ckf_expect_refused(spec, "is a folder");
}
END_TEST

/* The book's file with out_head left out, or a name outside its layout. */
static void book_edit(json_t *hdr, void *arg) {
    const char *what = arg;
    if (strcmp(what, "head") == 0) json_object_del(hdr, "out_head.weight");
    else {
        json_object_set(hdr, "trf_blocks.0.att.W_qkv.weight", json_object_get(hdr, "trf_blocks.0.att.W_query.weight"));
        json_object_del(hdr, "trf_blocks.0.att.W_query.weight");
    }
}

START_TEST(broken_book_file) {
    char src[512], p[256], spec[600];
    ckf_golden(src, sizeof src, "book_f32.safetensors");
    ttmp_path(p, sizeof p, "nohead.safetensors");
    ck_assert_int_eq(ckf_variant(src, p, book_edit, "head", 1), 0);
    snprintf(spec, sizeof spec, "m=%s:heads=2", p);
    ckf_expect_refused(spec, "tensor \"out_head.weight\" is missing");
    ttmp_path(p, sizeof p, "name.safetensors");
    ck_assert_int_eq(ckf_variant(src, p, book_edit, "name", 0), 0);
    snprintf(spec, sizeof spec, "m=%s:heads=2", p);
    ckf_expect_refused(spec, "\"trf_blocks.0.att.W_qkv.weight\" is not part of GPTModel's state_dict");
    /* no heads anywhere and emb_dim 20 is no multiple of 64 */
    snprintf(spec, sizeof spec, "m=%s", src);
    ckf_expect_refused(spec, "n_heads is not in the file and emb_dim 20 is not a multiple of 64");
}
END_TEST

static Suite *folders_suite(void) {
    openblas_set_num_threads(1); /* the server's setting */
    const TTest *tests[] = {folders_answer_text, book_file, broken_folders, broken_book_file, NULL};
    return suite_with("api_folders", "folders", 60, tests, ttmp_make, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {folders_suite}};
