// reference.js - Hugging Face's tokenizers on a tokenizer folder and corpora,
// the oracle of tests/test_api_tokjson.c: one JSON line per corpus line, the
// corpora one after the other. A line is a text (a JSON string) or a pair
// ([a, b]). For a text:
//   {"plain": ids, "special": ids, "types": type ids, "mask": special tokens
//    mask, "astext": ids, "dec": text, "decskip": text, "decrev": text,
//    "trunc": [...]}
// plain: encode(text, add_special_tokens=False); special, types, mask: with
// True; astext: plain with the special added tokens renamed in the file to a
// content no text holds, so that they are never found (what
// split_special_tokens gives: they are then text), each id given back as the
// id of its token in the file as it is (the library gives an added token
// outside the model's vocabulary the next free id, whatever the file says);
// dec: decode(plain ids); decskip: decode(special ids,
// skip_special_tokens=True); decrev: decode(plain ids reversed), which breaks
// characters across tokens. For a pair:
//   {"pair": [ids, types, mask], "pairplain": [ids, types], "decpair": text,
//    "trunc": [...]}
// with and without the special tokens, and decode(pair ids,
// skip_special_tokens=True). trunc: for each setting of TRUNC, [ids, types,
// mask] with the special tokens and that truncation, or "error" when the
// library refuses. When the file has a "truncation": "filetrunc", [ids,
// types] as the library encodes with it (with the special tokens). The
// file's "padding" is always turned off (the C side never pads).
//
// Two builds of the library: npm's tokenizers 0.13.3 (its Linux binary from
// tokenizers-linux-x64-gnu 0.13.4-rc2) and 0.23.2. Each one that implements
// the file's steps runs (0.13.3 knows neither ignore_merges nor Metaspace's
// prepend_scheme; merges written as lists are given to it as "a b" strings,
// the same merges when no side holds a space); when both run they must agree,
// but on "trunc": 0.23 stops the model once a text has max_length ids (its
// early exit, tokenizers #1990), and truncate_encodings then sees those
// lengths, so of a pair of two texts over max_length the one that keeps the
// odd id can differ. The reference is the newer build. MODULES_0_13 "-"
// runs the newer build alone (the test's random strings: the corpora hold
// both builds to each other, and one build runs in half the time).
//   node tests/tokjson/reference.js DIR MODULES_0_13|- MODULES_0_23 CORPUS...
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, old, nu, ...corpora] = process.argv.slice(2);
const json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
const lines = [].concat(...corpora.map((c) => fs.readFileSync(c, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l))));

// [max_length, strategy, direction]; test_api_tokjson.c has the same list.
const TRUNC = [[5, 'LongestFirst', 'Right'], [5, 'LongestFirst', 'Left'], [8, 'LongestFirst', 'Right'],
  [9, 'OnlyFirst', 'Right'], [9, 'OnlySecond', 'Left'], [13, 'OnlyFirst', 'Left'], [13, 'OnlySecond', 'Right'],
  [16, 'LongestFirst', 'Left']];

function oldCanRun(j) {
  const steps = JSON.stringify([j.pre_tokenizer, j.decoder]);
  if (j.model.ignore_merges || steps.includes('prepend_scheme')) return null;
  const copy = JSON.parse(JSON.stringify(j));
  if (copy.model.merges && copy.model.merges.some((m) => Array.isArray(m))) {
    if (copy.model.merges.some((m) => m[0].includes(' ') || m[1].includes(' '))) return null;
    copy.model.merges = copy.model.merges.map((m) => m.join(' '));
  }
  delete copy.model.ignore_merges;
  return copy;
}

const three = (e) => [e.getIds(), e.getTypeIds(), e.getSpecialTokensMask()];

async function truncated(t, a, b) {
  const out = [];
  for (const [max, strategy, direction] of TRUNC) {
    t.setTruncation(max, { strategy, direction: direction.toLowerCase() });
    try {
      out.push(three(await t.encode(a, b, { addSpecialTokens: true })));
    } catch (e) {
      out.push('error');
    }
  }
  t.disableTruncation();
  return out;
}

async function text(t, p, s) {
  const plain = (await t.encode(s, null, { addSpecialTokens: false })).getIds();
  const special = await t.encode(s, null, { addSpecialTokens: true });
  const astext = (await p.encode(s, null, { addSpecialTokens: false })).getIds().map((id) => t.tokenToId(p.idToToken(id)));
  return { plain, special: special.getIds(), types: special.getTypeIds(), mask: special.getSpecialTokensMask(), astext,
    dec: await t.decode(plain, false), decskip: await t.decode(special.getIds(), true),
    decrev: await t.decode(plain.slice().reverse(), false), trunc: await truncated(t, s, null) };
}

async function pair(t, a, b) {
  const e = await t.encode(a, b, { addSpecialTokens: true }), f = await t.encode(a, b, { addSpecialTokens: false });
  return { pair: three(e), pairplain: [f.getIds(), f.getTypeIds()], decpair: await t.decode(e.getIds(), true),
    trunc: await truncated(t, a, b) };
}

async function run(lib, j) {
  const t = lib.Tokenizer.fromString(JSON.stringify(j));
  const plainFile = JSON.parse(JSON.stringify(j));
  for (const a of plainFile.added_tokens) if (a.special) a.content += '\u0001\u0002never';
  const p = lib.Tokenizer.fromString(JSON.stringify(plainFile));
  for (const x of [t, p]) x.disablePadding(), x.disableTruncation();
  const own = j.truncation ? lib.Tokenizer.fromString(JSON.stringify(j)) : null;
  if (own) own.disablePadding();
  const out = [];
  for (const line of lines) {
    const r = Array.isArray(line) ? await pair(t, line[0], line[1]) : await text(t, p, line);
    if (own) {
      const e = await own.encode(Array.isArray(line) ? line[0] : line, Array.isArray(line) ? line[1] : null);
      r.filetrunc = [e.getIds(), e.getTypeIds()];
    }
    out.push(r);
  }
  return out;
}

(async () => {
  const results = [];
  const j13 = old === '-' ? null : oldCanRun(json);
  if (j13) results.push(['0.13.3', await run(require(path.join(path.resolve(old), 'tokenizers')), j13)]);
  results.push(['0.23.2', await run(require(path.join(path.resolve(nu), 'tokenizers')), json)]);
  if (results.length === 2) {
    for (let i = 0; i < lines.length; i++) {
      const but = (r) => JSON.stringify(Object.assign({}, r, { trunc: undefined }));
      const a = but(results[0][1][i]), b = but(results[1][1][i]);
      if (a !== b) {
        console.error(`the two builds disagree on line ${i + 1} ${JSON.stringify(lines[i])}:\n 0.13.3 ${a}\n 0.23.2 ${b}`);
        process.exit(2);
      }
    }
  }
  const ref = results[results.length - 1][1];
  process.stdout.write(ref.map((r) => JSON.stringify(Object.assign({ oracles: results.map((x) => x[0]) }, r))).join('\n') + '\n');
})().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
