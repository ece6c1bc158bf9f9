/* codec.h - base64 and float16, for binary tensors in JSON (private to api/).
 *
 * A binary tensor is {"shape": [...], "dtype": "float32" | "float16" |
 * "uint8", "base64": "..."}: the little-endian, row-major bytes of the
 * tensor in standard base64 (RFC 4648 alphabet, '=' padding optional), the
 * form embedding APIs return vectors in.
 */
#ifndef API_CODEC_H
#define API_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Bytes that n base64 characters decode to, or SIZE_MAX if no valid
 * base64 text has that length (padding included in n). */
size_t api__b64_decoded_size(const char *s, size_t n);
/* Decodes s[0..n) into out (api__b64_decoded_size bytes). Returns 0, or the
 * 1-based position of the first character that is not base64 (or of a
 * misplaced '='). */
size_t api__b64_decode(const char *s, size_t n, uint8_t *out);
/* Characters api__b64_encode writes for n bytes (padded). */
size_t api__b64_encoded_size(size_t n);
/* Writes the padded base64 of in[0..n) to out; returns its length. */
size_t api__b64_encode(const uint8_t *in, size_t n, char *out);

/* IEEE binary16 to float32 (exact), and float32 to binary16 rounding to
 * nearest, ties to even (as torch.Tensor.half() does; overflow gives inf). */
float api__f16_to_f32(uint16_t h);
uint16_t api__f32_to_f16(float f);

#endif
