/* penalty.c - penalties on the tokens already in the text, on the raw
 * logits before the sampler (llama.cpp's sampler chain puts them first;
 * transformers runs its RepetitionPenaltyLogitsProcessor before the
 * temperature and the warpers):
 *
 *   repetition_penalty, transformers' RepetitionPenaltyLogitsProcessor:
 *     score = torch.gather(scores, 1, input_ids)
 *     score = torch.where(score < 0, score * penalty, score / penalty)
 *     scores.scatter_(1, input_ids, score)
 *   over every id of the prompt and the generated tokens, once however often
 *   it occurs (gather and scatter of the same value);
 *
 *   frequency_penalty and presence_penalty, OpenAI's definition as
 *   llama.cpp's penalties sampler applies it (after its repeat penalty):
 *     logit -= float(count) * penalty_freq + float(count > 0) * penalty_present
 *   with count over the generated tokens only (OpenAI: "how often the token
 *   was sampled"; vLLM counts the output tokens alike), and all of them
 *   (llama.cpp's penalty_last_n = -1, the whole text).
 */
#include "internal.h"

int attn_penalties_on(const attn_penalties *pen) {
    return pen != NULL && (pen->repetition_penalty != 1.0 || pen->frequency_penalty != 0.0 ||
                           pen->presence_penalty != 0.0);
}

static int check(const attn_penalties *pen, const float *logits, int n_vocab, const int32_t *ids,
                 int n_ids, int n_prompt, const int32_t *counts, attn_error *err) {
    if (pen == NULL) return attn__fail(err, ATTN_ERR_ARG, "penalties", "no penalties");
    if (!(pen->repetition_penalty > 0.0 && pen->repetition_penalty <= 1e6))
        return attn__fail(err, ATTN_ERR_ARG, "repetition_penalty",
                          "repetition_penalty must be a positive number (1: off)");
    if (!(pen->frequency_penalty >= -2.0 && pen->frequency_penalty <= 2.0))
        return attn__fail(err, ATTN_ERR_ARG, "frequency_penalty",
                          "frequency_penalty must be in [-2, 2] (0: off)");
    if (!(pen->presence_penalty >= -2.0 && pen->presence_penalty <= 2.0))
        return attn__fail(err, ATTN_ERR_ARG, "presence_penalty",
                          "presence_penalty must be in [-2, 2] (0: off)");
    if (n_vocab < 1)
        return attn__fail(err, ATTN_ERR_ARG, "n_vocab", "a row of %d logits (at least 1)", n_vocab);
    if (n_ids < 0 || n_prompt < 0 || n_prompt > n_ids)
        return attn__fail(err, ATTN_ERR_ARG, "n_ids", "%d ids of which %d the prompt", n_ids,
                          n_prompt);
    if (logits == NULL || counts == NULL || (n_ids > 0 && ids == NULL))
        return attn__fail(err, ATTN_ERR_ARG, logits ? (counts ? "ids" : "counts") : "logits",
                          "a NULL pointer");
    for (int i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return attn__fail(err, ATTN_ERR_ARG, "ids", "ids[%d] is %d, not in [0, %d)", i,
                              (int)ids[i], n_vocab);
    return ATTN_OK;
}

/* One id's logit: the repetition penalty, then the frequency and presence
 * penalties for its count c among the generated tokens. */
static float penalized(const attn_penalties *pen, float x, int32_t c) {
    float r = (float)pen->repetition_penalty;
    x = x < 0.0f ? x * r : x / r;
    float fc = (float)c;
    return x - (fc * (float)pen->frequency_penalty + (float)(c > 0) * (float)pen->presence_penalty);
}

int attn_penalize(const attn_penalties *pen, float *logits, int n_vocab, const int32_t *ids,
                  int n_ids, int n_prompt, int32_t *counts, attn_error *err) {
    int rc = check(pen, logits, n_vocab, ids, n_ids, n_prompt, counts, err);
    if (rc != ATTN_OK || !attn_penalties_on(pen)) return rc;
    for (int i = n_prompt; i < n_ids; i++) counts[ids[i]]++;
    for (int i = 0; i < n_ids; i++) { /* each distinct id once; -1 marks it done */
        int32_t c = counts[ids[i]];
        if (c < 0) continue;
        logits[ids[i]] = penalized(pen, logits[ids[i]], c);
        counts[ids[i]] = -1;
    }
    for (int i = 0; i < n_ids; i++) counts[ids[i]] = 0;
    return ATTN_OK;
}
