"""The OpenAPI document's parts for generation (imported by gen.py): the
"generate" field of /model/gpt2 and its reply's "generation", POST
/v1/completions, /v1/chat/completions, POST /v1/embeddings and GET /v1/models
as OpenAI's API
defines them, POST /tokenize and /detokenize as llama.cpp's server names
them."""


def ref(name):
    return {"$ref": "#/components/schemas/" + name}


NUM = {"type": "number"}

# min_p and the penalties, the same in "generate" and both OpenAI endpoints
# (core/penalty.c, core/sample.c; docs/generation.md gives the order)
MIN_P = "transformers' MinPLogitsWarper, after top_p: drop the tokens whose probability (softmax of the filtered, scaled logits) is below min_p times the largest; 0: off."
REPETITION = "transformers' RepetitionPenaltyLogitsProcessor, on the raw logits before everything else: every token id of the prompt or written so far, once: a logit x < 0 becomes x * penalty, else x / penalty; greater than 0 (0 and below are a 400), 1: off."
FREQUENCY = "OpenAI's, as llama.cpp applies it (after the repetition penalty, before top_k): logit -= count * frequency_penalty, count the times the token was written in this reply (the prompt does not count); 0: off."
PRESENCE = "OpenAI's, as llama.cpp applies it (with frequency_penalty): logit -= presence_penalty once the token was written in this reply (the prompt does not count); 0: off."


def penalty_fields(nullable):
    t = (lambda k: [k, "null"]) if nullable else (lambda k: k)
    return {
        "min_p": {"type": t("number"), "minimum": 0, "maximum": 1, "default": 0, "description": MIN_P},
        "repetition_penalty": {"type": t("number"), "default": 1, "description": REPETITION},
        "frequency_penalty": {"type": t("number"), "minimum": -2, "maximum": 2, "default": 0, "description": FREQUENCY},
        "presence_penalty": {"type": t("number"), "minimum": -2, "maximum": 2, "default": 0, "description": PRESENCE},
    }

INT = {"type": "integer"}
IDS = {"type": "array", "items": {"type": "integer", "minimum": 0}}

GENERATE = {
    "type": "object",
    "description": "The model writes max_new_tokens after the prompt (idx [T] or text), as the book's generate() (chapter 5) with a key/value cache: greedy with temperature 0 (torch.argmax, generate_text_simple), else (after the repetition, frequency and presence penalties on the raw logits) top_k, logits / temperature, top_p (Hugging Face's TopPLogitsWarper), min_p and torch.multinomial's exponential draws on PyTorch's generator. The outputs of return are then computed over the final text (its last block_size tokens). With output_format events, or Accept: text/event-stream, the reply is server-sent events: start {idx, tokens} (the prompt), token (one per written token, a GenerationStep), done (the whole reply without generation.steps); an error after the first event comes as an error event.",
    "properties": {
        "max_new_tokens": {"type": "integer", "minimum": 0, "default": 16, "description": "Tokens to write at most; over --max-new-tokens is a 413."},
        "temperature": {"type": "number", "minimum": 0, "default": 0, "description": "0: greedy (the first largest logit). Above 0: logits / temperature before the softmax, and a draw."},
        "top_k": {"type": "integer", "minimum": 0, "default": 0, "description": "Keep the logits >= the k-th largest (the book's torch.topk and torch.where; ties kept); 0 or >= vocab_size: off."},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 1, "description": "Nucleus sampling as Hugging Face's TopPLogitsWarper, after the temperature; 1: off."},
        "seed": {"type": "integer", "description": "torch.manual_seed(seed) right before the loop. Without it a model built from init continues the generator its construction left (as nanoGPT's sample.py seeds once), any other draws a seed that the reply gives."},
        "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}], "description": "Strings that end the text (matched on the written bytes; the text stops before the string, the token that completed it is written). Need a tokenizer."},
        "eos_token_id": {"type": "integer", "minimum": 0, "description": "The book's eos_id: choosing it ends the text, the token not written."},
        "context_size": {"type": "integer", "minimum": 1, "description": "The book's crop idx[:, -context_size:] (default block_size): past it each step recomputes the last context_size positions."},
        "logprobs": {"type": "integer", "minimum": 0, "maximum": 20, "default": 0, "description": "The most likely alternatives of every step, with their log-probabilities."},
        "attention": {"type": "boolean", "default": False, "description": "Each written token's attention rows: what the position that chose it attended to, for the layers of \"layers\" and the heads of \"heads\"."},
        **penalty_fields(False),
    },
    "additionalProperties": False,
}

STEP = {
    "type": "object",
    "description": "A written token: index among the written ones, position in the text, id, its text (U+FFFD for a piece of a character, whose bytes then come in bytes), its log-probability (log_softmax of the raw logits, before temperature and filters), the most likely alternatives (logprobs) and its attention rows [layers][heads][t] (attention): what position - 1 attended to, positions position - t to position - 1.",
    "properties": {
        "index": INT, "position": INT, "id": INT, "text": {"type": "string"},
        "bytes": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}},
        "logprob": NUM,
        "top": {"type": "array", "items": {"type": "object", "properties": {"id": INT, "text": {"type": "string"}, "logprob": NUM}, "required": ["id", "logprob"], "additionalProperties": False}},
        "attention": {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": NUM}}},
    },
    "required": ["index", "position", "id", "logprob"],
    "additionalProperties": False,
}

GENERATION = {
    "type": "object",
    "description": "What the generation wrote. idx and tokens of the reply are the final text's last block_size tokens, from window_start on.",
    "properties": {
        "prompt_tokens": INT, "completion_tokens": INT,
        "finish_reason": {"type": "string", "enum": ["length", "stop", "timeout"]},
        "stop": {"description": "The stop string that ended the text, {\"token_id\": eos_token_id}, or null.",
                 "oneOf": [{"type": "string"}, {"type": "object", "properties": {"token_id": INT}, "required": ["token_id"], "additionalProperties": False}, {"type": "null"}]},
        "seed": {"type": ["integer", "null"], "description": "The seed the draws came from (null: the generator init left)."},
        "window_start": INT,
        "text": {"type": "string", "description": "The written text (with a tokenizer), cut before a stop string."},
        "ms": {"type": "object", "properties": {"prefill": NUM, "steps": NUM, "per_token": NUM}, "required": ["prefill", "steps", "per_token"], "additionalProperties": False},
        "steps": {"type": "array", "items": ref("GenerationStep")},
    },
    "required": ["prompt_tokens", "completion_tokens", "finish_reason", "stop", "seed", "window_start", "ms"],
    "additionalProperties": False,
}


def model_fields(request_props, response_props, schemas):
    """/model/gpt2's "generate" and its reply's "generation"."""
    request_props["generate"] = GENERATE
    if response_props is not None:
        response_props["generation"] = ref("Generation")
    schemas["Generation"] = GENERATION
    schemas["GenerationStep"] = STEP


COMPLETION_REQUEST = {
    "type": "object",
    "description": "OpenAI's Completions API (the legacy /v1/completions): a model loaded at start (--model; GET /v1/models lists them) and its tokenizer. Sampling is the book's generate() with Hugging Face's top-p and, as llama.cpp and vLLM take it, top_k, min_p and repetition_penalty, after OpenAI's presence_penalty and frequency_penalty (docs/generation.md gives the order); log-probabilities are log_softmax of the raw logits (before the penalties). Fields OpenAI defines that change nothing at their neutral value are taken at it (best_of equal to n, logit_bias {}, suffix null, user); any other field, and a value out of range, is a 400 naming it.",
    "properties": {
        "model": {"type": "string"},
        "prompt": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}, IDS, {"type": "array", "items": IDS}],
                   "description": "Text, texts, token ids, or arrays of ids: one set of n choices per prompt."},
        "max_tokens": {"type": ["integer", "null"], "minimum": 0, "default": 16, "description": "The prompt and max_tokens must fit the model's context (else 400); over --max-new-tokens is a 413."},
        "temperature": {"type": ["number", "null"], "minimum": 0, "default": 1},
        "top_p": {"type": ["number", "null"], "minimum": 0, "maximum": 1, "default": 1},
        "top_k": {"type": ["integer", "null"], "description": "llama.cpp's and vLLM's: keep the k most likely; 0 or -1 (or absent): off."},
        "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 16, "default": 1, "description": "Choices per prompt: the rows of one batch, drawn row after row (torch.multinomial over [n][vocab])."},
        "stream": {"type": ["boolean", "null"], "default": False, "description": "Server-sent events: data: {chunk} per written token, each choice's last chunk with its finish_reason, then data: [DONE]."},
        "stream_options": {"type": ["object", "null"], "properties": {"include_usage": {"type": "boolean"}}, "additionalProperties": False},
        "logprobs": {"type": ["integer", "null"], "minimum": 0, "maximum": 20},
        "echo": {"type": ["boolean", "null"], "default": False},
        "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}, {"type": "null"}]},
        "seed": {"type": ["integer", "null"], "description": "torch.manual_seed(seed) before the first prompt's loop."},
        **penalty_fields(True),
        "best_of": {"type": ["integer", "null"]},
        "logit_bias": {"type": ["object", "null"], "additionalProperties": False, "description": "Taken only empty."},
        "suffix": {"type": "null"},
        "user": {"type": ["string", "null"]},
    },
    "required": ["model", "prompt"],
    "additionalProperties": False,
}

LOGPROBS = {
    "type": ["object", "null"],
    "properties": {
        "tokens": {"type": "array", "items": {"type": "string"}, "description": "A token that is not UTF-8 on its own is \"bytes:\\\\xe2\\\\x80\"."},
        "token_logprobs": {"type": "array", "items": {"type": ["number", "null"]}},
        "top_logprobs": {"type": "array", "items": {"type": ["object", "null"], "additionalProperties": NUM}},
        "text_offset": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["tokens", "token_logprobs", "top_logprobs", "text_offset"],
    "additionalProperties": False,
}

USAGE = {"type": "object", "properties": {k: INT for k in ["prompt_tokens", "completion_tokens", "total_tokens"]},
         "required": ["prompt_tokens", "completion_tokens", "total_tokens"], "additionalProperties": False}

COMPLETION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "object": {"type": "string", "enum": ["text_completion"]},
        "created": INT, "model": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object", "properties": {
            "text": {"type": "string"}, "index": INT, "logprobs": ref("CompletionLogprobs"),
            "finish_reason": {"type": ["string", "null"], "enum": ["length", "stop", "timeout", None],
                              "description": "stop (a stop string or <|endoftext|>), length (max_tokens written), or timeout: the server cut the text short (--timeout, a drain, time spent waiting for memory); null in a stream's chunks before a choice's last."}},
            "required": ["text", "index", "logprobs", "finish_reason"], "additionalProperties": False}},
        "usage": ref("CompletionUsage"),
    },
    "required": ["id", "object", "created", "model", "choices"],
    "additionalProperties": False,
}

CHAT_REQUEST = {
    "type": "object",
    "description": "OpenAI's Chat Completions API on a model whose folder has a chat template (tokenizer_config.json's chat_template, or chat_template.jinja): the messages are rendered with it as transformers' apply_chat_template renders them (add_generation_prompt true, the folder's bos_token, eos_token, unk_token and pad_token; the Jinja subset of docs/chat-templates.md, byte for byte what npm @huggingface/jinja renders), the text tokenized without adding special tokens again, and the reply written until max_completion_tokens, a stop string or the folder's eos_token (else <|endoftext|>). A model without a chat template is a 400 naming model. Sampling (min_p and the penalties included), seed and log-probabilities as /v1/completions; logit_bias only empty; any other field is a 400.",
    "properties": {
        "model": {"type": "string"},
        "messages": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
            "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
            "content": {"oneOf": [{"type": "string"}, {"type": "null"}, {"type": "array", "items": {"type": "object", "properties": {"type": {"type": "string", "enum": ["text"]}, "text": {"type": "string"}}, "required": ["type", "text"]}}],
                        "description": "Text, or text parts (joined with a newline, as vLLM joins them)."}},
            "required": ["role"], "description": "Other members (name, tool_calls, tool_call_id) reach the template as they are."}},
        "max_completion_tokens": {"type": ["integer", "null"], "minimum": 0, "description": "Tokens to write at most (max_tokens is the older name); absent: up to the model's context. Over --max-new-tokens is a 413."},
        "max_tokens": {"type": ["integer", "null"], "minimum": 0},
        "temperature": {"type": ["number", "null"], "minimum": 0, "default": 1},
        "top_p": {"type": ["number", "null"], "minimum": 0, "maximum": 1, "default": 1},
        "top_k": {"type": ["integer", "null"], "description": "llama.cpp's and vLLM's: keep the k most likely; 0 or -1 (or absent): off."},
        "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 16, "default": 1},
        "stream": {"type": ["boolean", "null"], "default": False, "description": "Server-sent events: each choice's first chunk has delta {role: assistant, content: \"\"}, then one chunk per written token (delta {content}), each choice's last chunk with its finish_reason, then data: [DONE]."},
        "stream_options": {"type": ["object", "null"], "properties": {"include_usage": {"type": "boolean"}}, "additionalProperties": False},
        "logprobs": {"type": ["boolean", "null"], "default": False},
        "top_logprobs": {"type": ["integer", "null"], "minimum": 0, "maximum": 20, "description": "Needs logprobs true."},
        "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}, {"type": "null"}]},
        "seed": {"type": ["integer", "null"], "description": "torch.manual_seed(seed) before the loop."},
        "chat_template_kwargs": {"type": ["object", "null"], "description": "More variables for the template (vLLM's): {\"enable_thinking\": false} for Qwen3."},
        **penalty_fields(True),
        "logit_bias": {"type": ["object", "null"], "additionalProperties": False, "description": "Taken only empty."},
        "user": {"type": ["string", "null"]},
    },
    "required": ["model", "messages"],
    "additionalProperties": False,
}

BYTES = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}
CHAT_TOKEN = {"type": "object", "properties": {"token": {"type": "string"}, "logprob": NUM, "bytes": BYTES},
              "required": ["token", "logprob", "bytes"], "additionalProperties": False}
CHAT_LOGPROBS = {
    "type": ["object", "null"],
    "properties": {"content": {"type": "array", "items": {"type": "object", "properties": {
        **CHAT_TOKEN["properties"], "top_logprobs": {"type": "array", "items": CHAT_TOKEN}},
        "required": ["token", "logprob", "bytes", "top_logprobs"], "additionalProperties": False}}},
    "required": ["content"],
    "additionalProperties": False,
}

CHAT_COMPLETION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "object": {"type": "string", "enum": ["chat.completion"]},
        "created": INT, "model": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object", "properties": {
            "index": INT,
            "message": {"type": "object", "properties": {"role": {"type": "string", "enum": ["assistant"]}, "content": {"type": "string"}},
                        "required": ["role", "content"], "additionalProperties": False},
            "logprobs": ref("ChatCompletionLogprobs"),
            "finish_reason": {"type": "string", "enum": ["length", "stop", "timeout"]}},
            "required": ["index", "message", "logprobs", "finish_reason"], "additionalProperties": False}},
        "usage": ref("CompletionUsage"),
    },
    "required": ["id", "object", "created", "model", "choices", "usage"],
    "additionalProperties": False,
}

TOKENIZE = {"type": "object", "properties": {
    "content": {"type": "string"}, "with_pieces": {"type": "boolean", "default": False},
    "add_special": {"type": "boolean", "default": False, "description": "Put the folder's template around the text (tokenizer.json's post_processor, or tokenizer_config.json's add_bos_token: <bos> for Llama and Gemma); GPT-2's adds nothing."},
    "parse_special": {"type": "boolean", "default": True, "description": "Find a tokenizer.json's special tokens typed in content (<|im_start|>, <start_of_turn>); false reads them as text. vocab.json + merges.txt has none: <|endoftext|> is plain text, as in OpenAI's encoder.py."},
    "model": {"type": "string", "description": "A loaded model: its tokenizer."},
    "tokenizer": {"type": "string", "description": "A loaded tokenizer (--tokenizer NAME=DIR); the only one loaded by default."}},
    "required": ["content"], "additionalProperties": False}
DETOKENIZE = {"type": "object", "properties": {"tokens": IDS, "model": {"type": "string"}, "tokenizer": {"type": "string"}},
              "required": ["tokens"], "additionalProperties": False}
PIECE = {"type": "object", "properties": {"id": INT, "piece": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}]}},
         "required": ["id", "piece"], "additionalProperties": False}


EMBED_REQUEST = {
    "type": "object",
    "description": "OpenAI's Embeddings API (its official clients' embeddings.create runs unchanged). Any other field is a 400 unknown_field.",
    "properties": {
        "model": {"type": "string", "description": "A model loaded at start (GET /v1/models); an unknown one is a 404 not_found."},
        "input": {"description": "A text, texts (at most 2048), token ids, or lists of token ids, embedded as one batch (padded rows run packed: their tokens alone through the projections). Texts go through the model's tokenizer with an encoder's template (RoBERTa's <s> A </s>); token ids are the model's input as they are ([CLS] and [SEP] included). Each input is at most the model's positions and its folder's max_seq_length (sentence_bert_config.json) when it states one: a longer one is a 400 invalid_argument (nothing is cut).",
                  "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1},
                            {"type": "array", "items": INT, "minItems": 1},
                            {"type": "array", "items": {"type": "array", "items": INT, "minItems": 1}, "minItems": 1}]},
        "encoding_format": {"type": "string", "enum": ["float", "base64"], "default": "float", "description": "float: arrays of numbers (each the shortest decimal that reads back as the float32); base64: each embedding's little-endian float32 bytes in base64, as OpenAI's."},
        "dimensions": {"type": "integer", "minimum": 1, "description": "Taken only equal to the embeddings' width (this server does not shorten embeddings): another value is a 400 invalid_argument."},
        "user": {"type": "string", "description": "Ignored."},
    },
    "required": ["model", "input"],
    "additionalProperties": False,
}

EMBEDDINGS = {
    "type": "object",
    "description": "Each input's embedding: its model's last hidden states pooled as the folder's sentence-transformers config says (modules.json, 1_Pooling/config.json: mean over the tokens, cls, max, mean_sqrt_len_tokens, weightedmean, lasttoken, concatenated when several) and normalised to length 1 when it has a Normalize module; a folder without that config pools by the mean over the tokens, not normalised.",
    "properties": {
        "object": {"type": "string", "enum": ["list"]},
        "data": {"type": "array", "items": {"type": "object", "properties": {
            "object": {"type": "string", "enum": ["embedding"]}, "index": INT,
            "embedding": {"oneOf": [{"type": "array", "items": NUM}, {"type": "string"}]}},
            "required": ["object", "index", "embedding"], "additionalProperties": False}},
        "model": {"type": "string"},
        "usage": {"type": "object", "properties": {"prompt_tokens": INT, "total_tokens": INT},
                  "required": ["prompt_tokens", "total_tokens"], "additionalProperties": False},
    },
    "required": ["object", "data", "model", "usage"],
    "additionalProperties": False,
}


def post(paths, bodies, endpoint, op, summary, body, request, response, errors, mimes=("application/json",)):
    """One POST path; its request under components/requestBodies (where
    openapi-typescript leaves fields with a default optional)."""
    content = {m: {"schema": response if m == "application/json" else {"type": "string"}} for m in mimes}
    bodies[body] = {"description": "The %s request." % endpoint["path"], "required": True,
                    "content": {"application/json": {"schema": request}}}
    paths[endpoint["path"]] = {"post": {
        "operationId": op, "tags": ["openai"], "summary": summary,
        "requestBody": {"$ref": "#/components/requestBodies/" + body},
        "responses": {"200": {"description": "OK", "content": content}, **errors},
    }}


def endpoint(paths, schemas, bodies, endpoint, errors):
    """/v1/completions, /v1/chat/completions, /v1/embeddings, /tokenize, /detokenize."""
    if endpoint["kind"] == "embeddings":
        schemas["Embeddings"] = EMBEDDINGS
        post(paths, bodies, endpoint, "embeddings",
             "OpenAI's Embeddings API on a loaded model (an encoder: BERT, all-MiniLM-L6-v2, RoBERTa, DistilBERT; any model pools its last hidden states): texts or token ids, float or base64.",
             "EmbeddingRequest", EMBED_REQUEST, ref("Embeddings"), errors)
    elif endpoint["path"] == "/v1/chat/completions":
        schemas.update({"ChatCompletion": CHAT_COMPLETION, "ChatCompletionLogprobs": CHAT_LOGPROBS, "CompletionUsage": USAGE})
        post(paths, bodies, endpoint, "chat_completions",
             "OpenAI's Chat Completions API on a loaded model with a chat template: messages, n choices, logprobs, stop, seed, stream.",
             "ChatCompletionRequest", CHAT_REQUEST, ref("ChatCompletion"), errors,
             ("application/json", "text/event-stream"))
    elif endpoint["kind"] == "openai":
        schemas.update({"Completion": COMPLETION, "CompletionLogprobs": LOGPROBS, "CompletionUsage": USAGE})
        post(paths, bodies, endpoint, "completions",
             "OpenAI's Completions API on a loaded model: text, token ids, n choices, logprobs, echo, stop, seed, stream.",
             "CompletionRequest", COMPLETION_REQUEST, ref("Completion"), errors,
             ("application/json", "text/event-stream"))
    elif endpoint["name"] == "tokenize":
        post(paths, bodies, endpoint, "tokenize", "Text to token ids (llama.cpp's /tokenize): {\"tokens\": [id, ...]}, or with with_pieces [{\"id\", \"piece\"}] (a piece that is not UTF-8 on its own as its bytes).",
             "TokenizeRequest", TOKENIZE, {"type": "object", "properties": {"tokens": {"oneOf": [IDS, {"type": "array", "items": PIECE}]}},
                                           "required": ["tokens"], "additionalProperties": False}, errors)
    else:
        post(paths, bodies, endpoint, "detokenize", "Token ids to text (llama.cpp's /detokenize); a piece of a character is U+FFFD.",
             "DetokenizeRequest", DETOKENIZE, {"type": "object", "properties": {"content": {"type": "string"}},
                                               "required": ["content"], "additionalProperties": False}, errors)


def v1_models(paths):
    paths["/v1/models"] = {"get": {"operationId": "v1_models", "tags": ["openai"], "summary": "The loaded models as OpenAI's Models API lists them.",
        "responses": {"200": {"description": "The models", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"object": {"type": "string", "enum": ["list"]}, "data": {"type": "array", "items": {
                "type": "object", "properties": {"id": {"type": "string"}, "object": {"type": "string", "enum": ["model"]},
                                                 "created": INT, "owned_by": {"type": "string"}},
                "required": ["id", "object", "created", "owned_by"], "additionalProperties": False}}},
            "required": ["object", "data"], "additionalProperties": False}}}}}}}
