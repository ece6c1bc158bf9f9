/* demo_model.S - embeds the demo model (models/shakespeare/: config.json,
 * model.safetensors, vocab.json, merges.txt; made by
 * models/train_shakespeare.py) so that the server with no --model serves a
 * trained model wherever its binary goes. Each file is srv__demo_NAME, its
 * end srv__demo_NAME_end; main.c loads them with api_models_load_mem. The
 * Makefile passes their paths as SRV_DEMO_CONFIG, _WEIGHTS, _VOCAB, _MERGES. */
#define EMBED(sym, path)                                                       \
    .globl sym; .type sym, @object; .balign 64; sym: .incbin path;             \
    .globl sym##_end; sym##_end:

    .section .rodata
    EMBED(srv__demo_config, SRV_DEMO_CONFIG)
    EMBED(srv__demo_weights, SRV_DEMO_WEIGHTS)
    EMBED(srv__demo_vocab, SRV_DEMO_VOCAB)
    EMBED(srv__demo_merges, SRV_DEMO_MERGES)

    /* no executable stack */
    .section .note.GNU-stack, "", @progbits
