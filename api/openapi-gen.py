#!/usr/bin/env python3
"""Writes api/openapi.json and api/openapi.c (the same document as a C string).

Run from the repository root after editing this file or api/examples/:
    python3 api/openapi-gen.py
tests/test_api_openapi.c checks that both files hold the same document, that
every field the parser accepts is described for its endpoint, and that every
example is answered with 200.
"""
import glob
import json
import os

T = {"$ref": "#/components/schemas/Tensor"}
BOOL_T = {"$ref": "#/components/schemas/Tensor"}
INT1 = {"type": "integer", "minimum": 1, "maximum": 2147483647}

FIELDS = {
    "module": ({"type": "string"}, "The Python class to run; each endpoint lists the ones it serves and its default."),
    "inputs": (T, "Token embeddings: [T][d_in] (one sequence; outputs then have no batch axis) or [B][T][d_in], as nested arrays or {\"shape\", \"data\"} flat row-major. Ragged arrays, non-numbers, values beyond float32 and empty axes are rejected with the path of the element, e.g. \"inputs[1][2]\"."),
    "tokens": ({"type": "array", "items": {"type": "string"}}, "Labels of the T tokens (L queries for sdpa), echoed back for viewers; their count must equal T. Returned by default when given."),
    "return": ({"type": "array", "items": {"type": "string", "enum": [
        "context", "attn_weights", "attn_scores", "masked_scores", "mask", "dropout_mask", "queries",
        "keys", "values", "context_heads", "params", "tokens", "timing"]}},
        "Outputs to include (default [\"context\", \"attn_weights\"], plus \"tokens\" when tokens are given). An unknown name is a 400."),
    "precision": ({"type": "integer", "minimum": 1, "maximum": 9}, "Significant digits of every float in the reply. Default: the shortest decimal that reads back as the same float32."),
    "output_format": ({"type": "string", "enum": ["nested", "flat"], "default": "nested"}, "Tensors as nested arrays, or {\"shape\": [...], \"data\": [...]} flat row-major."),
    "causal": ({"type": "boolean"}, "Mask keys after the query (j > i; top-left aligned when L != S). Default true for CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention and GPT2CausalSelfAttention, false otherwise."),
    "scale": ({"type": "number"}, "Factor applied to Q·Kᵀ before the softmax. Default 1/sqrt(head_dim) (1 for simple)."),
    "attn_mask": (T, "[T][T] or [B][T][T] (sdpa and torch.nn.MultiheadAttention: [L][S] or [B][L][S]). Booleans or 0/1: true / 1 = masked out (as the chapters' mask buffer and torch.nn.MultiheadAttention; note this is the opposite of F.scaled_dot_product_attention's boolean mask). Any other numbers: an additive float mask, where \"-inf\", \"-Infinity\" or null stand for -inf."),
    "key_padding_mask": (T, "[B][S] or [S] (applied to every sequence): booleans or 0/1, true / 1 = padding, not attended."),
    "mask_method": ({"type": "string", "enum": ["neg_inf", "renorm"], "default": "neg_inf"}, "How masking is applied (chapter 3.5.1): -inf before the softmax, or softmax, zero the masked weights and renormalise the rows."),
    "average_attn_weights": ({"type": "boolean", "default": False}, "Multi-head modules: return attn_weights averaged over heads ([B][T][T]) instead of per head ([B][H][T][T]). Default false for every module."),
    "normalization": ({"type": "string", "enum": ["softmax", "sum"], "default": "softmax"}, "simple only: softmax, or the chapter's first naive normalisation (scores / row sum)."),
    "init": ({"type": "object", "properties": {"seed": {"type": "integer"}}, "required": ["seed"], "additionalProperties": False},
             "Generate the parameters as constructing the module after torch.manual_seed(seed) does, draw for draw. Exactly one of init and state_dict is required for modules with parameters."),
    "state_dict": ({"type": "object", "additionalProperties": T},
                   "The parameters under the module's own state_dict() names (W_query.weight, heads.0.W_key.weight, out_proj.bias, c_attn.weight, in_proj_weight, ...): {k: v.tolist() for k, v in m.state_dict().items()} is a valid value. A missing, extra or mis-shaped entry is a 400 naming it and the expected shape. Buffers (mask, bias, heads.N.mask) may be left out; when given they are checked. Dropout then starts from a fresh generator (or dropout_seed)."),
    "training": ({"type": "boolean", "default": False}, "Training mode: dropout acts only when training and dropout > 0."),
    "dropout_seed": ({"type": "integer"}, "torch.manual_seed(dropout_seed) right before dropout. Without it dropout continues from the generator init left (or a fresh process's, with state_dict)."),
    "d_in": (INT1, "Input width; optional, checked against the inputs."),
    "d_out": (INT1, "Output width (required). MultiHeadAttention: split over num_heads; MultiHeadAttentionWrapper: per head."),
    "context_length": (INT1, "Size of the mask buffer; T above it is a 400 (invalid_shape), as the chapters' module would fail. Default: T."),
    "dropout": ({"type": "number", "minimum": 0, "maximum": 1, "default": 0}, "Dropout probability. sdpa: applied whenever > 0, as F.scaled_dot_product_attention's dropout_p."),
    "qkv_bias": ({"type": "boolean", "default": False}, "Biases in the query, key and value projections."),
    "num_heads": (INT1, "Number of heads (required)."),
    "n_embd": (INT1, "GPT-2 width; optional, checked against the inputs."),
    "n_head": (INT1, "GPT-2 number of heads (required); must divide n_embd."),
    "block_size": (INT1, "GPT-2 mask size; T above it is a 400. Default: T."),
    "embed_dim": (INT1, "Width of the queries; optional, checked against the inputs. num_heads must divide it."),
    "bias": ({"type": "boolean", "default": True}, "torch.nn.MultiheadAttention: in_proj_bias and out_proj.bias."),
    "kdim": (INT1, "Width of the key inputs (default embed_dim); checked against key."),
    "vdim": (INT1, "Width of the value inputs (default embed_dim); checked against value."),
    "key": (T, "torch.nn.MultiheadAttention: key inputs [B][S][kdim] (same rank as inputs; default: inputs). sdpa: keys [B][Hkv][S][E], [Hkv][S][E] or [S][E] (same rank as query)."),
    "value": (T, "torch.nn.MultiheadAttention: value inputs [B][S][vdim] (default: key). sdpa: values [B][Hkv][S][Ev] (same rank as query)."),
    "query": (T, "sdpa: queries [B][H][L][E]; rank 3 is [H][L][E] (no batch axis in the outputs), rank 2 [L][E] (one head, no batch). H must be a multiple of Hkv (grouped-query attention)."),
}

COMMON = ["module", "tokens", "return", "precision", "output_format"]
MASKING = ["causal", "scale", "attn_mask", "key_padding_mask", "mask_method", "average_attn_weights"]
TRAINABLE = ["inputs", "init", "state_dict", "training", "dropout_seed"]
MODULE_FIELDS = {
    "simple": COMMON + MASKING + ["inputs", "normalization"],
    "SelfAttention_v1": COMMON + MASKING + TRAINABLE + ["d_in", "d_out"],
    "SelfAttention_v2": COMMON + MASKING + TRAINABLE + ["d_in", "d_out", "qkv_bias"],
    "CausalAttention": COMMON + MASKING + TRAINABLE + ["d_in", "d_out", "context_length", "dropout", "qkv_bias"],
    "MultiHeadAttentionWrapper": COMMON + MASKING + TRAINABLE + ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"],
    "MultiHeadAttention": COMMON + MASKING + TRAINABLE + ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"],
    "GPT2CausalSelfAttention": COMMON + MASKING + TRAINABLE + ["n_embd", "n_head", "block_size", "dropout"],
    "torch.nn.MultiheadAttention": COMMON + MASKING + TRAINABLE + ["embed_dim", "num_heads", "dropout", "bias", "kdim", "vdim", "key", "value"],
    "scaled_dot_product_attention": COMMON + MASKING + ["query", "key", "value", "dropout", "dropout_seed"],
}
ENDPOINTS = [
    ("simple", ["simple"], "Attention without trainable weights (chapter 3.3): scores = X·Xᵀ, softmax or sum normalisation."),
    ("self", ["SelfAttention_v2", "SelfAttention_v1"], "SelfAttention_v1 / SelfAttention_v2 (chapter 3.4)."),
    ("causal", ["CausalAttention"], "CausalAttention (chapter 3.5)."),
    ("multihead", ["MultiHeadAttention", "MultiHeadAttentionWrapper", "GPT2CausalSelfAttention", "torch.nn.MultiheadAttention"],
     "MultiHeadAttention, MultiHeadAttentionWrapper (chapter 3.6), GPT2CausalSelfAttention (gpt2_min.py) and torch.nn.MultiheadAttention (batch_first=True)."),
    ("sdpa", ["scaled_dot_product_attention"], "Scaled dot-product attention on given query, key and value (cross-attention when L != S, grouped-query when Hkv < H)."),
]
MODULE_NAMES = [m for _, mods, _ in ENDPOINTS for m in mods]
REQUIRED = {"simple": ["inputs"], "self": ["inputs"], "causal": ["inputs", "d_out"], "multihead": ["inputs"], "sdpa": ["query", "key", "value"]}

ERROR_STATUSES = {
    "400": "Malformed JSON (code invalid_json, with line and column), a missing field (missing_field), an unknown field (unknown_field), a wrong type (invalid_type), a bad value or configuration (invalid_argument, e.g. a module the endpoint does not serve), disagreeing sizes (invalid_shape, e.g. d_out not divisible by num_heads, T over context_length, ragged arrays), NaN or values beyond float32 (non_finite).",
    "404": "Unknown path (not_found).",
    "405": "Method not allowed (method_not_allowed); the Allow header lists the allowed ones.",
    "413": "The body is over --max-body, or the request would make the server hold more than --max-elements values (too_large), checked before allocating.",
    "500": "Internal error (internal_error; a result holding NaN or infinity), or out_of_memory when the server cannot allocate even the error reply.",
    "503": "Every worker is busy and the queue is full (overloaded, with Retry-After), or memory ran out (out_of_memory).",
}


def request_schema(ep, modules):
    names = []
    for m in modules:
        for f in MODULE_FIELDS[m]:
            if f not in names:
                names.append(f)
    props = {}
    for f in names:
        schema, desc = FIELDS[f]
        s = dict(schema)
        if f == "module":
            s = {"type": "string", "enum": modules + (["sdpa"] if ep == "sdpa" else []), "default": modules[0]}
        s["description"] = desc
        if f in ("d_out", "num_heads", "n_head") and ep == "multihead":
            s["description"] += " Taken by: " + ", ".join(m for m in modules if f in MODULE_FIELDS[m]) + "."
        props[f] = s
    per_module = {m: MODULE_FIELDS[m] for m in modules}
    return {
        "type": "object",
        "description": "Fields taken by each module (any other field is a 400 unknown_field; null is the same as absent): "
        + "; ".join("%s: %s" % (m, ", ".join(fs)) for m, fs in per_module.items()),
        "properties": props,
        "required": REQUIRED[ep],
        "additionalProperties": False,
    }


def error_response(desc):
    return {"description": desc, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def main():
    root = os.path.dirname(os.path.abspath(__file__))
    examples = {}
    for path in sorted(glob.glob(os.path.join(root, "examples", "*.json"))):
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            examples.setdefault(name.split("_")[0], {})[name] = {"value": json.load(f)}
    paths = {}
    schemas = {}
    for ep, modules, summary in ENDPOINTS:
        cname = ep.capitalize() + "Request"
        schemas[cname] = request_schema(ep, modules)
        responses = {"200": {"description": "The requested outputs.", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/AttentionResponse"}}}}}
        for st, desc in ERROR_STATUSES.items():
            if st != "404":
                responses[st] = error_response(desc)
        paths["/attention/" + ep] = {"post": {
            "operationId": "attention_" + ep,
            "summary": summary,
            "description": "Modules: " + ", ".join(modules) + " (default " + modules[0] + "). The content type is not checked: the body is parsed as JSON.",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/" + cname},
                "examples": examples.get(ep, {})}}},
            "responses": responses,
        }}
    status_ok = {"description": "OK", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"status": {"type": "string", "enum": ["ok"]}}, "required": ["status"], "additionalProperties": False}}}}
    paths["/healthz"] = {"get": {"operationId": "healthz", "summary": "Liveness.", "responses": {"200": status_ok}}}
    paths["/readyz"] = {"get": {"operationId": "readyz", "summary": "Readiness: ready to take requests.", "responses": {
        "200": status_ok, "503": error_response("Not ready: the server is shutting down (draining).")}}}
    paths["/metrics"] = {"get": {"operationId": "metrics", "summary": "Prometheus text format: requests by endpoint and status, latency histogram, in-flight requests, bytes in and out.",
                                 "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}
    paths["/version"] = {"get": {"operationId": "version", "summary": "Name, version, build, OpenBLAS core and thread count.", "responses": {"200": {
        "description": "Version", "content": {"application/json": {"schema": {"type": "object", "properties": {
            "name": {"type": "string"}, "version": {"type": "string"},
            "build": {"type": "object", "additionalProperties": {"type": "string"}},
            "openblas": {"type": "object", "properties": {"core": {"type": "string"}, "threads": {"type": "integer", "minimum": 1}, "config": {"type": "string"}},
                         "required": ["core", "threads", "config"], "additionalProperties": False}},
            "required": ["name", "version", "build", "openblas"], "additionalProperties": False}}}}}}}
    paths["/openapi.json"] = {"get": {"operationId": "openapi", "summary": "This document.", "responses": {"200": {
        "description": "OpenAPI 3.1 document", "content": {"application/json": {"schema": {"type": "object"}}}}}}}

    tensor_out = {"$ref": "#/components/schemas/Tensor"}
    schemas.update({
        "Tensor": {"description": "Nested arrays (as tensor.tolist() gives) or {\"shape\", \"data\"} flat row-major. In replies, masked_scores carries -inf as null.",
                   "oneOf": [{"$ref": "#/components/schemas/NestedArray"}, {"$ref": "#/components/schemas/FlatTensor"}]},
        "NestedArray": {"type": "array", "minItems": 1, "items": {"oneOf": [
            {"type": "number"}, {"type": "boolean"}, {"type": "string", "enum": ["-inf", "-Infinity"]}, {"type": "null"},
            {"$ref": "#/components/schemas/NestedArray"}]}},
        "FlatTensor": {"type": "object", "properties": {
            "shape": {"type": "array", "minItems": 1, "maxItems": 4, "items": INT1},
            "data": {"type": "array", "items": {"type": ["number", "boolean", "string", "null"]}}},
            "required": ["shape", "data"], "additionalProperties": False},
        "Shape": {"type": "object", "description": "Sizes of the call: batch B (1 when the inputs had no batch axis), tokens T (L), kv_tokens S, d_in, d_out (width of context), num_heads H, head_dim.",
                  "properties": {k: {"type": "integer", "minimum": 1} for k in ["batch", "tokens", "kv_tokens", "d_in", "d_out", "num_heads", "head_dim"]},
                  "required": ["batch", "tokens", "kv_tokens", "d_in", "d_out", "num_heads", "head_dim"], "additionalProperties": False},
        "AttentionResponse": {"type": "object", "description": "Every tensor loses its batch axis when the inputs had none; single-head modules have no head axis. Floats are the shortest decimals that read back as the same float32, or `precision` digits.",
            "properties": {
                "module": {"type": "string", "enum": MODULE_NAMES},
                "shape": {"$ref": "#/components/schemas/Shape"},
                "context": dict(tensor_out, description="The module's output [B][T][d_out]; sdpa: [B][H][L][Ev] as F.scaled_dot_product_attention returns it."),
                "attn_weights": dict(tensor_out, description="Attention weights after dropout: [B][T][S] for single-head modules, [B][H][T][S] for multi-head ones, or [B][T][S] averaged with average_attn_weights."),
                "attn_scores": dict(tensor_out, description="Raw Q·Kᵀ [B][H][T][S]."),
                "masked_scores": dict(tensor_out, description="Scaled and masked scores [B][H][T][S]; masked entries are null."),
                "mask": dict(tensor_out, description="The boolean mask applied [B][T][S] as 0/1, 1 = masked out."),
                "dropout_mask": dict(tensor_out, description="Dropout multipliers (0 or 1/(1-p); 1 when inactive): [B][H][T][S], or [B][T][d_out] for GPT2CausalSelfAttention (dropout on the output)."),
                "queries": dict(tensor_out, description="Per head, after projection: [B][H][T][head_dim]."),
                "keys": dict(tensor_out, description="[B][Hkv][S][head_dim]."),
                "values": dict(tensor_out, description="[B][Hkv][S][head_dim]."),
                "context_heads": dict(tensor_out, description="Heads concatenated, before the output projection: [B][T][H*head_dim]."),
                "params": {"type": "object", "additionalProperties": tensor_out, "description": "The state_dict used, buffers included, under PyTorch names: {k: torch.tensor(v)} loads back, and it is a valid state_dict field."},
                "tokens": {"type": ["array", "null"], "items": {"type": "string"},
                           "description": "The request's tokens; null when \"tokens\" is asked for in return but the request gave none."},
                "timing": {"type": "object", "properties": {k: {"type": "number", "minimum": 0} for k in ["parse_ms", "compute_ms", "serialise_ms"]},
                           "required": ["parse_ms", "compute_ms", "serialise_ms"], "additionalProperties": False},
            }, "required": ["module", "shape"], "additionalProperties": False},
        "Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
            "status": {"type": "integer", "enum": [int(k) for k in ERROR_STATUSES]},
            "code": {"type": "string", "enum": ["invalid_json", "missing_field", "unknown_field", "invalid_type", "invalid_argument",
                                               "invalid_shape", "non_finite", "too_large", "not_found", "method_not_allowed",
                                               "overloaded", "draining", "out_of_memory", "internal_error"]},
            "message": {"type": "string"},
            "field": {"type": ["string", "null"], "description": "The field at fault, with the path of the element: \"inputs[1][2]\", \"state_dict.W_query.weight\"; null when none."}},
            "required": ["status", "code", "message", "field"], "additionalProperties": False}},
            "required": ["error"], "additionalProperties": False},
    })
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "attention-server", "version": "0.1.0",
                 "description": "The attention modules of the \"attention mechanisms\" chapters, PyTorch-exact, over HTTP. Every endpoint also answers OPTIONS (CORS preflight)."},
        "paths": paths,
        "components": {"schemas": schemas},
    }
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    with open(os.path.join(root, "openapi.json"), "w") as f:
        f.write(text)
    lines = ['/* openapi.c - the OpenAPI document served at /openapi.json.',
             ' * Generated by api/openapi-gen.py with api/openapi.json: do not edit. */',
             '#include "api/api_internal.h"', '', 'static const char doc[] =']
    for line in text.splitlines(True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines.append('    "' + esc + '"')
    lines[-1] += ";"
    lines += ['', 'const char *api_openapi_json(void) { return doc; }', '']
    with open(os.path.join(root, "openapi.c"), "w") as f:
        f.write("\n".join(lines))


main()
