// reference.js - the reference GPT-2 tokenization of tests/bpe/corpus.jsonl
// for tests/test_api_bpe.c: one JSON line per corpus line,
//   {"ids": [...], "tokens": [...], "g3e": [...]}
// ids from js-tiktoken's r50k_base (GPT-2's encoding), tokens as its decode()
// of each id alone (TextDecoder: U+FFFD for bytes that are not UTF-8 alone),
// g3e from npm's gpt-3-encoder (OpenAI's encoder.py ported to JavaScript).
//   NODE_PATH=build/npm/node_modules node tests/bpe/reference.js tests/bpe/corpus.jsonl
'use strict';
const fs = require('fs');
const { getEncoding } = require('js-tiktoken');
const g3e = require('gpt-3-encoder');

const enc = getEncoding('r50k_base');
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
const out = [];
for (const line of lines) {
  const text = JSON.parse(line);
  const ids = enc.encode(text, [], []); // no special tokens: <|endoftext|> is text, as in encoder.py
  out.push(JSON.stringify({ ids, tokens: ids.map((id) => enc.decode([id])), g3e: g3e.encode(text) }));
}
process.stdout.write(out.join('\n') + '\n');
