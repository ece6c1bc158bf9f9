/* rng.c - PyTorch's CPU generator: mt19937 and the draws torch makes from it.
 *
 * torch.manual_seed(s) seeds a standard mt19937 with the low 32 bits of s.
 * A float draw (torch.rand, uniform_) takes one 32-bit output and keeps 24
 * bits; a double draw (the Bernoulli of nn.Dropout on a CPU build without
 * MKL) takes two outputs, the first as the high word, and keeps 53 bits.
 */
#include "attention.h"
#include "internal.h"

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

/* fmaf is a library call unless the compiler may emit the instruction, and
 * the block loops vectorise best with AVX2: the twist and the float draws come
 * in two versions, the loader picks the x86-64-v3 one (AVX2, FMA) where the
 * CPU has it. Both round once, so the bits are the same. ("arch=haswell"
 * would test for that CPU model, not its features, and miss every AMD CPU.) */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define ATTN_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ATTN_SIMD_CLONES
#endif

/* The standard twist, split so that no index wraps inside a loop (the loops
 * then vectorise). */
static inline uint32_t mt_mix(uint32_t a, uint32_t b, uint32_t m) {
    uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
    return m ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
}

ATTN_SIMD_CLONES
static void mt_twist(attn_rng *rng) {
    uint32_t *s = rng->state;
    int i = 0;
    for (; i < MT_N - MT_M; i++) s[i] = mt_mix(s[i], s[i + 1], s[i + MT_M]);
    for (; i < MT_N - 1; i++) s[i] = mt_mix(s[i], s[i + 1], s[i + MT_M - MT_N]);
    s[MT_N - 1] = mt_mix(s[MT_N - 1], s[0], s[MT_M - 1]);
    rng->index = 0;
}

static inline uint32_t mt_temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint32_t attn_rng_u32(attn_rng *rng) {
    if (rng->index >= MT_N) mt_twist(rng);
    return mt_temper(rng->state[rng->index++]);
}


/* PyTorch's uniform_ keeps 24 bits of one draw; its kernel is compiled with
 * FMA contraction: x * span + from rounded once, not twice. */
static inline float uniform_of(uint32_t y, float span, float from) {
    float x = (float)(y & ((1u << 24) - 1)) * (1.0f / (float)(1u << 24));
    return fmaf(x, span, from);
}

ATTN_SIMD_CLONES
float attn_rng_uniform(attn_rng *rng, float from, float to) {
    return uniform_of(attn_rng_u32(rng), to - from, from);
}

/* The same draws as n calls of attn_rng_uniform, a state block at a time:
 * the temper and the conversion vectorise. */
ATTN_SIMD_CLONES
void attn_rng_uniform_fill(attn_rng *rng, float *x, size_t n, float from, float to) {
    float span = to - from;
    while (n > 0) {
        if (rng->index >= MT_N) mt_twist(rng);
        size_t m = (size_t)(MT_N - rng->index);
        if (m > n) m = n;
        const uint32_t *s = rng->state + rng->index;
        for (size_t i = 0; i < m; i++) x[i] = uniform_of(mt_temper(s[i]), span, from);
        rng->index += (int)m;
        x += m;
        n -= m;
    }
}

int attn_rng_bernoulli(attn_rng *rng, double keep_p) {
    uint64_t hi = attn_rng_u32(rng);
    uint64_t lo = attn_rng_u32(rng);
    uint64_t bits = ((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1);
    double x = (double)bits * (1.0 / (double)(UINT64_C(1) << 53));
    return x < keep_p;
}

/* The same outputs as n calls of attn_rng_u32, a state block at a time. */
ATTN_SIMD_CLONES
void attn__rng_u32_fill(attn_rng *rng, uint32_t *out, size_t n) {
    while (n > 0) {
        if (rng->index >= MT_N) mt_twist(rng);
        size_t m = (size_t)(MT_N - rng->index);
        if (m > n) m = n;
        const uint32_t *s = rng->state + rng->index;
        for (size_t i = 0; i < m; i++) out[i] = mt_temper(s[i]);
        rng->index += (int)m;
        out += m;
        n -= m;
    }
}

uint64_t attn__rng_bits53(attn_rng *rng) {
    uint64_t hi = attn_rng_u32(rng);
    uint64_t lo = attn_rng_u32(rng);
    return ((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1);
}

/* exponential_kernel (cpu/DistributionTemplates.h) on a build without MKL,
 * as Debian's: at::exponential_distribution<double> element by element. */
void attn_rng_exponential_fill(attn_rng *rng, float *x, size_t n, double lambd) {
    for (size_t i = 0; i < n; i++) x[i] = attn__exponential_of(attn__rng_bits53(rng), lambd);
}
