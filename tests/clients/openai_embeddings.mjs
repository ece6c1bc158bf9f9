// openai_embeddings.mjs BASE IDS_JSON - OpenAI's official Node client (npm
// "openai", found in $OPENAI_DIR), unchanged, pointed at an
// attention-server's /v1 with baseURL: embeddings.create with token ids
// (the client's default, which asks for base64 and decodes it; float;
// base64 kept as the text), with strings (a RoBERTa folder's tokenizer), a
// dimensions the model does not have and a model that does not exist.
// Prints what it got as JSON for tests/test_server_embeddings.c.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const [base, idsJson] = process.argv.slice(2);
const ids = JSON.parse(idsJson);
const require = createRequire(resolve(process.env.OPENAI_DIR) + "/");
const OpenAI = require("openai");
const client = new (OpenAI.default || OpenAI)({ baseURL: base + "/v1", apiKey: "not-needed", maxRetries: 0 });
const pkg = JSON.parse(readFileSync(resolve(process.env.OPENAI_DIR, "openai/package.json"), "utf8"));

const vectors = (r) => ({
  embeddings: r.data.map((d) => (typeof d.embedding === "string" ? d.embedding : Array.from(d.embedding))),
  indices: r.data.map((d) => d.index), usage: r.usage, object: r.object, model: r.model,
});

async function status(ask) {
  try {
    await client.embeddings.create(ask);
    return { status: 200 };
  } catch (e) {
    return { status: e.status, name: e.constructor.name, message: e.message };
  }
}

const report = { version: pkg.version };
try {
  report.ids_default = vectors(await client.embeddings.create({ model: "mini", input: ids }));
  report.ids_float = vectors(await client.embeddings.create({ model: "mini", input: ids, encoding_format: "float" }));
  report.ids_base64 = vectors(await client.embeddings.create({ model: "mini", input: ids, encoding_format: "base64" }));
  report.one_row = vectors(await client.embeddings.create({ model: "mini", input: ids[0], dimensions: 48, user: "u" }));
  report.texts = vectors(await client.embeddings.create({ model: "rob", input: ["Hi there", "to be or not"] }));
  report.text = vectors(await client.embeddings.create({ model: "rob", input: "Hi there", encoding_format: "float" }));
  report.dimensions = await status({ model: "mini", input: ids, dimensions: 7 });
  report.missing = await status({ model: "nope", input: "x" });
} catch (e) {
  report.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(report));
