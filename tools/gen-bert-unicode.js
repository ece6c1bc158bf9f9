// gen-bert-unicode.js - writes api/bpe/bert_unicode.c: the classes of the
// code points that BertNormalizer and BertPreTokenizer (and the
// WhitespaceSplit and Punctuation pre-tokenizers) look at, read from Hugging
// Face's tokenizers itself, since its tables (the unicode_categories crate,
// an older Unicode) differ from today's: a character is punctuation, a
// nonspacing mark or a control character when the library treats it as one.
//
//   node tools/gen-bert-unicode.js MODULES_0_13 MODULES_0_23 > api/bpe/bert_unicode.c
//
// with the node_modules folders of npm's tokenizers 0.13.3 and 0.23.2
// (tests/test_api_tokjson.c installs them under build/npm/ and checks that
// the committed file is what this writes). The two builds must agree on every
// class, or nothing is written.
'use strict';
const path = require('path');

const FLAGS = [
  ['API__BERT_DROP', 1, "clean_text removes it (a control or format character, U+0000, U+FFFD)"],
  ['API__BERT_SPACE', 2, "white space: clean_text writes ' ', the pre-tokenizers split there"],
  ['API__BERT_PUNCT', 4, 'punctuation: BertPreTokenizer isolates it'],
  ['API__BERT_MARK', 8, 'strip_accents removes it (a nonspacing mark, or made of them)'],
  ['API__BERT_NFD', 16, "strip_accents' NFD decomposes it (a character the library's tables lack stays whole)"],
  ['API__BERT_COMBINING', 32, 'the StripAccents normalizer removes it (a combining mark: Mn, Mc or Me)'],
];
const CHUNK = 4096;

function codePoints() {
  const cps = [];
  for (let c = 0; c <= 0x10ffff; c++) if ((c < 0xd800 || c > 0xdfff) && c !== 0x23) cps.push(c);
  return cps;
}

// What normalizer n makes of each code point: '#' + c + '#' ... in bulk.
function perChar(n, part) {
  const pieces = n.normalizeString(part.map((c) => '#' + String.fromCodePoint(c)).join('') + '#').split('#');
  if (pieces.length !== part.length + 2) throw new Error('a normalizer changed the separator');
  return pieces.slice(1, -1);
}

// 'x' c 'x' through the pre-tokenizer: 0 one piece, SPACE two, PUNCT three.
function splits(pre, part) {
  const text = part.map((c) => 'x' + String.fromCodePoint(c) + 'x ').join('');
  const got = pre.preTokenizeString(text).map((p) => p[0]);
  const out = [];
  let i = 0;
  for (const c of part) {
    const s = String.fromCodePoint(c);
    if (got[i] === 'x' + s + 'x') out.push(0), i += 1;
    else if (got[i] === 'x' && got[i + 1] === s && got[i + 2] === 'x') out.push(4), i += 3;
    else if (got[i] === 'x' && got[i + 1] === 'x') out.push(2), i += 2;
    else throw new Error(`U+${c.toString(16)}: pieces ${JSON.stringify(got.slice(i, i + 3))}`);
  }
  return out;
}

// The flags of every code point (but '#', plain punctuation) under library tk.
function classes(tk) {
  const clean = tk.bertNormalizer({ cleanText: true, handleChineseChars: false, stripAccents: false, lowercase: false });
  const strip = tk.bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: true, lowercase: false });
  const marks = tk.stripAccentsNormalizer();
  const pre = tk.bertPreTokenizer();
  const flags = new Map([[0x23, 4]]);
  const cps = codePoints();
  for (let i = 0; i < cps.length; i += CHUNK) {
    const part = cps.slice(i, i + CHUNK);
    const [c1, s1, p1, m1] = [perChar(clean, part), perChar(strip, part), splits(pre, part), perChar(marks, part)];
    part.forEach((c, k) => { /* strip_accents leaves c, removes it, or leaves what NFD made of it less the marks */
      const stripped = s1[k] === '' ? 8 : s1[k] === String.fromCodePoint(c) ? 0 : 16;
      flags.set(c, p1[k] | (c1[k] === '' ? 1 : 0) | stripped | (m1[k] === '' ? 32 : 0));
    });
  }
  return flags;
}

const [m13, m23] = process.argv.slice(2).map((p) => path.resolve(p));
const a = classes(require(path.join(m13, 'tokenizers'))), b = classes(require(path.join(m23, 'tokenizers')));
for (const [c, f] of a) if (b.get(c) !== f) throw new Error(`the builds disagree on U+${c.toString(16)}: ${f} and ${b.get(c)}`);

const ranges = [];
for (let c = 0; c <= 0x10ffff; c++) {
  const f = a.get(c) || 0, last = ranges[ranges.length - 1];
  if (last && last[2] === f && last[1] === c - 1) last[1] = c;
  else if (f) ranges.push([c, c, f]);
}
const hex = (c) => '0x' + c.toString(16).toUpperCase().padStart(4, '0');
const lines = [
  '/* bert_unicode.c - written by tools/gen-bert-unicode.js from npm\'s tokenizers',
  ' * 0.13.3 and 0.23.2 (Hugging Face\'s Rust library), which agree on every',
  ' * class; do not edit. The classes of the code points that BertNormalizer and',
  ' * BertPreTokenizer test, as the library tests them (its Unicode tables are',
  ' * older than today\'s), in ranges of equal flags:',
  ...FLAGS.map(([name, v, what]) => ` *   ${v.toString().padStart(2)} ${name}: ${what}`),
  ' * A code point in no range has none. */',
  '#include "wp.h"',
  '',
  'const api__bert_range api__bert_ranges[] = {',
  ...ranges.map(([lo, hi, f]) => `    {${hex(lo)}, ${hex(hi)}, ${f}},`),
  '};',
  '',
  `const unsigned api__bert_n_ranges = ${ranges.length};`,
];
process.stdout.write(lines.join('\n') + '\n');
