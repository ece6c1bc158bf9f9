// reference.js - chat templates rendered by npm @huggingface/jinja (what
// transformers.js renders a chat_template with) for tests/test_api_chat_template.c.
//   NODE_PATH=build/npm/chat/node_modules node tests/chat/reference.js CASES
// CASES: a first line with a JSON array of template sources, then one case a
// line, {"t": index, "context": {...}, "now": seconds or null}. Out: one JSON
// line a case, {"text": "..."} or {"error": "..."}. With "now", strftime_now
// (new Date()) reads that time; run with TZ=UTC as the C side does.
'use strict';
const fs = require('fs');
const { Template } = require('@huggingface/jinja');

const RealDate = Date;
let fixed = null;
global.Date = class extends RealDate {
  constructor(...args) {
    if (args.length === 0 && fixed !== null) super(fixed);
    else super(...args);
  }
  static now() {
    return fixed !== null ? fixed : RealDate.now();
  }
};

const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
const sources = JSON.parse(lines[0]);
const compiled = sources.map((src) => {
  try {
    return { template: new Template(src) };
  } catch (e) {
    return { error: String(e.message) };
  }
});
const out = [];
for (const line of lines.slice(1)) {
  const c = JSON.parse(line);
  const t = compiled[c.t];
  fixed = c.now === null || c.now === undefined ? null : c.now * 1000;
  if (t.error !== undefined) {
    out.push(JSON.stringify({ error: t.error }));
    continue;
  }
  try {
    out.push(JSON.stringify({ text: t.template.render(c.context) }));
  } catch (e) {
    out.push(JSON.stringify({ error: String(e.message) }));
  }
}
process.stdout.write(out.join('\n') + '\n');
