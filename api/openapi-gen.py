#!/usr/bin/env python3
"""Writes the OpenAPI document that the server embeds and serves at /openapi.json.

    python3 api/openapi-gen.py TABLES.json OUT.json      (OUT.json "-": stdout)

`make` runs it as build/tools/api-tables > build/gen/tables.json, then this,
which writes build/gen/openapi.json; api/openapi_doc.S embeds that file. The
endpoints and their modules, the fields of each module, the outputs and the
error codes come from TABLES.json (api/tables.c prints the C tables); the
examples from api/examples/; the prose (field descriptions, summaries) is
below. tests/test_api_openapi.c runs this script on the tables of the test
program itself and checks that it reproduces the embedded document.
"""
import glob
import json
import os
import sys

T = {"$ref": "#/components/schemas/Tensor"}
BOOL_T = {"$ref": "#/components/schemas/Tensor"}
INT1 = {"type": "integer", "minimum": 1, "maximum": 2147483647}

FIELDS = {
    "module": ({"type": "string"}, "The Python class to run; each endpoint lists the ones it serves and its default."),
    "inputs": (T, "Token embeddings: [T][d_in] (one sequence; outputs then have no batch axis) or [B][T][d_in], as nested arrays or {\"shape\", \"data\"} flat row-major. Ragged arrays, non-numbers, values beyond float32 and empty axes are rejected with the path of the element, e.g. \"inputs[1][2]\"."),
    "tokens": ({"type": "array", "items": {"type": "string"}}, "Labels of the T tokens (L queries for sdpa), echoed back for viewers; their count must equal T. Returned by default when given."),
    "return": ({"type": "array", "items": {"type": "string", "enum": []}},  # the output table's names
        "Outputs to include (default [\"context\", \"attn_weights\"], plus \"tokens\" when tokens are given). An unknown name is a 400."),
    "precision": ({"type": "integer", "minimum": 1, "maximum": 9}, "Significant digits of every float in the reply. Default: the shortest decimal that reads back as the same float32."),
    "output_format": ({"type": "string", "enum": ["nested", "flat", "base64", "safetensors"], "default": "nested"}, "Tensors as nested arrays, {\"shape\": [...], \"data\": [...]} flat row-major, {\"shape\", \"dtype\", \"base64\"} binary (little-endian bytes in base64), or the whole reply as one safetensors file (application/octet-stream; also the default when the request's Accept header prefers application/octet-stream to application/json)."),
    "dtype": ({"type": "string", "enum": ["float32", "float16"], "default": "float32"}, "Float tensors of a base64 or safetensors reply as float32, or float16 (round to nearest even, as Tensor.half(); half the bytes)."),
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

SUMMARIES = {
    "simple": "Attention without trainable weights (chapter 3.3): scores = X·Xᵀ, softmax or sum normalisation.",
    "self": "SelfAttention_v1 / SelfAttention_v2 (chapter 3.4).",
    "causal": "CausalAttention (chapter 3.5).",
    "multihead": "MultiHeadAttention, MultiHeadAttentionWrapper (chapter 3.6), GPT2CausalSelfAttention (gpt2_min.py) and torch.nn.MultiheadAttention (batch_first=True).",
    "sdpa": "Scaled dot-product attention on given query, key and value (cross-attention when L != S, grouped-query when Hkv < H).",
}
REQUIRED = {"simple": ["inputs"], "self": ["inputs"], "causal": ["inputs", "d_out"], "multihead": ["inputs"], "sdpa": ["query", "key", "value"]}

ERROR_STATUSES = {
    "400": "Malformed JSON (code invalid_json, with line and column), a missing field (missing_field), an unknown field (unknown_field), a wrong type (invalid_type), a bad value or configuration (invalid_argument, e.g. a module the endpoint does not serve), disagreeing sizes (invalid_shape, e.g. d_out not divisible by num_heads, T over context_length, ragged arrays), NaN or values beyond float32 (non_finite), a binary tensor whose text is not base64 (invalid_base64), a gzip body that is not one well-formed gzip member (invalid_gzip).",
    "404": "Unknown path (not_found).",
    "405": "Method not allowed (method_not_allowed); the Allow header lists the allowed ones.",
    "415": "A Content-Encoding other than gzip or identity (unsupported_encoding); the Accept-Encoding header lists those taken.",
    "413": "The body is over --max-body, or the request would make the server hold more than --max-elements values (too_large), checked before allocating.",
    "500": "Internal error (internal_error; a result holding NaN or infinity), or out_of_memory when the server cannot allocate even the error reply.",
    "503": "Every worker is busy and the queue is full (overloaded, with Retry-After), or memory ran out (out_of_memory).",
}


def request_schema(ep, modules, tables):
    fields = {m["name"]: m["fields"] for m in tables["modules"]}
    aliases = [a for m in tables["modules"] if m["name"] in modules for a in m["aliases"]]
    names = []
    for m in modules:
        for f in fields[m]:
            if f not in names:
                names.append(f)
    props = {}
    for f in names:
        schema, desc = FIELDS[f]
        s = dict(schema)
        if f == "return":
            s["items"] = {"type": "string", "enum": [o["name"] for o in tables["outputs"]]}
        if f == "module":
            s = {"type": "string", "enum": modules + aliases, "default": modules[0]}
        s["description"] = desc
        if f in ("d_out", "num_heads", "n_head") and ep == "multihead":
            s["description"] += " Taken by: " + ", ".join(m for m in modules if f in fields[m]) + "."
        props[f] = s
    per_module = {m: fields[m] for m in modules}
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


# Outputs that are not tensors: their schemas (the description is the table's).
JSON_OUTPUTS = {
    "params": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Tensor"}},
    "tokens": {"type": ["array", "null"], "items": {"type": "string"}},
    "timing": {"type": "object", "properties": {k: {"type": "number", "minimum": 0} for k in ["parse_ms", "compute_ms", "serialise_ms"]},
               "required": ["parse_ms", "compute_ms", "serialise_ms"], "additionalProperties": False},
}


def output_schema(o):
    if o["element"] == "json":
        s = dict(JSON_OUTPUTS[o["name"]])
    else:
        s = {"$ref": "#/components/schemas/Tensor"}
    if o.get("description") is not None:
        s["description"] = o["description"]
    return s


def error_schema(errors):
    statuses = sorted({e["status"] for e in errors})
    if statuses != sorted(int(k) for k in ERROR_STATUSES):
        sys.exit("openapi-gen: the error table's statuses %s are not those described in ERROR_STATUSES" % statuses)
    return {"type": "object", "properties": {"error": {"type": "object", "properties": {
        "status": {"type": "integer", "enum": statuses},
        "code": {"type": "string", "enum": [e["code"] for e in errors],
                 "description": " ".join("%s (%d): %s" % (e["code"], e["status"], e["description"]) for e in errors)},
        "message": {"type": "string"},
        "field": {"type": ["string", "null"], "description": "The field at fault, with the path of the element: \"inputs[1][2]\", \"state_dict.W_query.weight\"; null when none."}},
        "required": ["status", "code", "message", "field"], "additionalProperties": False}},
        "required": ["error"], "additionalProperties": False}


GPT2_EXAMPLE = {"vocab_size": 50, "block_size": 16, "n_layer": 2, "n_head": 2, "n_embd": 8,
                "init": {"seed": 0}, "idx": [3, 14, 15, 9], "return": ["next_token", "attn_weights"],
                "layers": [1], "precision": 3}


def model_gpt2(paths, schemas):
    """POST /model/gpt2 (api/model.c): seed 003's whole GPT2, not a module of the tables."""
    def size(desc, default=None, minimum=1):
        s = {"type": "integer", "minimum": minimum, "maximum": 2147483647, "description": desc}
        if default is not None:
            s["default"] = default
        return s
    schemas["Gpt2Request"] = {
        "type": "object",
        "description": "GPTConfig's fields and the parameters (init or state_dict), or instead the name of a checkpoint loaded at start (model); the token ids and the outputs wanted. Any other field is a 400 unknown_field; null is the same as absent.",
        "properties": {
            "model": {"type": "string", "description": "A checkpoint the server loaded at start (--model NAME=FILE.safetensors, a Hugging Face GPT-2 model.safetensors; GET /models lists them): it brings the config (gelu_new, dropout 0.1) and the parameters, so vocab_size, block_size, n_layer, n_head, n_embd, dropout, activation, init and state_dict must be left out (400 naming the field). An unknown name is a 400 invalid_argument with field model."},
            "vocab_size": size("GPTConfig.vocab_size: rows of wte (and of the tied lm_head)."),
            "block_size": size("GPTConfig.block_size: rows of wpe, side of each attn.bias buffer; T must not exceed it."),
            "n_layer": size("Blocks.", 12, 0),
            "n_head": size("Heads; must divide n_embd.", 12),
            "n_embd": size("Width.", 768),
            "dropout": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.1, "description": "p of drop, attn.resid_drop and mlp.drop (active only with training)."},
            "activation": {"type": "string", "enum": ["gelu", "gelu_new"], "default": "gelu", "description": "gelu: F.gelu (erf), the seed's. gelu_new: the tanh approximation of the released GPT-2 checkpoints."},
            "init": {"type": "object", "properties": {"seed": {"type": "integer"}}, "required": ["seed"], "additionalProperties": False,
                     "description": "torch.manual_seed(seed); GPT2(config): the parameters bit for bit (nn.Embedding's normal_, nn.Linear's kaiming-uniform weights and uniform biases, lm_head's draws before it is tied). Exactly one of init and state_dict."},
            "state_dict": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Tensor"},
                           "description": "gpt2_min.py's state_dict names: wte.weight, wpe.weight, h.N.ln_1.weight, h.N.attn.c_attn.weight, h.N.attn.c_proj.bias, h.N.mlp.fc.weight, h.N.mlp.proj.weight, ln_f.bias, ... The h.N.attn.bias buffers may be left out; lm_head.weight may be left out (it is wte.weight) or given with the same values."},
            "idx": {"$ref": "#/components/schemas/Tensor", "description": "Token ids: [T] (replies then have no batch axis) or [B][T], integers in [0, vocab_size), T <= block_size."},
            "training": {"type": "boolean", "default": False, "description": "model.train(): dropout draws as PyTorch's do, from the generator left by init (or dropout_seed)."},
            "dropout_seed": {"type": "integer", "description": "torch.manual_seed(dropout_seed) right before the forward call."},
            "return": {"type": "array", "items": {"type": "string", "enum": ["idx", "logits", "next_token", "attn_weights", "hidden_states", "timing"]},
                       "description": "Outputs to include (default [\"logits\", \"next_token\"])."},
            "layers": {"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "Increasing layer indices whose maps attn_weights returns (default: every layer)."},
            "precision": FIELDS["precision"][0],
            "output_format": {"type": "string", "enum": ["nested", "flat", "base64"], "default": "nested"},
            "dtype": {"type": "string", "enum": ["float32", "float16"], "default": "float32", "description": "float16 with output_format base64 only."},
        },
        "required": ["idx"],
        "anyOf": [{"required": ["model"]}, {"required": ["vocab_size", "block_size"]}],
        "additionalProperties": False,
    }
    schemas["Gpt2Response"] = {
        "type": "object",
        "description": "Every tensor loses its batch axis when idx was [T].",
        "properties": {
            "module": {"type": "string", "enum": ["GPT2"]},
            "model": {"type": "string", "description": "The loaded checkpoint's name, when the request named one."},
            "config": {"type": "object", "description": "The GPTConfig used, and the activation."},
            "shape": {"type": "object", "properties": {k: {"type": "integer", "minimum": 1} for k in ["batch", "tokens", "head_dim"]}},
            "idx": {"$ref": "#/components/schemas/Tensor", "description": "[B][T] token ids."},
            "logits": {"$ref": "#/components/schemas/Tensor", "description": "[B][T][vocab_size]."},
            "next_token": {"description": "argmax of the last position's logits (the first on ties), per sequence: [B] or one integer.",
                           "oneOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
            "layers": {"type": "array", "items": {"type": "integer"}, "description": "The layers of attn_weights."},
            "attn_weights": {"$ref": "#/components/schemas/Tensor", "description": "[layers][B][n_head][T][T] softmax weights of each block (before resid_drop, which acts on the output)."},
            "hidden_states": {"$ref": "#/components/schemas/Tensor", "description": "[n_layer + 1][B][T][n_embd] as Hugging Face's output_hidden_states: each block's input (first: embeddings after drop), last the output of ln_f."},
            "timing": {"type": "object", "properties": {k: {"type": "number", "minimum": 0} for k in ["parse_ms", "compute_ms"]}},
        },
        "required": ["module", "config", "shape"], "additionalProperties": False}
    responses = {"200": {"description": "The requested outputs (JSON only).",
                         "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Gpt2Response"}}}}}
    for st, desc in ERROR_STATUSES.items():
        if st != "404":
            responses[st] = error_response(desc)
    paths["/model/gpt2"] = {"post": {
        "operationId": "model_gpt2",
        "summary": "Seed 003's whole GPT2 (gpt2_min.py): logits, next token, every layer's attention maps and hidden states, PyTorch-exact.",
        "description": "x = wte(idx) + wpe(pos), drop, n_layer blocks (x + attn(ln_1(x)), x + mlp(ln_2(x))), ln_f, lm_head tied to wte; each block's attention is GPT2CausalSelfAttention of /attention/multihead.",
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/Gpt2Request"},
            "examples": {"gpt2_seed": {"value": GPT2_EXAMPLE}}}}},
        "responses": responses,
    }}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        tables = json.load(f)
    root = os.path.dirname(os.path.abspath(__file__))
    examples = {}
    for path in sorted(glob.glob(os.path.join(root, "examples", "*.json"))):
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            examples.setdefault(name.split("_")[0], {})[name] = {"value": json.load(f)}
    paths = {}
    schemas = {}
    for endpoint in tables["endpoints"]:
        ep, modules, summary = endpoint["name"], endpoint["modules"], SUMMARIES[endpoint["name"]]
        cname = ep.capitalize() + "Request"
        schemas[cname] = request_schema(ep, modules, tables)
        responses = {"200": {"description": "The requested outputs. With output_format safetensors: one safetensors file (8-byte little-endian header length, the JSON header {name: {dtype F32|F16|BOOL, shape, data_offsets}, __metadata__: {format, module, shape, tokens, timing as JSON strings}} padded to 8 bytes, then the tensors' bytes; float tensors first). Replies over --gzip-min-size are gzip when the request's Accept-Encoding takes it (Content-Encoding: gzip, Vary: Accept-Encoding).",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AttentionResponse"}},
                        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}
        for st, desc in ERROR_STATUSES.items():
            if st != "404":
                responses[st] = error_response(desc)
        paths[endpoint["path"]] = {"post": {
            "operationId": "attention_" + ep,
            "summary": summary,
            "description": "Modules: " + ", ".join(modules) + " (default " + modules[0] + "). The content type is not checked: the body is parsed as JSON. A body sent with Content-Encoding: gzip is inflated first (--max-body applies to the inflated size).",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/" + cname},
                "examples": examples.get(ep, {})}}},
            "responses": responses,
        }}
    model_gpt2(paths, schemas)
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
    paths["/models"] = {"get": {"operationId": "models", "summary": "The checkpoints loaded at start (--model NAME=FILE.safetensors) that POST /model/gpt2 runs with {\"model\": NAME}, with their config.",
        "responses": {"200": {"description": "The loaded models, in the order of the --model options (an empty list when none).",
            "content": {"application/json": {"schema": {"type": "object", "properties": {"models": {"type": "array", "items": {
                "type": "object", "properties": {
                    "name": {"type": "string"},
                    "file": {"type": "string", "description": "The file's base name."},
                    "module": {"type": "string", "enum": ["GPT2"]},
                    "config": {"type": "object", "description": "From the tensor shapes: vocab_size and n_embd (wte), block_size (wpe, n_positions), n_layer (the h.N blocks); n_head; dropout 0.1 and activation gelu_new, GPT-2's.",
                               "properties": {**{k: {"type": "integer", "minimum": 0} for k in ["vocab_size", "block_size", "n_layer", "n_head", "n_embd"]},
                                              "dropout": {"type": "number"}, "activation": {"type": "string", "enum": ["gelu_new"]}},
                               "required": ["vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "activation"], "additionalProperties": False},
                    "n_head_from": {"type": "string", "enum": ["option", "metadata", "n_embd/64"], "description": "Where n_head came from (no shape says it): FILE:heads=N, the file's __metadata__ n_head, or n_embd / 64 (GPT-2's head width)."},
                    "dtype": {"type": "string", "description": "The file's weights: F32, F16 or BF16 (held as float32), or mixed."},
                    "parameters": {"type": "integer", "minimum": 0, "description": "Weights in the file (lm_head.weight and buffers excluded)."},
                    "transformer_prefix": {"type": "boolean", "description": "The names started with transformer. (GPT2LMHeadModel)."},
                    "lm_head": {"type": "string"}},
                "required": ["name", "file", "module", "config", "n_head_from", "dtype", "parameters", "transformer_prefix", "lm_head"], "additionalProperties": False}}},
                "required": ["models"], "additionalProperties": False}}}}}}}
    paths["/openapi.json"] = {"get": {"operationId": "openapi", "summary": "This document.", "responses": {"200": {
        "description": "OpenAPI 3.1 document", "content": {"application/json": {"schema": {"type": "object"}}}}}}}

    schemas.update({
        "Tensor": {"description": "Nested arrays (as tensor.tolist() gives), {\"shape\", \"data\"} flat row-major, or {\"shape\", \"dtype\", \"base64\"} binary. In replies, masked_scores carries -inf as null.",
                   "oneOf": [{"$ref": "#/components/schemas/NestedArray"}, {"$ref": "#/components/schemas/FlatTensor"},
                             {"$ref": "#/components/schemas/BinaryTensor"}]},
        "BinaryTensor": {"type": "object", "description": "The tensor's little-endian, row-major bytes in base64 (RFC 4648 alphabet, '=' padding optional), as embedding APIs return vectors: float32 by default, float16, or uint8 (0/1) for masks.",
            "properties": {
                "shape": {"type": "array", "minItems": 1, "maxItems": 4, "items": INT1},
                "dtype": {"type": "string", "enum": ["float32", "float16", "uint8", "bool"], "default": "float32"},
                "base64": {"type": "string"}},
            "required": ["shape", "base64"], "additionalProperties": False},
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
                "module": {"type": "string", "enum": [m for e in tables["endpoints"] for m in e["modules"]]},
                "shape": {"$ref": "#/components/schemas/Shape"},
                **{o["name"]: output_schema(o) for o in tables["outputs"]},
            }, "required": ["module", "shape"], "additionalProperties": False},
        "Error": error_schema(tables["errors"]),
    })
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "attention-server", "version": "0.1.0",
                 "description": "The attention modules of the \"attention mechanisms\" chapters, PyTorch-exact, over HTTP. Every endpoint also answers OPTIONS (CORS preflight)."},
        "paths": paths,
        "components": {"schemas": schemas},
    }
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if sys.argv[2] == "-":
        sys.stdout.write(text)
    else:
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(text)
        os.replace(sys.argv[2] + ".tmp", sys.argv[2])


main()
