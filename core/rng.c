/* rng.c - PyTorch's CPU generator: mt19937 and the draws torch makes from it.
 *
 * torch.manual_seed(s) seeds a standard mt19937 with the low 32 bits of s.
 * A float draw (torch.rand, uniform_) takes one 32-bit output and keeps 24
 * bits; a double draw (the Bernoulli of nn.Dropout on a CPU build without
 * MKL) takes two outputs, the first as the high word, and keeps 53 bits.
 */
#include "attention.h"

#include <math.h>

#define MT_N 624
#define MT_M 397

void attn_rng_seed(attn_rng *rng, uint64_t seed) {
    rng->state[0] = (uint32_t)(seed & 0xffffffffu);
    for (uint32_t j = 1; j < MT_N; j++) {
        uint32_t prev = rng->state[j - 1];
        rng->state[j] = 1812433253u * (prev ^ (prev >> 30)) + j;
    }
    rng->index = MT_N; /* regenerate on the first draw */
}

/* The standard twist, split so that no index wraps inside a loop. */
static uint32_t mt_mix(uint32_t a, uint32_t b, uint32_t m) {
    uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
    return m ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
}

static void mt_twist(attn_rng *rng) {
    uint32_t *s = rng->state;
    int i = 0;
    for (; i < MT_N - MT_M; i++) s[i] = mt_mix(s[i], s[i + 1], s[i + MT_M]);
    for (; i < MT_N - 1; i++) s[i] = mt_mix(s[i], s[i + 1], s[i + MT_M - MT_N]);
    s[MT_N - 1] = mt_mix(s[MT_N - 1], s[0], s[MT_M - 1]);
    rng->index = 0;
}

uint32_t attn_rng_u32(attn_rng *rng) {
    if (rng->index >= MT_N) mt_twist(rng);
    uint32_t y = rng->state[rng->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* fmaf is a library call unless the compiler may emit the instruction: two
 * versions, the loader picks the FMA one where the CPU has it (same bits). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("fma", "default")))
#endif
float attn_rng_uniform(attn_rng *rng, float from, float to) {
    float x = (float)(attn_rng_u32(rng) & ((1u << 24) - 1)) * (1.0f / (float)(1u << 24));
    float span = to - from;
    /* PyTorch's kernel is compiled with FMA contraction: one rounding, not two. */
    return fmaf(x, span, from);
}

int attn_rng_bernoulli(attn_rng *rng, double keep_p) {
    uint64_t hi = attn_rng_u32(rng);
    uint64_t lo = attn_rng_u32(rng);
    uint64_t bits = ((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1);
    double x = (double)bits * (1.0 / (double)(UINT64_C(1) << 53));
    return x < keep_p;
}
