#!/usr/bin/env python3
"""Writes the OpenAPI document that the server embeds and serves at /openapi.json.

    python3 api/openapi/gen.py TABLES.json OUT.json      (OUT.json "-": stdout)

`make` runs it as build/tools/api-tables > build/gen/tables.json, then this,
which writes build/gen/openapi.json; api/openapi/doc.S embeds that file. The
endpoints and their modules, the fields of each module, the outputs and the
error codes come from TABLES.json (api/tables.c prints the C tables); the
examples from api/examples/; the prose (field descriptions, summaries) is
below. tests/test_api_openapi.c runs this script on the tables of the test
program itself and checks that it reproduces the embedded document.

The document is meant for client generators as much as for readers
(tests/test_api_clients.c runs openapi-typescript, tsc --strict and redocly
lint on it): tensors are one schema per rank, never a schema that refers to
itself; replies have their own tensor schemas of plain numbers; the request
schemas live under components/requestBodies, the one place where
openapi-typescript leaves a property with a `default` optional, and no
schema elsewhere has a `default`.
"""
import glob
import json
import os
import sys

import gen_generate  # generation, /v1/completions, /tokenize (beside this file)
import inside  # hooks, ablate, patch, logit_lens (beside this file)

INT1 = {"type": "integer", "minimum": 1, "maximum": 2147483647}
SCHEMAS = "#/components/schemas/"


def ref(name):
    return {"$ref": SCHEMAS + name}


# Tensors are described without a schema that refers to itself (client
# generators turn such a schema into a type that does not compile, or into
# `any`): one schema per rank, up to the largest rank a tensor has
# (API_MAX_RANK, 4), each a plain nested array of its element.
MAX_RANK = 4


def nested(rank, item):
    """A rank-`rank` nested array of `item`, every axis non-empty."""
    s = item
    for _ in range(rank):
        s = {"type": "array", "minItems": 1, "items": s}
    return s


def one_of(names, description=None):
    s = {"oneOf": [ref(n) for n in names]}
    if description is not None:
        s["description"] = description
    return s


# A request tensor: nested arrays of one of these ranks, flat or binary.
def numbers(lo, hi):
    return one_of(["Numbers%d" % r for r in range(lo, hi + 1)] + ["FlatTensor", "BinaryTensor"])


def masks(lo, hi, kind):
    return one_of(["%s%d" % (kind, r) for r in range(lo, hi + 1)] + ["FlatMask", "BinaryTensor"])


FIELDS = {
    "module": ({"type": "string"}, "The Python class to run; each endpoint lists the ones it serves and its default."),
    "inputs": (numbers(2, 3), "Token embeddings: [T][d_in] (one sequence; outputs then have no batch axis) or [B][T][d_in], as nested arrays, {\"shape\", \"data\"} flat row-major or {\"shape\", \"dtype\", \"base64\"} binary. Ragged arrays, non-numbers, values beyond float32 and empty axes are rejected with the path of the element, e.g. \"inputs[1][2]\"."),
    "tokens": ({"type": "array", "items": {"type": "string"}}, "Labels of the T tokens (L queries for sdpa), echoed back for viewers; their count must equal T. Returned by default when given."),
    "return": ({"type": "array", "items": {"type": "string", "enum": []}},  # the output table's names
        "Outputs to include (default [\"context\", \"attn_weights\"], plus \"tokens\" when tokens are given). An unknown name is a 400."),
    "precision": ({"type": "integer", "minimum": 1, "maximum": 9}, "Significant digits of every float in the reply. Default: the shortest decimal that reads back as the same float32."),
    "output_format": ({"type": "string", "enum": ["nested", "flat", "base64", "safetensors", "png", "svg"], "default": "nested"}, "Tensors as nested arrays, {\"shape\": [...], \"data\": [...]} flat row-major, {\"shape\", \"dtype\", \"base64\"} binary (little-endian bytes in base64), or the whole reply as one safetensors file (application/octet-stream; also the default when the request's Accept header prefers application/octet-stream to application/json). png and svg (also chosen by Accept: image/png or image/svg+xml) draw attn_weights, after heads, query_rows and averaging, as a heat map: one panel per batch entry and head in a grid of ceil(sqrt(n)) columns 4 pixels apart (PNG) or 24 (SVG), rows = queries, columns = keys, cell x cell pixels per weight, viridis coloured at round(255 v) with v as color_scale gives. The SVG labels both axes with the tokens (or positions), titles each panel and puts each weight in a <title>. An image needs attn_weights in return and does not combine with top_k."),
    "heads": ({"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}}, "Map-shaped outputs (attn_scores, masked_scores, attn_weights, mask, dropout_mask) keep only these heads, in this order (distinct; each below num_heads). With average_attn_weights, attn_weights is the mean over these heads. Other outputs are unaffected."),
    "query_rows": ({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 0}}, "[start, stop]: map-shaped outputs keep only the query rows start..stop-1 (0 <= start < stop <= T). Other outputs are unaffected."),
    "top_k": ({"type": "integer", "minimum": 1, "maximum": 1048576}, "Each map-shaped output becomes, for every query row, its k largest entries: {\"indices\": [...], \"values\": [...]}, each shaped like the map with the last axis k; larger values first, ties to the lower index; masked entries (mask 1, or -inf scores) are never chosen; rows with fewer than k others are padded with index -1 and value 0. In safetensors: <name>.indices (I32) and <name>.values. Applied after heads, query_rows and averaging."),
    "cell": ({"type": "integer", "minimum": 1, "maximum": 64}, "Images: pixels per weight on each side. Default: PNG 512 / max(rows, columns) within 1..32, SVG 24."),
    "color_scale": ({"type": "string", "enum": ["unit", "row", "max"], "default": "unit"}, "Images: weights coloured as they are (0..1, clamped), divided by the largest of their row, or by the largest of their panel. (Named color_scale because scale is the softmax scale.)"),
    "dtype": ({"type": "string", "enum": ["float32", "float16"], "default": "float32"}, "Float tensors of a base64 or safetensors reply as float32, or float16 (round to nearest even, as Tensor.half(); half the bytes)."),
    "causal": ({"type": "boolean"}, "Mask keys after the query (j > i; top-left aligned when L != S). Default true for CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention and GPT2CausalSelfAttention, false otherwise."),
    "scale": ({"type": "number"}, "Factor applied to Q·Kᵀ before the softmax. Default 1/sqrt(head_dim) (1 for simple)."),
    "attn_mask": (masks(2, 3, "Mask"), "[T][T] or [B][T][T] (sdpa and torch.nn.MultiheadAttention: [L][S] or [B][L][S]). Booleans or 0/1: true / 1 = masked out (as the chapters' mask buffer and torch.nn.MultiheadAttention; note this is the opposite of F.scaled_dot_product_attention's boolean mask). Any other numbers: an additive float mask, where \"-inf\", \"-Infinity\" or null stand for -inf."),
    "key_padding_mask": (masks(1, 2, "Padding"), "[B][S] or [S] (applied to every sequence): booleans or 0/1, true / 1 = padding, not attended."),
    "mask_method": ({"type": "string", "enum": ["neg_inf", "renorm"], "default": "neg_inf"}, "How masking is applied (chapter 3.5.1): -inf before the softmax, or softmax, zero the masked weights and renormalise the rows."),
    "average_attn_weights": ({"type": "boolean", "default": False}, "Multi-head modules: return attn_weights averaged over heads ([B][T][T]) instead of per head ([B][H][T][T]). Default false for every module."),
    "normalization": ({"type": "string", "enum": ["softmax", "sum"], "default": "softmax"}, "simple only: softmax, or the chapter's first naive normalisation (scores / row sum)."),
    "init": ({"type": "object", "properties": {"seed": {"type": "integer"}}, "required": ["seed"], "additionalProperties": False},
             "Generate the parameters as constructing the module after torch.manual_seed(seed) does, draw for draw. Exactly one of init and state_dict is required for modules with parameters."),
    "state_dict": ({"type": "object", "additionalProperties": numbers(1, MAX_RANK)},
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
    "key": (numbers(2, MAX_RANK), "torch.nn.MultiheadAttention: key inputs [B][S][kdim] (same rank as inputs; default: inputs). sdpa: keys [B][Hkv][S][E], [Hkv][S][E] or [S][E] (same rank as query)."),
    "value": (numbers(2, MAX_RANK), "torch.nn.MultiheadAttention: value inputs [B][S][vdim] (default: key). sdpa: values [B][Hkv][S][Ev] (same rank as query)."),
    "query": (numbers(2, MAX_RANK), "sdpa: queries [B][H][L][E]; rank 3 is [H][L][E] (no batch axis in the outputs), rank 2 [L][E] (one head, no batch). H must be a multiple of Hkv (grouped-query attention)."),
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
    "400": "Malformed JSON (code invalid_json, with line and column), a missing field (missing_field), an unknown field (unknown_field), a wrong type (invalid_type), a bad value or configuration (invalid_argument, e.g. a module the endpoint does not serve), disagreeing sizes (invalid_shape, e.g. d_out not divisible by num_heads, T over context_length, ragged arrays), NaN or values beyond float32 (non_finite), a binary tensor whose text is not base64 (invalid_base64), a gzip body that is not one well-formed gzip member (invalid_gzip), unsound HTTP framing (bad_request: Content-Length twice or not a number, Content-Length with Transfer-Encoding, a transfer coding that does not end in chunked, HTTP/1.1 without Host; the connection is closed).",
    "406": "The Accept header takes none of the formats the endpoint writes (not_acceptable), and the body names no output_format; the message lists those it writes.",
    "411": "A POST with neither Content-Length nor Transfer-Encoding: chunked (length_required); the connection is closed.",
    "404": "Unknown path (not_found).",
    "405": "Method not allowed (method_not_allowed); the Allow header lists the allowed ones.",
    "415": "A Content-Encoding other than gzip or identity (unsupported_encoding); the Accept-Encoding header lists those taken.",
    "413": "The body is over --max-body, the request would make the server hold more than --max-elements values or need more memory than the whole --max-memory, or take more work than --max-work (too_large), checked before allocating or computing.",
    "500": "Internal error (internal_error; a result holding NaN or infinity), or out_of_memory when the server cannot allocate even the error reply.",
    "501": "A transfer coding other than chunked, such as gzip before chunked (not_implemented): send Content-Encoding: gzip instead; the connection is closed.",
    "503": "Every worker is busy and the queue is full, the memory budget is taken for now, or --max-connections are open (overloaded, with Retry-After), or memory ran out (out_of_memory).",
}


def reply_content(endpoint, formats, json_schema):
    """The 200 reply's media types: one per format the endpoint writes (the
    formats' table), JSON formats sharing application/json."""
    content = {}
    for name in endpoint["formats"]:
        f = formats[name]
        if f["json"]:
            content[f["mime"]] = {"schema": json_schema}
        elif f["mime"] in ("image/svg+xml", "text/event-stream"):
            content[f["mime"]] = {"schema": {"type": "string"}}
        else:
            content[f["mime"]] = {"schema": {"type": "string", "format": "binary"}}
    return content


def request_schema(ep, modules, tables, endpoint):
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
        if f == "output_format":
            s["enum"] = endpoint["formats"]
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
    "params": {"type": "object", "additionalProperties": ref("ReplyParam")},
    "tokens": {"type": ["array", "null"], "items": {"type": "string"}},
    "timing": {"type": "object", "properties": {k: {"type": "number", "minimum": 0} for k in ["parse_ms", "compute_ms", "serialise_ms"]},
               "required": ["parse_ms", "compute_ms", "serialise_ms"], "additionalProperties": False},
}
# Tensor outputs whose nested and flat forms write -inf as null (the output
# table has no column for it).
NULL_OUTPUTS = ["masked_scores"]


def output_schema(o):
    if o["element"] == "json":
        s = dict(JSON_OUTPUTS[o["name"]])
    else:
        s = ref("ReplyScores" if o["name"] in NULL_OUTPUTS else "ReplyTensor")
        if o.get("map"):  # with top_k, {"indices", "values"}
            s = {"oneOf": [s, ref("TopK")]}
    if o.get("description") is not None:
        s["description"] = o["description"]
    return s


def tensor_schemas():
    """The request and reply tensor schemas of components/schemas. None has a
    `default`: openapi-typescript makes a property with a default required."""
    shape = {"type": "array", "minItems": 1, "maxItems": MAX_RANK + 1, "items": INT1,
             "description": "The sizes of the axes, outermost first (at most 4 in requests; 5 for GPT-2's attn_weights [layers][B][n_head][T][T])."}
    mask_value = {"oneOf": [{"type": "number"}, {"type": "boolean"}, {"type": "string", "enum": ["-inf", "-Infinity"]},
                            {"type": "null"}]}
    padding_value = {"oneOf": [{"type": "boolean"}, {"type": "integer", "enum": [0, 1]}]}
    score = {"type": ["number", "null"]}

    def flat(item, desc):
        return {"type": "object", "description": desc, "properties": {"shape": shape, "data": {"type": "array", "items": item}},
                "required": ["shape", "data"], "additionalProperties": False}

    s = {}
    for r in range(1, MAX_RANK + 1):
        s["Numbers%d" % r] = dict(nested(r, {"type": "number"}), description="A tensor of rank %d as nested arrays of numbers (tensor.tolist())." % r)
    for r in (2, 3):
        s["Mask%d" % r] = dict(nested(r, {"$ref": SCHEMAS + "MaskValue"}), description="An attention mask of rank %d as nested arrays." % r)
    for r in (1, 2):
        s["Padding%d" % r] = dict(nested(r, padding_value), description="A key padding mask of rank %d: booleans or 0/1, true / 1 = padding." % r)
    for r in range(2, MAX_RANK + 1):
        s["Scores%d" % r] = dict(nested(r, score), description="Scores of rank %d; null stands for -inf (a masked entry)." % r)
    s["MaskValue"] = dict(mask_value, description="One element of attn_mask: a boolean (true = masked out), a number (additive), or \"-inf\", \"-Infinity\" or null for -inf.")
    s["FlatTensor"] = flat({"type": "number"}, "A tensor as its shape and its elements in row-major order.")
    s["FlatMask"] = flat(ref("MaskValue"), "A mask as its shape and its elements in row-major order (attn_mask: any mask value; key_padding_mask: booleans or 0/1).")
    s["FlatScores"] = flat(score, "Scores as their shape and their elements in row-major order; null stands for -inf.")
    s["BinaryTensor"] = {"type": "object", "description": "A tensor as its little-endian, row-major bytes in base64 (RFC 4648 alphabet, '=' padding optional), as embedding APIs return vectors. dtype: float32 when absent; float16; uint8 (0/1) or bool for masks.",
                         "properties": {"shape": shape, "dtype": {"type": "string", "enum": ["float32", "float16", "uint8", "bool"]},
                                        "base64": {"type": "string"}},
                         "required": ["shape", "base64"], "additionalProperties": False}
    s["BinaryReply"] = {"type": "object", "description": "A tensor of an output_format base64 reply: its little-endian, row-major bytes in base64. Float tensors are float32 or float16 (the request's dtype; -inf stays -inf), the mask output uint8 (0/1).",
                        "properties": {"shape": shape, "dtype": {"type": "string", "enum": ["float32", "float16", "uint8"]},
                                       "base64": {"type": "string"}},
                        "required": ["shape", "dtype", "base64"], "additionalProperties": False}
    forms = "Nested arrays of numbers with output_format nested (the default; rank 2 to %d: [T][S] for one head and no batch axis, up to [B][H][T][S]), FlatTensor with flat, BinaryReply with base64." % MAX_RANK
    s["ReplyTensor"] = one_of(["Numbers%d" % r for r in range(2, MAX_RANK + 1)] + ["FlatTensor", "BinaryReply"],
                              "A tensor output. " + forms)
    s["ReplyScores"] = one_of(["Scores%d" % r for r in range(2, MAX_RANK + 1)] + ["FlatScores", "BinaryReply"],
                              "masked_scores: as ReplyTensor, except that the nested and flat forms carry -inf (a masked entry) as null.")
    s["ReplyParam"] = one_of(["Numbers%d" % r for r in range(1, MAX_RANK + 1)] + ["FlatTensor", "BinaryReply"],
                             "One entry of params: nested arrays (rank 1 for biases, 2 for weights, 4 for GPT-2's bias buffer), FlatTensor or BinaryReply, by output_format.")
    s["BinaryIndices"] = {"type": "object", "description": "top_k indices of an output_format base64 reply: little-endian int32 in base64.",
                          "properties": {"shape": shape, "dtype": {"type": "string", "enum": ["int32"]},
                                         "base64": {"type": "string"}},
                          "required": ["shape", "dtype", "base64"], "additionalProperties": False}
    s["TopKIndices"] = one_of(["Numbers%d" % r for r in range(2, MAX_RANK + 1)] + ["FlatTensor", "BinaryIndices"],
                              "top_k indices: nested arrays, FlatTensor or BinaryIndices, by output_format.")
    s["TopK"] = {"type": "object", "description": "A map with top_k: per query row the column indices of the k largest entries (-1 = padding) and their values, each shaped like the map with its last axis k.",
                 "properties": {"indices": ref("TopKIndices"), "values": ref("ReplyTensor")},
                 "required": ["indices", "values"], "additionalProperties": False}
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
GPTMODEL_EXAMPLE = {"module": "GPTModel", "vocab_size": 50, "context_length": 16, "emb_dim": 8, "n_heads": 2,
                    "n_layers": 2, "drop_rate": 0.1, "qkv_bias": False, "init": {"seed": 123},
                    "idx": [3, 14, 15, 9], "return": ["next_token", "attn_weights"], "precision": 3}


def hparam_schema(hp):
    """One hyperparameter of an architecture's row (tables["architectures"])."""
    t = hp["type"]
    if t == "integer":
        out = {"type": "integer", "minimum": hp["minimum"], "maximum": 2147483647}
    elif t == "number":
        out = {"type": "number", "minimum": 0, "maximum": 1} if hp["field"] == "dropout" else {"type": "number"}
    elif t == "boolean":
        out = {"type": "boolean"}
    elif t == "rope_scaling":
        out = {"type": ["object", "null"], "description": "Hugging Face's rope_scaling: null, or {rope_type (or type): default, linear or llama3, factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}."}
    elif t == "layer_types":
        out = {"type": "array", "items": {"type": "string", "enum": ["sliding_attention", "full_attention"]}}
    else:
        out = {"type": "string", "enum": hp["choices"]}
    if hp["default"] is not None:
        out["default"] = hp["default"]
    return out


def arch_config_schema(arch, models):
    """A reply's config for one architecture: its row's request names."""
    props = {hp["name"]: hparam_schema(hp) for hp in arch["hparams"] if hp["type"] != "layer_types"}
    for v in props.values():
        v.pop("default", None)
        if v.get("type") == "integer":  # a size derived from others is null
            v["type"] = ["integer", "null"]
    return {"type": "object", "title": arch["name"], "properties": props, "required": list(props),
            "additionalProperties": False,
            "description": "%s's config under its own names%s." % (arch["name"], " (from the tensors' shapes, checked against config.json for a folder)" if models else "")}


def config_fields(archs):
    """Every architecture's config fields as request properties: one per name,
    described by the rows that take it."""
    props = {}
    for arch in archs:
        for hp in arch["hparams"]:
            if hp["name"] in props:
                props[hp["name"]]["description"] = props[hp["name"]]["description"].replace(
                    ": ", ", %s's: " % arch["name"], 1)
                continue
            s_ = hparam_schema(hp)
            s_["description"] = "%s's %s: %s.%s" % (arch["name"], hp["name"], hp["what"],
                                                   " Required without model." if hp["default"] is None else "")
            props[hp["name"]] = s_
    return props


def model_gpt2(paths, schemas, bodies, endpoint, formats, archs):
    """POST /model and its alias /model/gpt2 (api/model/): the whole models of
    core's architecture table (seed 003's GPT2, the book's GPTModel, ...), not
    modules of the tables. Its
    request is under components/requestBodies like the others (its defaults
    stay optional); its tensors are the per-rank schemas, up to rank 5 for
    attn_weights [layers][B][n_head][T][T]."""
    def size(desc, default=None, minimum=1):
        s = {"type": "integer", "minimum": minimum, "maximum": 2147483647, "description": desc}
        if default is not None:
            s["default"] = default
        return s

    def field(name, **extra):
        s = dict(FIELDS[name][0])
        s.update(extra)
        s.setdefault("description", FIELDS[name][1])
        return s
    request = {
        "type": "object",
        "description": "The model's class (module) with its config fields under that class's own names, and the parameters (init or state_dict); or instead the name of a model loaded at start (model); the token ids (idx) or text, and the outputs wanted. Any other field is a 400 unknown_field (another class's config name is told apart: \"block_size is GPT2's name: GPTModel calls it context_length\"); null is the same as absent.",
        "properties": {
            "module": {"type": "string", "enum": [a["name"] for a in archs], "default": archs[0]["name"],
                       "description": "The architecture, a row of core's ATTN_ARCH_MAP: " + "; ".join(
                           "%s (%s: %s)" % (a["name"], a["what"], ", ".join(h["name"] for h in a["hparams"])) for a in archs) +
                       ". With model, the loaded model's own (another is a 400 naming module)."},
            "model": {"type": "string", "description": "A model the server loaded at start (--model NAME=DIR, a Hugging Face folder with config.json, model.safetensors or its shards, and its tokenizer; or --model NAME=FILE.safetensors of GPT-2 or of the book's GPTModel; GET /models lists them): it brings the class, the config and the parameters, so every config field of either class, init and state_dict must be left out (400 naming the field); text then uses the folder's tokenizer unless tokenizer names another. An unknown name is a 400 invalid_argument with field model."},
            "init": {"type": "object", "properties": {"seed": {"type": "integer"}}, "required": ["seed"], "additionalProperties": False,
                     "description": "torch.manual_seed(seed); GPT2(config): the parameters bit for bit (nn.Embedding's normal_, nn.Linear's kaiming-uniform weights and uniform biases, lm_head's draws before it is tied). Exactly one of init and state_dict (or model)."},
            "state_dict": {"type": "object", "additionalProperties": numbers(1, MAX_RANK),
                           "description": "gpt2_min.py's state_dict names: wte.weight, wpe.weight, h.N.ln_1.weight, h.N.attn.c_attn.weight, h.N.attn.c_proj.bias, h.N.mlp.fc.weight, h.N.mlp.proj.weight, ln_f.bias, ... The h.N.attn.bias buffers may be left out; lm_head.weight may be left out (it is wte.weight) or given with the same values."},
            "idx": dict(numbers(1, 2), description="Token ids: [T] (replies then have no batch axis) or [B][T], integers in [0, vocab_size), T <= block_size. Exactly one of idx and text."),
            "text": {"type": "string", "description": "Text instead of idx: GPT-2's byte-level BPE of it (exactly as OpenAI's encoder.py and tiktoken's r50k_base; <|endoftext|> is plain text) by a tokenizer the server loaded at start (--tokenizer NAME=DIR) becomes idx [T]. A 400 naming text when it is empty, over block_size tokens, has a token id >= vocab_size, or the server has no tokenizer. The reply then returns idx and tokens by default."},
            "add_special": {"type": "boolean", "default": True, "description": "Put the tokenizer's template around text and the inside fields' texts (BOS for Llama and Gemma folders), as transformers' tokenizer(text) does; false leaves it out. GPT-2's adds nothing."},
            "tokenizer": {"type": "string", "description": "The name of a loaded tokenizer (--tokenizer NAME=DIR) for text and the tokens output; without it, the model folder's own, else the server's default (GET /models' default_tokenizer: the first --tokenizer, else the first model folder's). An unknown name is a 400 naming tokenizer that lists those loaded."},
            "training": {"type": "boolean", "default": False, "description": "model.train(): dropout draws as PyTorch's do, from the generator left by init (or dropout_seed)."},
            "dropout_seed": {"type": "integer", "description": "torch.manual_seed(dropout_seed) right before the forward call."},
            "return": {"type": "array", "items": {"type": "string", "enum": ["idx", "tokens", "logits", "next_token", "attn_weights", "hidden_states", "dropout_masks", "params", "timing"]},
                       "description": "Outputs to include (default [\"logits\", \"next_token\"], plus \"idx\" and \"tokens\" with text). tokens needs a tokenizer (named, the model folder's, or the server's default). next_token without logits computes the last position's logits only; with a tokenizer, next_token_text comes with it. dropout_masks and params are groups of named tensors (safetensors: \"<group>.<name>\"; at most 114 tensors in one safetensors reply, else a 400 naming return)."},
            "layers": {"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "Increasing layer indices whose maps attn_weights returns (default: every layer)."},
            "heads": field("heads", description="attn_weights keeps only these heads of each layer, in this order (distinct; each below n_head)."),
            "query_rows": field("query_rows", description="[start, stop]: attn_weights keeps only the query rows start..stop-1 (0 <= start < stop <= T)."),
            "top_k": field("top_k", description="attn_weights becomes, for every query row, its k largest weights: {\"indices\": [...], \"values\": [...]}, each shaped like the maps with the last axis k; larger values first, ties to the lower index; keys after the query (masked) are never chosen, so row i has i + 1 candidates and is padded with index -1 and value 0. In safetensors: attn_weights.indices (I32) and attn_weights.values. Applied after layers, heads and query_rows."),
            "precision": field("precision"),
            "output_format": {"type": "string", "enum": endpoint["formats"], "default": "nested",
                              "description": "Tensors as nested arrays, {\"shape\", \"data\"} flat row-major, {\"shape\", \"dtype\", \"base64\"} binary, or the whole reply as one safetensors file (application/octet-stream; also the default when the request's Accept header prefers application/octet-stream): idx and next_token I32, logits, attn_weights and hidden_states F32 (or F16), config, shape, layers, model, tokens and timing as JSON strings in __metadata__. No images here."},
            "dtype": field("dtype"),
        },
        "anyOf": [{"required": ["model"]}] + [
            {"required": ([] if i == 0 else ["module"]) + [h["name"] for h in a["hparams"] if h["default"] is None]}
            for i, a in enumerate(archs)],
        "additionalProperties": False,
    }
    # every architecture's config fields, from its row
    for name, prop in config_fields(archs).items():
        request["properties"].setdefault(name, prop)
    gen_generate.model_fields(request["properties"], None, schemas)
    bodies["Gpt2Request"] = {"description": "The /model/gpt2 request.", "required": True, "content": {"application/json": {
        "schema": request, "examples": {"gpt2_seed": {"value": GPT2_EXAMPLE}, "gptmodel_seed": {"value": GPTMODEL_EXAMPLE}}}}}
    schemas["Numbers5"] = dict(nested(5, {"type": "number"}), description="A tensor of rank 5 as nested arrays of numbers (GPT-2's attn_weights with a batch axis).")
    schemas["Gpt2Tensor"] = one_of(["Numbers%d" % r for r in range(2, 6)] + ["FlatTensor", "BinaryReply"],
                                   "A /model/gpt2 tensor: nested arrays of numbers with output_format nested (the rank depends on the batch axis of idx), FlatTensor with flat, BinaryReply with base64.")
    schemas["Gpt2Indices"] = one_of(["Numbers4", "Numbers5", "FlatTensor", "BinaryIndices"],
                                    "top_k indices of the maps: nested arrays, FlatTensor or BinaryIndices, by output_format.")
    schemas["Gpt2TopK"] = {"type": "object", "description": "attn_weights with top_k: per query row the key indices of the k largest weights (-1 = padding) and the weights, each shaped like the maps with the last axis k.",
                           "properties": {"indices": {"oneOf": [ref("Gpt2Indices"), ref("NoMaps")]}, "values": {"oneOf": [ref("Gpt2Tensor"), ref("NoMaps")]}},
                           "required": ["indices", "values"], "additionalProperties": False}
    schemas["NoMaps"] = {"type": "array", "maxItems": 0, "items": {"type": "number"}, "description": "No layer's maps (n_layer 0, or \"layers\": []): an empty list in every format."}
    schemas["Gpt2Response"] = {
        "type": "object",
        "description": "Every tensor loses its batch axis when idx was [T]. Floats are the shortest decimals that read back as the same float32, or `precision` digits.",
        "properties": {
            "module": {"type": "string", "enum": [a["name"] for a in archs]},
            "model": {"type": "string", "description": "The loaded model's name, when the request named one."},
            "config": {"oneOf": [arch_config_schema(a, False) for a in archs], "description": "The config used, under the class's own names."},
            "shape": {"type": "object", "properties": dict({k: {"type": "integer", "minimum": 1} for k in ["batch", "tokens", "head_dim", "heads", "kv_heads"]},
                                                           kv_head_of={"type": "array", "items": {"type": "integer", "minimum": 0}}),
                      "required": ["batch", "tokens", "head_dim"], "additionalProperties": False,
                      "description": "heads, kv_heads and kv_head_of with grouped queries (fewer key/value heads than query heads): query head h reads key/value head kv_head_of[h] = h / (heads / kv_heads); attn_weights and hook_pattern have one map per query head, hook_k and hook_v one per key/value head."},
            "idx": {"oneOf": [ref("Numbers1"), ref("Numbers2")], "description": "The token ids, [T] or [B][T] (nested in every JSON format)."},
            "tokens": {"type": "array", "description": "[B][T] (or [T]) token texts as BertViz shows them: each token's bytes as UTF-8, a piece of a character split over tokens shown as U+FFFD (as tiktoken's decode of one token); \" journey\" keeps its leading space.",
                       "items": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}},
            "logits": dict(ref("Gpt2Tensor"), description="[B][T][vocab_size]."),
            "next_token": {"description": "argmax of the last position's logits (the first on ties), per sequence: [B] or one integer.",
                           "oneOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
            "next_token_text": {"description": "With a tokenizer at hand (named, the model folder's, or the server's default): next_token's text as tokens shows it, [B] or one string; null for an id past the tokenizer's vocabulary.",
                                "oneOf": [{"type": ["string", "null"]}, {"type": "array", "items": {"type": ["string", "null"]}}]},
            "dropout_masks": {"type": "object", "additionalProperties": {"oneOf": [ref("Gpt2Tensor"), ref("Numbers1")]},
                              "description": "Every dropout call's multipliers (0 or 1/(1-p); all 1 in eval mode), named after its nn.Dropout: GPT2 drop [B][T][n_embd], h.N.attn.resid_drop, h.N.mlp.drop; GPTModel drop_emb [B][T][emb_dim], trf_blocks.N.att.dropout [B][n_heads][T][T] (on the weights), trf_blocks.N.drop_shortcut.0 and .1 (its calls after the attention and after the feed-forward)."},
            "params": {"type": "object", "additionalProperties": {"oneOf": [ref("Gpt2Tensor"), ref("Numbers1")]},
                       "description": "The model's state_dict under its class's names, buffers included (GPT2's lm_head.weight too: it is wte.weight): {k: torch.tensor(v)} loads with load_state_dict, and it is a valid state_dict field. A loaded model's are its weights as the server holds them."},
            "layers": {"type": "array", "items": {"type": "integer"}, "description": "The layers of attn_weights."},
            "attn_weights": {"oneOf": [ref("Gpt2Tensor"), ref("Gpt2TopK"), ref("NoMaps")], "description": "[layers][B][n_head][T][T] softmax weights of each block (before resid_drop, which acts on the output), after heads and query_rows; Gpt2TopK with top_k."},
            "hidden_states": dict(ref("Gpt2Tensor"), description="[n_layer + 1][B][T][n_embd] as Hugging Face's output_hidden_states: each block's input (first: embeddings after drop), last the output of ln_f."),
            "timing": {"type": "object", "properties": {k: {"type": "number", "minimum": 0} for k in ["parse_ms", "compute_ms", "serialise_ms"]},
                       "required": ["parse_ms", "compute_ms", "serialise_ms"], "additionalProperties": False},
        },
        "required": ["module", "config", "shape"], "additionalProperties": False}
    schemas["Gpt2Response"]["properties"]["generation"] = gen_generate.ref("Generation")
    responses = {"200": {"description": "The requested outputs: JSON, or with output_format safetensors one safetensors file. Replies over --gzip-min-size are gzip when the request's Accept-Encoding takes it.",
                         "content": reply_content(endpoint, formats, ref("Gpt2Response"))}}
    for st, desc in ERROR_STATUSES.items():
        if st != "404":
            responses[st] = error_response(desc)
    alias = endpoint["path"] != "/model"
    paths[endpoint["path"]] = {"post": {
        "operationId": endpoint["path"].strip("/").replace("/", "_"),
        "tags": ["models"],
        "summary": ("The alias of POST /model (its path when GPT-2 was the only architecture): the same request and reply. " if alias else "") +
                   "A whole model of any architecture (" + ", ".join(a["name"] for a in archs) + "), from a seed, a state_dict or a model loaded at start: logits, next token, every layer's attention maps, hidden states, hooks, ablation, patching, the logit lens and generation, PyTorch-exact.",
        "description": "One block for every architecture, composed as its row of core/arch/ says. GPT2: x = wte(idx) + wpe(pos), drop, n_layer blocks (x + attn(ln_1(x)), x + mlp(ln_2(x))), ln_f, lm_head tied to wte; each block's attention is GPT2CausalSelfAttention of /attention/multihead. GPTModel: x = tok_emb(idx) + pos_emb(pos), drop_emb, n_layers TransformerBlocks (x + drop_shortcut(att(norm1(x))), x + drop_shortcut(ff(norm2(x)))), final_norm, out_head; att is chapter 3's MultiHeadAttention. The content type is not checked: the body is parsed as JSON. A body sent with Content-Encoding: gzip is inflated first.",
        "requestBody": {"$ref": "#/components/requestBodies/Gpt2Request"},
        "responses": responses,
    }}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        tables = json.load(f)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # api/
    examples = {}
    for path in sorted(glob.glob(os.path.join(root, "examples", "*.json"))):
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            examples.setdefault(name.split("_")[0], {})[name] = {"value": json.load(f)}
    paths = {}
    schemas = {}
    bodies = {}
    formats = {f["name"]: f for f in tables["formats"]}
    for endpoint in tables["endpoints"]:
        if endpoint["kind"] == "model":
            model_gpt2(paths, schemas, bodies, endpoint, formats, tables["architectures"])
            inside.extend(tables, bodies["Gpt2Request"]["content"]["application/json"]["schema"],
                          schemas["Gpt2Response"])
            continue
        if endpoint["kind"] in ("openai", "embeddings", "tokens"):  # gen_generate.py
            errors = {st: error_response(d) for st, d in ERROR_STATUSES.items() if st != "404"}
            errors["404"] = error_response("No such model (not_found, field model).")
            gen_generate.endpoint(paths, schemas, bodies, endpoint, errors)
            continue
        ep, modules, summary = endpoint["name"], endpoint["modules"], SUMMARIES[endpoint["name"]]
        cname = ep.capitalize() + "Request"
        # Under components/requestBodies, not components/schemas: openapi-typescript
        # (with its default --default-non-nullable) makes every property that has a
        # `default` required, except in request bodies.
        bodies[cname] = {"description": "The " + ep + " request.", "required": True, "content": {"application/json": {
            "schema": request_schema(ep, modules, tables, endpoint), "examples": examples.get(ep, {})}}}
        responses = {"200": {"description": "The requested outputs. With output_format safetensors: one safetensors file (8-byte little-endian header length, the JSON header {name: {dtype F32|F16|BOOL, shape, data_offsets}, __metadata__: {format, module, shape, tokens, timing as JSON strings}} padded to 8 bytes, then the tensors' bytes; float tensors first). Replies over --gzip-min-size are gzip when the request's Accept-Encoding takes it (Content-Encoding: gzip, Vary: Accept-Encoding). A JSON reply of --stream-min-size (128 MiB by default) or more to a client that does not take gzip is streamed (Transfer-Encoding: chunked) while it is written; if the server runs out of memory after it has begun, the chunked body ends incomplete instead of a 503.",
            "content": reply_content(endpoint, formats, ref("AttentionResponse"))}}
        for st, desc in ERROR_STATUSES.items():
            if st != "404":
                responses[st] = error_response(desc)
        paths[endpoint["path"]] = {"post": {
            "operationId": "attention_" + ep,
            "tags": ["attention"],
            "summary": summary,
            "description": "Modules: " + ", ".join(modules) + " (default " + modules[0] + "). The content type is not checked: the body is parsed as JSON. A body sent with Content-Encoding: gzip is inflated first (--max-body applies to the inflated size).",
            "requestBody": {"$ref": "#/components/requestBodies/" + cname},
            "responses": responses,
        }}
    status_ok = {"description": "OK", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"status": {"type": "string", "enum": ["ok"]}}, "required": ["status"], "additionalProperties": False}}}}
    paths["/healthz"] = {"get": {"operationId": "healthz", "tags": ["operations"], "summary": "Liveness.", "responses": {"200": status_ok}}}
    paths["/readyz"] = {"get": {"operationId": "readyz", "tags": ["operations"], "summary": "Readiness: ready to take requests.", "responses": {
        "200": status_ok, "503": error_response("Not ready: the server is shutting down (draining; said on a connection still open, new connections are refused).")}}}
    paths["/metrics"] = {"get": {"operationId": "metrics", "tags": ["operations"], "summary": "Prometheus text format: requests by endpoint and status, latency histogram, in-flight requests, bytes in and out.",
                                 "responses": {"200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}
    paths["/version"] = {"get": {"operationId": "version", "tags": ["operations"], "summary": "Name, version, build, OpenBLAS core and thread count.", "responses": {"200": {
        "description": "Version", "content": {"application/json": {"schema": {"type": "object", "properties": {
            "name": {"type": "string"}, "version": {"type": "string"},
            "build": {"type": "object", "additionalProperties": {"type": "string"}},
            "openblas": {"type": "object", "properties": {"core": {"type": "string"}, "threads": {"type": "integer", "minimum": 1}, "config": {"type": "string"},
                         "check": {"type": "object", "description": "The start-up check of the OpenBLAS kernels against a double-precision reference: passed, products compared, worst error over its float32 bound (passes below 1), its time, and the kernel sets that failed before (fallback_from, empty if none).",
                                   "properties": {"passed": {"type": "boolean"}, "products": {"type": "integer"}, "worst": {"type": "number"}, "ms": {"type": "number"}, "fallback_from": {"type": "string"}},
                                   "required": ["passed", "products", "worst", "ms", "fallback_from"], "additionalProperties": False}},
                         "required": ["core", "threads", "config", "check"], "additionalProperties": False}},
            "required": ["name", "version", "build", "openblas"], "additionalProperties": False}}}}}}}
    paths["/models"] = {"get": {"operationId": "models", "tags": ["models"], "summary": "The models loaded at start (--model NAME=DIR or NAME=FILE.safetensors, else the built-in demo model) that POST /model/gpt2 runs with {\"model\": NAME}, with their config and tokenizer.",
        "responses": {"200": {"description": "The loaded models, in the order of the --model options; without --model, the demo model \"shakespeare\" (an empty list with --demo-model off).",
            "content": {"application/json": {"schema": {"type": "object", "properties": {"models": {"type": "array", "items": {
                "type": "object", "properties": {
                    "name": {"type": "string"},
                    "file": {"type": "string", "description": "The weights' file name: FILE's base name, a folder's model.safetensors or model.safetensors.index.json."},
                    "folder": {"type": ["string", "null"], "description": "The folder's base name (--model NAME=DIR); null for a file."},
                    "shards": {"type": "integer", "minimum": 1, "description": "Files the weights were read from."},
                    "module": {"type": "string", "enum": [a["name"] for a in tables["architectures"]], "description": "The architecture's class, as requests spell it in module."},
                    "architecture": {"type": "string", "enum": [a["what"] for a in tables["architectures"]], "description": "What the architecture is, in words."},
                    "config": {"oneOf": [arch_config_schema(a, True) for a in tables["architectures"]]},
                    "n_head_from": {"type": "string", "enum": ["option", "config.json", "metadata", "n_embd/64", "emb_dim/64"], "description": "Where the head count came from (no shape says it): FILE:heads=N, the folder's config.json, the file's __metadata__ (n_head, or n_heads for GPTModel), or the width / 64 (GPT-2's head width)."},
                    "tokenizer": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {"name": {"type": "string"}, "tokens": {"type": "integer", "minimum": 1}}, "required": ["name", "tokens"], "additionalProperties": False}],
                                  "description": "The folder's tokenizer (named after the model; requests for it take text without a tokenizer field), or null."},
                    "dtype": {"type": "string", "description": "The file's weights: F32, F16 or BF16, or mixed."},
                    "weights_dtype": {"type": "string", "enum": ["F32", "F16", "BF16"], "description": "How the server holds the weight matrices (embeddings, projections, head; norms and biases are float32): --weights-dtype keep keeps an F16 or BF16 file half-size (widened inside the products: the results are those of the float32 copy of the same values), f32 widens, bf16 rounds to BF16."},
                    "weights_lossy": {"type": "boolean", "description": "true when the matrices were rounded to a narrower dtype than the file's (--weights-dtype bf16 on an F32 or F16 file): the model's outputs differ from the file's float32 ones (bench/bench_half.c reports the KL divergence)."},
                    "weights_bytes": {"type": "integer", "minimum": 0, "description": "Bytes the parameters take in memory (held once for every request)."},
                    "parameters": {"type": "integer", "minimum": 0, "description": "Weights in the file (a tied head and buffers excluded)."},
                    "transformer_prefix": {"type": "boolean", "description": "The names started with transformer. (GPT2LMHeadModel)."},
                    "lm_head": {"type": "string"},
                    "builtin": {"type": "boolean", "description": "The demo model built into the server (\"shakespeare\", served when no --model is given unless --demo-model off): its folder is the one it was embedded from."},
                    "chat_template": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
                        "source": {"type": "string", "enum": ["chat_template.jinja", "tokenizer_config.json's chat_template"]},
                        "error": {"type": ["string", "null"], "description": "Why the template did not compile (its file and line): the model serves everything but /v1/chat/completions, which answers 400 with it."}},
                        "required": ["source", "error"], "additionalProperties": False}],
                        "description": "The folder's chat template, which POST /v1/chat/completions renders the messages with; null: none."}},
                "required": ["name", "file", "folder", "shards", "module", "architecture", "config", "n_head_from", "dtype", "weights_dtype", "weights_lossy", "weights_bytes", "parameters", "transformer_prefix", "lm_head", "tokenizer", "builtin", "chat_template"], "additionalProperties": False}},
                "tokenizers": {"type": "array", "description": "Every tokenizer a /model/gpt2 request may name in tokenizer: --tokenizer's, then the model folders' (named after their models). Empty: text needs one.",
                               "items": {"type": "object", "properties": {"name": {"type": "string"}, "tokens": {"type": "integer", "minimum": 1}}, "required": ["name", "tokens"], "additionalProperties": False}},
                "default_tokenizer": {"type": ["string", "null"], "description": "The tokenizer a request without a tokenizer field and without a model folder's own uses: the first --tokenizer, else the first model folder's; null when there is none."}},
                "required": ["models", "tokenizers", "default_tokenizer"], "additionalProperties": False}}}}}}}
    gen_generate.v1_models(paths)
    paths["/"] = {"get": {"operationId": "viewer", "tags": ["operations"], "summary": "The attention map viewer: one HTML page with its script inline, embedded in the binary (ETag and Cache-Control: no-cache as /openapi.json).", "responses": {"200": {
        "description": "The page", "content": {"text/html": {"schema": {"type": "string"}}}}}}}
    etag = {"ETag": {"description": "A strong tag of this document; send it back in If-None-Match.", "schema": {"type": "string"}}}
    paths["/openapi.json"] = {"get": {"operationId": "openapi", "tags": ["operations"], "summary": "This document.", "responses": {
        "200": {"description": "OpenAPI 3.1 document (Cache-Control: no-cache)", "headers": etag,
                "content": {"application/json": {"schema": {"type": "object"}}}},
        "304": {"description": "Not Modified: If-None-Match named the current ETag; no body.", "headers": etag}}}}

    schemas.update(tensor_schemas())
    schemas.update({
        "Shape": {"type": "object", "description": "Sizes of the call: batch B (1 when the inputs had no batch axis), tokens T (L), kv_tokens S, d_in, d_out (width of context), num_heads H, head_dim.",
                  "properties": {k: {"type": "integer", "minimum": 1} for k in ["batch", "tokens", "kv_tokens", "d_in", "d_out", "num_heads", "head_dim"]},
                  "required": ["batch", "tokens", "kv_tokens", "d_in", "d_out", "num_heads", "head_dim"], "additionalProperties": False},
        "AttentionResponse": {"type": "object", "description": "Every tensor loses its batch axis when the inputs had none; single-head modules have no head axis. Floats are the shortest decimals that read back as the same float32, or `precision` digits.",
            "properties": {
                "module": {"type": "string", "enum": [m for e in tables["endpoints"] for m in e["modules"]]},
                "shape": ref("Shape"),
                **{o["name"]: output_schema(o) for o in tables["outputs"]},
            }, "required": ["module", "shape"], "additionalProperties": False},
        "Error": error_schema(tables["errors"]),
    })
    missing = [n for n in NULL_OUTPUTS if n not in [o["name"] for o in tables["outputs"]]]
    if missing:
        sys.exit("openapi-gen: NULL_OUTPUTS names %s, which the output table lacks" % missing)
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "attention-server", "version": "0.1.0",
                 "description": "The attention modules of the \"attention mechanisms\" chapters, PyTorch-exact, over HTTP. Every endpoint also answers OPTIONS (CORS preflight).",
                 "license": {"name": "MIT", "identifier": "MIT"}},
        "servers": [{"url": "/", "description": "The server that serves this document at /openapi.json (by default http://127.0.0.1:8080)."}],
        "security": [],
        "tags": [{"name": "attention", "description": "The attention modules: one endpoint per family, the module chosen by the request's module field."},
                 {"name": "models", "description": "Whole models: seed 003's GPT2 and the book's GPTModel from a seed or a state_dict, and GPT-2 or GPTModel folders and files loaded at start."},
                 {"name": "openai", "description": "The conventions clients already speak: OpenAI's completions, embeddings and models, llama.cpp's tokenize and detokenize."},
                 {"name": "operations", "description": "Probes, metrics, version and this document."}],
        "paths": paths,
        "components": {"schemas": schemas, "requestBodies": bodies},
    }
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if sys.argv[2] == "-":
        sys.stdout.write(text)
    else:
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(text)
        os.replace(sys.argv[2] + ".tmp", sys.argv[2])


main()
