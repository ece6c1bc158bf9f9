// reference.js - Hugging Face's tokenizers on a tokenizer folder and a corpus,
// the oracle of tests/test_api_tokjson.c: one JSON line per corpus line,
//   {"plain": ids, "special": ids, "astext": ids, "dec": text, "decskip": text, "decrev": text}
// plain: encode(text, add_special_tokens=False); special: with True;
// astext: plain with the special added tokens renamed in the file to a
// content no text holds, so that they are never found (what
// split_special_tokens gives: they are then text), each id given back as the
// id of its token in the file as it is (the library gives an added token
// outside the model's vocabulary the next free id, whatever the file says); dec: decode(plain ids);
// decskip: decode(special ids, skip_special_tokens=True); decrev:
// decode(plain ids reversed), which breaks characters across tokens.
//
// Two builds of the library: npm's tokenizers 0.13.3 (its Linux binary from
// tokenizers-linux-x64-gnu 0.13.4-rc2) and 0.23.2. Each one that implements
// the file's steps runs (0.13.3 knows neither ignore_merges nor Metaspace's
// prepend_scheme; merges written as lists are given to it as "a b" strings,
// the same merges when no side holds a space); when both run they must agree.
//   node tests/tokjson/reference.js DIR CORPUS MODULES_0_13 MODULES_0_23
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, corpusPath, old, nu] = process.argv.slice(2);
const json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
const lines = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));

function oldCanRun(j) {
  const steps = JSON.stringify([j.pre_tokenizer, j.decoder]);
  if (j.model.ignore_merges || steps.includes('prepend_scheme')) return null;
  const copy = JSON.parse(JSON.stringify(j));
  if (copy.model.merges.some((m) => Array.isArray(m))) {
    if (copy.model.merges.some((m) => m[0].includes(' ') || m[1].includes(' '))) return null;
    copy.model.merges = copy.model.merges.map((m) => m.join(' '));
  }
  delete copy.model.ignore_merges;
  return copy;
}

async function run(lib, j) {
  const t = lib.Tokenizer.fromString(JSON.stringify(j));
  const plainFile = JSON.parse(JSON.stringify(j));
  for (const a of plainFile.added_tokens) if (a.special) a.content += '\u0001\u0002never';
  const p = lib.Tokenizer.fromString(JSON.stringify(plainFile));
  const out = [];
  for (const text of lines) {
    const plain = (await t.encode(text, null, { addSpecialTokens: false })).getIds();
    const special = (await t.encode(text, null, { addSpecialTokens: true })).getIds();
    const astext = (await p.encode(text, null, { addSpecialTokens: false })).getIds()
      .map((id) => t.tokenToId(p.idToToken(id)));
    out.push({ plain, special, astext, dec: await t.decode(plain, false), decskip: await t.decode(special, true),
      decrev: await t.decode(plain.slice().reverse(), false) });
  }
  return out;
}

(async () => {
  const results = [];
  const j13 = oldCanRun(json);
  if (j13) results.push(['0.13.3', await run(require(path.join(old, 'tokenizers')), j13)]);
  results.push(['0.23.2', await run(require(path.join(nu, 'tokenizers')), json)]);
  if (results.length === 2) {
    for (let i = 0; i < lines.length; i++) {
      const a = JSON.stringify(results[0][1][i]), b = JSON.stringify(results[1][1][i]);
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
