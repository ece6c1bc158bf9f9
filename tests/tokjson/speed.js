// speed.js - seconds npm's tokenizers takes to encode a text (best of 3),
// for test_api_tokjson's speed figure: node speed.js MODULES TOKENIZER_JSON TEXT
'use strict';
const fs = require('fs');
const path = require('path');
const [mods, file, textPath] = process.argv.slice(2);
const { Tokenizer } = require(path.join(mods, 'tokenizers'));
const t = Tokenizer.fromFile(file);
const text = fs.readFileSync(textPath, 'utf8');
(async () => {
  let best = Infinity, n = 0;
  for (let r = 0; r < 3; r++) {
    const t0 = process.hrtime.bigint();
    n = (await t.encode(text, null, { addSpecialTokens: false })).getIds().length;
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  console.log(`${best.toFixed(3)} s (${(Buffer.byteLength(text) / best / 1e6).toFixed(1)} MB/s), ${n} tokens`);
})();
