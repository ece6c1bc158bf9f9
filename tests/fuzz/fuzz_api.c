/* fuzz_api.c - libFuzzer target: any bytes as a request to any endpoint.
 *
 * The first byte picks the endpoint (and, with its top bit, a gzip body), the
 * rest is the body. api_handle must
 * not crash, leak or trip a sanitizer, and must always answer a well-formed
 * reply (tests/support/reply_check.h). Built and run by `make fuzz`; the
 * inputs it finds worth keeping go to tests/fuzz/corpus/, which
 * tests/test_api_fuzz_corpus.c replays in every `make test` and `make asan`.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "api/api.h"
#include "tests/support/reply_check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    json_object_seed(1);   /* a fixed hash seed, so that a run can be reproduced */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    api_reply reply;
    reply_check_run(data, size, &reply);
    char why[256];
    if (reply_check(&reply, why, sizeof why) != 0) {
        fprintf(stderr, "bad reply: %s\n%.*s\n", why, (int)(reply.body.len < 2000 ? reply.body.len : 2000),
                reply.body.data ? reply.body.data : "");
        abort();
    }
    api_reply_free(&reply);
    return 0;
}
