/* tiny_server.h - a server of this build serving the generation goldens'
 * checkpoint, as the browser and client tests drive it: the Hugging Face
 * checkpoint tests/golden/generation/tiny_hf.safetensors as model "tiny" and
 * the byte-level tokenizer (256 byte symbols and <|endoftext|>, written by
 * tbpe_write_dir) as "bytes".
 */
#ifndef TESTS_SUPPORT_TINY_SERVER_H
#define TESTS_SUPPORT_TINY_SERVER_H

#include "server_harness.h"

/* Writes the tokenizer into the test's temporary folder (tmpdir.h; made
 * when the test has none yet) and starts the server with --model=tiny=...
 * --tokenizer=bytes=<that folder> (srvt_must_start). Fails the running test
 * when any of it does not work. Stop it with srvt_must_stop; the suite's
 * teardown ttmp_remove removes the folder. */
void tiny_server_start(srvt_server *s);

#endif
