// openai_client.mjs BASE - OpenAI's official Node client (npm "openai",
// found in $OPENAI_DIR), unchanged, pointed at an attention-server's /v1
// with baseURL, as an application would be: it lists the models, asks for
// completions (greedy with logprobs, n = 2 sampled with a seed and top_p,
// top_k as llama.cpp takes it, min_p and the penalties as extra fields, a
// stop string, echo), the same streamed, and a model that does not exist; prints what it got as JSON for
// tests/test_server_openai.c.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const [base] = process.argv.slice(2);
const require = createRequire(resolve(process.env.OPENAI_DIR) + "/");
const OpenAI = require("openai");
const client = new (OpenAI.default || OpenAI)({ baseURL: base + "/v1", apiKey: "not-needed", maxRetries: 0 });

const pkg = JSON.parse(readFileSync(resolve(process.env.OPENAI_DIR, "openai/package.json"), "utf8"));
const report = { version: pkg.version };
const asks = {
  greedy: { model: "tiny", prompt: "Hello", max_tokens: 12, temperature: 0, logprobs: 5 },
  sampled: { model: "tiny", prompt: "Hello", max_tokens: 10, temperature: 0.8, top_p: 0.95, seed: 5, n: 2, logprobs: 1 },
  top_k: { model: "tiny", prompt: "The ", max_tokens: 8, temperature: 1.0, top_k: 40, seed: 77 },
  penalties: { model: "tiny", prompt: "Hello", max_tokens: 10, temperature: 0.9, top_k: 40, top_p: 0.95,
    min_p: 0.05, repetition_penalty: 1.3, frequency_penalty: 0.5, presence_penalty: 0.4, seed: 9, n: 2 },
  stop: { model: "tiny", prompt: "Hello", max_tokens: 12, temperature: 0, stop: ["9l"], echo: true },
  ids: { model: "tiny", prompt: [72, 101, 108, 108, 111], max_tokens: 4, temperature: 0 },
};

// A stream put together: each choice's text, its token_logprobs, its finish_reason.
async function streamed(ask) {
  const out = [];
  let usage = null, chunks = 0;
  const stream = await client.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const o = (out[c.index] ||= { text: "", token_logprobs: [], finish_reason: null });
      o.text += c.text;
      if (c.logprobs) o.token_logprobs.push(...c.logprobs.token_logprobs);
      if (c.finish_reason) o.finish_reason = c.finish_reason;
    }
  }
  return { choices: out, usage, chunks };
}

try {
  report.models = (await client.models.list()).data.map((m) => m.id);
  report.whole = {};
  report.stream = {};
  for (const [name, ask] of Object.entries(asks)) {
    const r = await client.completions.create(ask);
    report.whole[name] = { choices: r.choices, usage: r.usage, object: r.object, id: r.id };
    report.stream[name] = await streamed(ask);
  }
  try {
    await client.completions.create({ model: "nope", prompt: "x" });
    report.missing = { status: 200 };
  } catch (e) {
    report.missing = { status: e.status, name: e.constructor.name, message: e.message };
  }
} catch (e) {
  report.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(report));
