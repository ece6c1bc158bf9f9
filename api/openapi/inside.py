"""The look inside a whole model in the OpenAPI document (api/openapi/gen.py
calls extend): TransformerLens's hook names in /model/gpt2's "return" (from
the hook table, core's ATTN_HOOK_MAP, in tables.json's "inside"), the
"ablate", "patch", "logit_lens" and "analysis" fields (the analyses from
core's ATTN_ANALYSIS_MAP), and the reply's "cache", "patch", "logit_lens"
and "analysis" (api/inside/, docs/inside.md, docs/analysis.md)."""

SCHEMAS = "#/components/schemas/"


def ref(name):
    return {"$ref": SCHEMAS + name}


def hook_pattern(hooks):
    block = "|".join(h["name"].replace(".", "\\.") for h in hooks if h["per_block"])
    model = "|".join(h["name"].replace(".", "\\.") for h in hooks if not h["per_block"])
    return "^(blocks\\.(\\*|0|[1-9][0-9]*)\\.(%s)|%s)$" % (block, model)


def hook_table(hooks):
    return "; ".join("%s%s %s: %s" % ("blocks.L." if h["per_block"] else "", h["name"], h["shape"], h["what"])
                     for h in hooks)


def request_fields(inside):
    sites = [s["name"] for s in inside["sites"]]
    token = {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}
    return {
        "ablate": {"type": "array", "description": "Heads knocked out: each one's hook_z (before the output projection) replaced by zeros or by its mean over the positions (of each sequence). Every output of the request then comes from the ablated run (and every run of a patch).",
                   "items": {"type": "object", "properties": {
                       "layer": {"type": "integer", "minimum": 0}, "head": {"type": "integer", "minimum": 0},
                       "method": {"type": "string", "enum": ["zero", "mean"], "default": "zero"}},
                       "required": ["layer", "head"], "additionalProperties": False}},
        "patch": {"type": "object", "description": "Activation patching (TransformerLens's patching.py): the clean input (idx or text) and the corrupted one are run, then for every layer and head (site attn_head: that head's hook_z at every position) or every layer and position (the other sites: %s) the corrupted input with that one activation taken from the clean run. Each result is the last position's logit[a] - logit[b]. Runs in eval mode only." % ", ".join(sites[1:]),
                  "properties": {
                      "corrupted_idx": {"oneOf": [ref("Numbers1"), ref("Numbers2")], "description": "The corrupted ids, the shape of idx."},
                      "corrupted_text": {"type": "string", "description": "The corrupted text (a tokenizer's), as many tokens as text."},
                      "site": {"type": "string", "enum": sites, "default": "attn_head"},
                      "logit_diff": {"type": "array", "minItems": 2, "maxItems": 2, "items": token,
                                     "description": "[a, b]: token ids, or texts of one token each (with a tokenizer)."}},
                  "required": ["logit_diff"], "additionalProperties": False},
        "logit_lens": {"type": "object", "description": "The final LayerNorm and the output head applied to each block's input and to the last block's output (TransformerLens's accumulated_resid with apply_ln, then the unembedding): the k most likely tokens at every position.",
                       "properties": {"k": {"type": "integer", "minimum": 1, "default": 5}}, "additionalProperties": False},
        "analysis": {"type": "array", "items": {"type": "string", "enum": [a["name"] for a in inside["analyses"]]},
                     "description": "What each head does, computed from the request's own run (docs/analysis.md): " + analysis_table(inside["analyses"]) + ". Each is per batch row. The attention-only ones read each block's weights as the block makes them (one block's maps held, none when attn_weights is returned too); importance runs one ablated forward per head from its block on (eval mode, at least 2 tokens; with ablate, every run has them too). An unknown name is a 400 naming analysis[i]; the work and memory are counted in the plan (a 413 over --max-work names analysis when it weighs most)."},
    }


def analysis_table(analyses):
    return "; ".join("%s %s: %s" % (a["name"], a["shape"], a["what"]) for a in analyses)


def reply_fields(inside):
    scalar = {"oneOf": [{"type": "number"}, ref("Numbers1")], "description": "A number, or [B] numbers, in every JSON format."}
    ints = {"oneOf": [ref("Numbers3"), ref("Numbers4"), ref("FlatTensor"), ref("BinaryIndices")]}
    texts = {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {
        "oneOf": [{"type": ["string", "null"]}, {"type": "array", "items": {"type": ["string", "null"]}}]}}}}
    return {
        "cache": {"type": "object", "description": "The hooks asked in return, by their full names, in TransformerLens's shapes (the batch axis first, left out for a [T] idx), forward order: " + hook_table(inside["hooks"]) + ". hook_attn_scores' masked entries are null (-inf in binary forms).",
                  "additionalProperties": ref("ReplyScores")},
        "patch": {"type": "object", "description": "The patching sweep: result [B][n_layer][n_head or T], clean and corrupted [B] (without B for a [T] idx): logit[a] - logit[b] at the last position.",
                  "properties": {"result": ref("ReplyTensor"), "clean": scalar, "corrupted": scalar},
                  "required": ["result", "clean", "corrupted"], "additionalProperties": False},
        "analysis": {"type": "object", "description": "The analyses asked, in this order: " + ", ".join(a["name"] for a in inside["analyses"]) + "; each " + "; ".join("%s %s" % (a["name"], a["shape"]) for a in inside["analyses"]) + " (without B for a [T] idx).",
                     "properties": {a["name"]: ref("ReplyTensor") for a in inside["analyses"]}, "additionalProperties": False},
        "logit_lens": {"type": "object", "description": "[n_layer + 1][B][T][k] (without B for a [T] idx): entry l < n_layer reads block l's input, the last entry the last block's output.",
                       "properties": {"ids": ints, "probs": ref("ReplyTensor"),
                                      "tokens": dict(texts, description="The ids' texts, when a tokenizer serves the request.")},
                       "required": ["ids", "probs"], "additionalProperties": False},
    }


def extend(tables, request, response):
    """Adds the fields to /model/gpt2's request and reply schemas."""
    inside = tables["inside"]
    request["properties"].update(request_fields(inside))
    ret = request["properties"]["return"]
    ret["items"] = {"anyOf": [ret["items"], {"type": "string", "description": "A hook name, matching " + hook_pattern(inside["hooks"])}]}
    ret["description"] += " Also TransformerLens's hook names (blocks.L.NAME, blocks.*.NAME for every block, ln_final.hook_normalized): the reply's cache holds them."
    response["properties"].update(reply_fields(inside))
