// openai_chat_client.mjs BASE FOLDER - OpenAI's official Node client (npm
// "openai", in $OPENAI_DIR beside @huggingface/jinja), unchanged, pointed at
// an attention-server's /v1 with baseURL, against the model "smol" served
// from FOLDER (a tokenizer_config.json with a chat_template). For each
// conversation it renders the messages with @huggingface/jinja as
// transformers.js does (add_generation_prompt, the folder's special
// tokens), asks the server's POST /tokenize for that text's ids, and asks
// with the client:
//   - completions.create on those ids (greedy, and n = 2 sampled from a seed),
//   - chat.completions.create on the messages, the same, whole and streamed.
// Then a model without a chat template. Prints what it got as JSON for
// tests/test_server_openai_chat.c, which compares.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const [base, folder] = process.argv.slice(2);
const require = createRequire(resolve(process.env.OPENAI_DIR) + "/");
const OpenAI = require("openai");
const { Template } = require("@huggingface/jinja");
const client = new (OpenAI.default || OpenAI)({ baseURL: base + "/v1", apiKey: "not-needed", maxRetries: 0 });

const config = JSON.parse(readFileSync(resolve(folder, "tokenizer_config.json"), "utf8"));
const template = new Template(config.chat_template);
const special = {};
for (const k of ["bos_token", "eos_token", "unk_token", "pad_token"])
  if (typeof config[k] === "string") special[k] = config[k];

const conversations = {
  one: [{ role: "user", content: "Hi there" }],
  system: [
    { role: "system", content: "You are terse." },
    { role: "user", content: "What is attention?" },
  ],
  turns: [
    { role: "user", content: "héllo ☕ 12345" },
    { role: "assistant", content: "Hello! How can I help?" },
    { role: "user", content: "Say <b>it</b> again\n\ttwice." },
  ],
  parts: [{ role: "user", content: [{ type: "text", text: "first part" }, { type: "text", text: "second" }] }],
};

// The server joins text parts with "\n" before the template sees them.
function plain(messages) {
  return messages.map((m) =>
    Array.isArray(m.content) ? { ...m, content: m.content.map((p) => p.text).join("\n") } : m);
}

async function tokenize(text) {
  const r = await fetch(base + "/tokenize", { method: "POST", body: JSON.stringify({ model: "smol", content: text }) });
  if (r.status !== 200) throw new Error("/tokenize " + r.status + ": " + (await r.text()));
  return (await r.json()).tokens;
}

// A chat stream put together: each choice's content, its logprobs, its
// finish_reason, the roles seen, the chunks.
async function chatStreamed(ask) {
  const out = [];
  let usage = null, chunks = 0;
  const stream = await client.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    chunks++;
    if (chunk.object !== "chat.completion.chunk") throw new Error("chunk object " + chunk.object);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const o = (out[c.index] ||= { content: "", roles: [], logprobs: [], finish_reason: null, first: null });
      if (o.first === null) o.first = c.delta;
      if (c.delta.role) o.roles.push(c.delta.role);
      if (c.delta.content) o.content += c.delta.content;
      if (c.logprobs && c.logprobs.content) o.logprobs.push(...c.logprobs.content);
      if (c.finish_reason) o.finish_reason = c.finish_reason;
    }
  }
  return { choices: out, usage, chunks };
}

const report = { version: JSON.parse(readFileSync(resolve(process.env.OPENAI_DIR, "openai/package.json"), "utf8")).version, cases: {} };
try {
  for (const [name, messages] of Object.entries(conversations)) {
    const text = template.render({ messages: plain(messages), add_generation_prompt: true, ...special });
    const ids = await tokenize(text);
    const asks = {
      greedy: { max_tokens: 6, temperature: 0 },
      sampled: { max_tokens: 6, temperature: 0.9, top_p: 0.95, seed: 7, n: 2 },
    };
    const c = (report.cases[name] = { text, ids });
    for (const [kind, ask] of Object.entries(asks)) {
      const prompt = await client.completions.create({ model: "smol", prompt: ids, logprobs: 0, ...ask });
      const chatAsk = { model: "smol", messages, logprobs: true, top_logprobs: 2, ...ask };
      const whole = await client.chat.completions.create(chatAsk);
      c[kind] = { completion: prompt, chat: whole, stream: await chatStreamed(chatAsk) };
    }
  }
  try {
    await client.chat.completions.create({ model: "plain", messages: [{ role: "user", content: "x" }] });
    report.untemplated = { status: 200 };
  } catch (e) {
    report.untemplated = { status: e.status, name: e.constructor.name, message: e.message };
  }
} catch (e) {
  report.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(report));
