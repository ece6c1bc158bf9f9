// codepoints.js - what the library's BertNormalizer (four settings and the
// StripAccents normalizer) and BertPreTokenizer make of every code point, the
// oracle of test_api_tokjson.c's test_every_code_point. The code points but
// surrogates and '#' go in chunks of 4096; a chunk's JSON line:
//   {"lo": first, "hi": last, "norm": [5 texts], "pre": [pieces], "same": bool}
// norm: the normalizers on '#' c1 '#' c2 ... '#'; pre: the pieces of
// 'x' c1 'x ' 'x' c2 'x ' ...; from tokenizers 0.13.3; same: 0.23.2 gives
// the same (it also lowercases the letters Unicode 16 added).
//   node tests/tokjson/codepoints.js MODULES_0_13 MODULES_0_23
'use strict';
const path = require('path');
const libs = process.argv.slice(2, 4).map((m) => require(path.join(path.resolve(m), 'tokenizers')));

const steps = (tk) => [
  tk.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: true, lowercase: true }),
  tk.bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: false, lowercase: false }),
  tk.bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: true, lowercase: false }),
  tk.bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: true }),
  tk.stripAccentsNormalizer()];
const [a, b] = libs.map((tk) => ({ norm: steps(tk), pre: tk.bertPreTokenizer() }));

const cps = [];
for (let c = 0; c <= 0x10ffff; c++) if ((c < 0xd800 || c > 0xdfff) && c !== 0x23) cps.push(c);
const out = [];
for (let i = 0; i < cps.length; i += 4096) {
  const part = cps.slice(i, i + 4096).map((c) => String.fromCodePoint(c));
  const text = '#' + part.join('#') + '#', pieces = part.map((c) => 'x' + c + 'x ').join('');
  const norm = a.norm.map((n) => n.normalizeString(text)), pre = a.pre.preTokenizeString(pieces).map((p) => p[0]);
  const same = b.norm.every((n, k) => n.normalizeString(text) === norm[k]) &&
    JSON.stringify(b.pre.preTokenizeString(pieces).map((p) => p[0])) === JSON.stringify(pre);
  out.push(JSON.stringify({ lo: cps[i], hi: cps[Math.min(i + 4095, cps.length - 1)], norm, pre, same }));
}
process.stdout.write(out.join('\n') + '\n');
