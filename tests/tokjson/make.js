// make.js - writes the tiny tokenizer folders of tests/tokjson/ (one per
// family: tokenizer.json and, where the family has them, tokenizer_config.json,
// vocab.txt, special_tokens_map.json) that tests/test_api_tokjson.c compares
// with Hugging Face's tokenizers.
//
// The vocabularies and merges are trained here by npm's `tokenizers` 0.13.3
// (Hugging Face's Rust library): a byte-level BPE (ByteLevel pre-tokenizer)
// and a SentencePiece-style BPE (Metaspace pre-tokenizer) on
// tests/bpe/corpus.jsonl, and WordPiece vocabularies (BertNormalizer,
// BertPreTokenizer) on the lines of the corpora in Latin, Greek, Cyrillic,
// CJK and kana scripts (the others then have no tokens: [UNK]). Each
// family's file then has the shape of the real family's tokenizer.json
// (normalizer, pre-tokenizer with its regex, post-processor, decoder, added
// tokens, merges as "a b" or ["a", "b"]) as transformers'
// convert_slow_tokenizer.py and the published files write it: the 0.13.3
// binding cannot build a Split with a Regex, a Metaspace with a
// prepend_scheme, ignore_merges or list merges itself. The BERT-shaped
// folders also hold the vocab.txt and tokenizer_config.json an older
// transformers saved, from which BertConverter makes that same tokenizer.json.
//
//   NODE_PATH=build/npm/tokjson/node_modules node tests/tokjson/make.js OUTDIR
// writes OUTDIR/<family>/...; the test runs it and compares with the
// committed tests/tokjson/ (a generated file equal to what its generator writes).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const tk = require('tokenizers');

const root = path.join(__dirname, '..', '..');
const out = process.argv[2];
const readLines = (rel) => fs.readFileSync(path.join(root, rel), 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const corpus = readLines('tests/bpe/corpus.jsonl');

const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Trains a BPE with pre-tokenizer pre on text; its {vocab, merges} as saved.
function train(pre, text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokjson-'));
  fs.writeFileSync(path.join(dir, 'train.txt'), text);
  const t = new tk.Tokenizer(tk.BPE.empty());
  t.setPreTokenizer(pre);
  t.train([path.join(dir, 'train.txt')]);
  t.save(path.join(dir, 'out.json'));
  const model = JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8')).model;
  fs.rmSync(dir, { recursive: true });
  return { vocab: model.vocab, merges: model.merges };
}

// GPT-2's byte symbols, in byte order.
function byteSymbols() {
  const syms = [];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    syms.push(String.fromCodePoint(printable ? b : 256 + n++));
  }
  return syms;
}

// The tokens of list in order from id first on, then the trained vocab's
// tokens (by their trained id) that are not among them.
function renumber(first, list, trained) {
  const vocab = {};
  let id = first;
  for (const s of list) if (!(s in vocab)) vocab[s] = id++;
  for (const [s] of Object.entries(trained).sort((a, b) => a[1] - b[1])) if (!(s in vocab)) vocab[s] = id++;
  return vocab;
}

const added = (id, content, special, more = {}) => Object.assign(
  { id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special }, more);
const bytelevel = (prefix, trim, regex) => ({ type: 'ByteLevel', add_prefix_space: prefix, trim_offsets: trim, use_regex: regex });
const split = (regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false });
const template = (bos, id) => ({
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
  pair: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
    { SpecialToken: { id: bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
  special_tokens: { [bos]: { id: bos, ids: [id], tokens: [bos] } },
});
const bpe = (vocab, merges, more = {}) => Object.assign({
  type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
  fuse_unk: false, byte_fallback: false }, more, { vocab, merges });
const file = (addedTokens, normalizer, pre, post, decoder, model) => ({
  version: '1.0', truncation: null, padding: null, added_tokens: addedTokens, normalizer,
  pre_tokenizer: pre, post_processor: post, decoder, model });
const spDecoder = (strip) => ({ type: 'Sequence', decoders: [
  { type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' },
  ...(strip ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : [])] });
const asLists = (merges) => merges.map((m) => m.split(' '));

function families() {
  const text = corpus.join('\n') + '\n';
  const bl = train(tk.byteLevelPreTokenizer(false, true), text);
  const latin = corpus.filter((s) => /^[\x00-\x7f\u00c0-\u024f]*$/.test(s)).join('\n') + '\n';
  const sp = train(tk.metaspacePreTokenizer('▁', true), latin);
  const syms = byteSymbols();
  const f = {};

  const gpt2 = renumber(0, [], bl.vocab);
  for (const s of syms) if (!(s in gpt2)) gpt2[s] = Object.keys(gpt2).length;
  const eot = Object.keys(gpt2).length;
  f.gpt2 = { json: file([added(eot, '<|endoftext|>', true)], null, bytelevel(false, true, true),
    bytelevel(true, false, true), bytelevel(true, true, true),
    bpe(Object.assign({}, gpt2, { '<|endoftext|>': eot }), bl.merges, { continuing_subword_prefix: '', end_of_word_suffix: '' })) };

  const smol = renumber(0, ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].concat(syms), bl.vocab);
  f.smollm2 = { json: file(['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((s, i) => added(i, s, true)), null,
    { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, bytelevel(false, true, true)] },
    bytelevel(true, false, true), bytelevel(true, true, true), bpe(smol, bl.merges)),
    config: { add_prefix_space: false, bos_token: '<|im_start|>', eos_token: '<|im_end|>', pad_token: '<|im_end|>',
      unk_token: '<|endoftext|>', tokenizer_class: 'GPT2Tokenizer', clean_up_tokenization_spaces: false } };

  const qv = renumber(0, syms, bl.vocab), q0 = Object.keys(qv).length;
  const qadded = [added(q0, '<|endoftext|>', true), added(q0 + 1, '<|im_start|>', true), added(q0 + 2, '<|im_end|>', true),
    added(q0 + 3, '<think>', false, { normalized: false }), added(q0 + 4, '</think>', false, { normalized: false })];
  const qwen = (merges) => file(qadded, { type: 'NFC' },
    { type: 'Sequence', pretokenizers: [split(QWEN2), bytelevel(false, false, false)] },
    bytelevel(false, false, false), bytelevel(false, false, false), bpe(qv, merges, { continuing_subword_prefix: '', end_of_word_suffix: '' }));
  const qconfig = { add_prefix_space: false, bos_token: null, eos_token: '<|im_end|>', pad_token: '<|endoftext|>',
    errors: 'replace', tokenizer_class: 'Qwen2Tokenizer', clean_up_tokenization_spaces: false, split_special_tokens: false };
  f.qwen2 = { json: qwen(bl.merges), config: qconfig };
  f.qwen3 = { json: qwen(asLists(bl.merges)), config: qconfig };

  const lv = renumber(0, syms, bl.vocab);
  for (const w of ['Ġzyx', 'Ġjourneys', 'quux']) if (!(w in lv)) lv[w] = Object.keys(lv).length; // whole words without merges
  const l0 = Object.keys(lv).length;
  const lspecial = ['<|begin_of_text|>', '<|end_of_text|>', '<|reserved_special_token_0|>', '<|start_header_id|>',
    '<|end_header_id|>', '<|eot_id|>'];
  f.llama3 = { json: file(lspecial.map((s, i) => added(l0 + i, s, true)), null,
    { type: 'Sequence', pretokenizers: [split(LLAMA3), bytelevel(false, true, false)] },
    { type: 'Sequence', processors: [bytelevel(true, false, true), template('<|begin_of_text|>', l0)] },
    bytelevel(true, true, true), bpe(lv, bl.merges, { ignore_merges: true })),
    config: { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>', clean_up_tokenization_spaces: true,
      model_input_names: ['input_ids', 'attention_mask'], tokenizer_class: 'PreTrainedTokenizerFast' } };

  const hex = [...Array(256).keys()].map((b) => '<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>');
  const llv = renumber(0, ['<unk>', '<s>', '</s>'].concat(hex), sp.vocab);
  const lladded = ['<unk>', '<s>', '</s>'].map((s, i) => added(i, s, true, { normalized: false }));
  f.llama2 = { json: file(lladded,
    { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    null, template('<s>', 1), spDecoder(true), bpe(llv, sp.merges, { unk_token: '<unk>', fuse_unk: true, byte_fallback: true })),
    config: { add_bos_token: true, add_eos_token: false, bos_token: { __type: 'AddedToken', content: '<s>', lstrip: false,
      normalized: false, rstrip: false, single_word: false }, eos_token: '</s>', unk_token: '<unk>', legacy: false,
      clean_up_tokenization_spaces: false, pad_token: null, tokenizer_class: 'LlamaTokenizer' } };
  f.mistral = { json: file(lladded, null, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false },
    template('<s>', 1), spDecoder(true), bpe(llv, sp.merges, { unk_token: '<unk>', fuse_unk: true, byte_fallback: true, ignore_merges: false })),
    config: { add_bos_token: true, add_eos_token: false, bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>',
      legacy: false, tokenizer_class: 'LlamaTokenizer' } };

  const gv = renumber(0, ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>'].concat(hex), sp.vocab);
  const gadded = ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>'].map((s, i) => added(i, s, true, { normalized: false }));
  gadded.push(added(Object.keys(gv).length, '<image_soft_token>', true, { normalized: false }));
  f.gemma3 = { json: file(gadded, { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
    { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
    template('<bos>', 2), spDecoder(false), bpe(gv, asLists(sp.merges), { unk_token: '<unk>', fuse_unk: true, byte_fallback: true, ignore_merges: false })),
    config: { add_bos_token: true, add_eos_token: false, bos_token: '<bos>', eos_token: '<eos>', pad_token: '<pad>',
      unk_token: '<unk>', image_token: '<image_soft_token>', tokenizer_class: 'GemmaTokenizer', spaces_between_special_tokens: false } };

  const pv = renumber(0, ['<|endoftext|>', '<|padding|>'].concat(syms), bl.vocab), p0 = Object.keys(pv).length;
  f.pythia = { json: file([added(0, '<|endoftext|>', true, { normalized: false }), added(1, '<|padding|>', true, { normalized: false }),
    added(p0, '  ', false, { normalized: true }), added(p0 + 1, '   ', false, { normalized: true }), added(p0 + 2, '\t\t', false, { normalized: true })],
    { type: 'NFC' }, bytelevel(false, true, true), bytelevel(false, true, true), bytelevel(false, true, true),
    bpe(pv, bl.merges, { unk_token: null })),
    config: { add_bos_token: false, add_eos_token: false, bos_token: '<|endoftext|>', eos_token: '<|endoftext|>',
      unk_token: '<|endoftext|>', tokenizer_class: 'GPTNeoXTokenizer' } };

  // Not a family: the flags of added tokens that some files set (Phi-3's rstrip,
  // BART's <mask> lstrip, single_word), on GPT-2's shape.
  const fl = Object.assign({}, gpt2), f0 = Object.keys(fl).length;
  f.flags = { json: file([added(f0, '<mask>', true, { lstrip: true }), added(f0 + 1, '<|end|>', true, { rstrip: true }),
    added(f0 + 2, 'word', false, { single_word: true }), added(f0 + 3, 'ab', false, { lstrip: true, rstrip: true, normalized: false }),
    added(f0 + 4, '<sep>', false, { single_word: true, lstrip: true })], null, bytelevel(false, true, true),
  bytelevel(true, false, true), bytelevel(true, true, true), bpe(fl, bl.merges)) };
  roberta(f, bl, syms);
  wordpieces(f);
  return f;
}

// RoBERTa: GPT-2's byte-level BPE between <s> <pad> </s> <unk> and <mask>,
// RobertaProcessing.
function roberta(f, bl, syms) {
  const specials = ['<s>', '<pad>', '</s>', '<unk>'];
  const v = renumber(0, specials.concat(syms), bl.vocab), mask = Object.keys(v).length;
  v['<mask>'] = mask;
  f.roberta = { json: file(specials.map((s, i) => added(i, s, true, { normalized: true }))
    .concat([added(mask, '<mask>', true, { lstrip: true })]), null, bytelevel(false, true, true),
  { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: false },
  bytelevel(true, true, true), bpe(v, bl.merges, { continuing_subword_prefix: '', end_of_word_suffix: '' })),
  config: { add_prefix_space: false, bos_token: '<s>', cls_token: '<s>', eos_token: '</s>', errors: 'replace',
    mask_token: { __type: 'AddedToken', content: '<mask>', lstrip: true, normalized: false, rstrip: false, single_word: false },
    model_max_length: 512, pad_token: '<pad>', sep_token: '</s>', tokenizer_class: 'RobertaTokenizer',
    trim_offsets: true, unk_token: '<unk>' } };
}

// The lines of the corpora in the scripts the WordPiece vocabularies know.
function wordpieceText() {
  const lines = [].concat(corpus, readLines('tests/tokjson/wordpiece.jsonl'), ...readLines('tests/tokjson/pairs.jsonl'));
  const known = /^[\u0000-\u036f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff\u2000-\u206f\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]*$/u;
  return lines.filter((s) => known.test(s)).join('\n') + '\n';
}

// A WordPiece vocabulary for text as the library normalizes and
// pre-tokenizes it with normalizer norm (built here, not trained: the
// 0.13.3 trainer orders its ties differently from run to run): every
// character, alone and after "##"; the words seen twice; the starts (2 to 5
// characters) and the "##" middles and ends (2 to 4) seen four times: the
// characters, then the first `more` others by count and text.
function buildWordPiece(norm, text, more) {
  const n = tk.bertNormalizer(norm), pre = tk.bertPreTokenizer();
  const words = [].concat(...text.split('\n').map((l) => pre.preTokenizeString(n.normalizeString(l)).map((p) => p[0])));
  const count = new Map(), chars = new Set();
  const add = (s, k = 1) => count.set(s, (count.get(s) || 0) + k);
  for (const w of words) {
    const c = [...w];
    for (const x of c) chars.add(x), chars.add('##' + x);
    add(w);
    for (let k = 2; k <= 5 && k < c.length; k++) add(c.slice(0, k).join(''), 0.5);
    for (let i = 1; i < c.length; i++) for (let k = 2; k <= 4 && i + k <= c.length; k++) add('##' + c.slice(i, i + k).join(''), 0.5);
  }
  const order = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  const single = [...chars].sort(order);
  const rest = [...count].filter(([s, k]) => k >= 2 && !chars.has(s)).sort((a, b) => b[1] - a[1] || order(a[0], b[0]));
  return single.concat(rest.slice(0, more).map((e) => e[0]));
}

// BERT's layout: [PAD] 0, [unused0] .. [unused98], [UNK] 100, [CLS] 101,
// [SEP] 102, [MASK] 103, then the trained tokens.
function bertVocab(tokens) {
  const head = ['[PAD]'].concat([...Array(99).keys()].map((i) => `[unused${i}]`), ['[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  return renumber(0, head.concat(tokens), {});
}

const bertNorm = (lower, strip = null, chinese = true) => ({ type: 'BertNormalizer', clean_text: true,
  handle_chinese_chars: chinese, strip_accents: strip, lowercase: lower });
const bertTemplate = {
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
  pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
    { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
  special_tokens: { '[CLS]': { id: '[CLS]', ids: [101], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [102], tokens: ['[SEP]'] } },
};
const bertAdded = () => [[0, '[PAD]'], [100, '[UNK]'], [101, '[CLS]'], [102, '[SEP]'], [103, '[MASK]']]
  .map(([id, s]) => added(id, s, true));
const wordpiece = (vocab, more = {}) => Object.assign({ type: 'WordPiece', unk_token: '[UNK]',
  continuing_subword_prefix: '##', max_input_chars_per_word: 100 }, more, { vocab });
const bertJson = (norm, vocab, post = bertTemplate) => file(bertAdded(), norm, { type: 'BertPreTokenizer' }, post,
  { type: 'WordPiece', prefix: '##', cleanup: true }, wordpiece(vocab));
const vocabTxt = (vocab) => Object.entries(vocab).sort((a, b) => a[1] - b[1]).map((e) => e[0] + '\n').join('');
const bertConfig = (more) => Object.assign({ cls_token: '[CLS]', do_basic_tokenize: true, do_lower_case: true,
  mask_token: '[MASK]', model_max_length: 512, never_split: null, pad_token: '[PAD]', sep_token: '[SEP]',
  strip_accents: null, tokenize_chinese_chars: true, tokenizer_class: 'BertTokenizer', unk_token: '[UNK]' }, more);

// BERT uncased and cased, BERT Chinese, all-MiniLM-L6-v2, DistilBERT, and
// the other WordPiece steps on one file.
function wordpieces(f) {
  const text = wordpieceText();
  const uncased = bertVocab(buildWordPiece({ cleanText: true, handleChineseChars: true, stripAccents: true, lowercase: true }, text, 400));
  const cased = bertVocab(buildWordPiece({ cleanText: true, handleChineseChars: true, stripAccents: false, lowercase: false }, text, 450));
  const cjk = /[\u3000-\u30ff\u4e00-\u9fff]/u;
  const zhText = text.split('\n').filter((s) => cjk.test(s)).join('\n') + '\n' + corpus.slice(0, 20).join('\n') + '\n';
  const chinese = bertVocab(buildWordPiece({ cleanText: true, handleChineseChars: true, stripAccents: false, lowercase: false }, zhText, 150));
  f['bert-uncased'] = { json: bertJson(bertNorm(true), uncased), vocab: uncased,
    config: bertConfig({ clean_up_tokenization_spaces: true }) };
  f['bert-cased'] = { json: bertJson(bertNorm(false), cased), vocab: cased,
    config: bertConfig({ do_lower_case: false, tokenizer_class: undefined }),
    map: { cls_token: '[CLS]', mask_token: '[MASK]', pad_token: '[PAD]', sep_token: '[SEP]', unk_token: '[UNK]' } };
  f['bert-chinese'] = { json: bertJson(bertNorm(false), chinese), vocab: chinese,
    config: { do_lower_case: false, model_max_length: 512 } };
  const decoder = {};
  for (const [id, s] of [[0, '[PAD]'], [100, '[UNK]'], [101, '[CLS]'], [102, '[SEP]'], [103, '[MASK]']])
    decoder[id] = { content: s, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true };
  f.minilm = { json: Object.assign(bertJson(bertNorm(true), uncased), {
    truncation: { direction: 'Right', max_length: 128, strategy: 'LongestFirst', stride: 0 },
    padding: { strategy: { Fixed: 128 }, direction: 'Right', pad_to_multiple_of: null, pad_id: 0, pad_type_id: 0, pad_token: '[PAD]' } }),
  vocab: uncased, config: Object.assign({ added_tokens_decoder: decoder }, bertConfig({ clean_up_tokenization_spaces: true })),
  extra: { 'sentence_bert_config.json': { max_seq_length: 256, do_lower_case: false } } };
  f.distilbert = { json: bertJson(bertNorm(true, true), uncased, { type: 'BertProcessing', sep: ['[SEP]', 102], cls: ['[CLS]', 101] }),
    vocab: uncased, config: bertConfig({ strip_accents: true, tokenizer_class: 'DistilBertTokenizer' }) };
  f.wordpiece = { json: file(bertAdded(), { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }] },
    { type: 'Sequence', pretokenizers: [{ type: 'Whitespace' }, { type: 'Punctuation', behavior: 'Contiguous' },
      { type: 'WhitespaceSplit' }, { type: 'Digits', individual_digits: true }] },
    bertTemplate, { type: 'WordPiece', prefix: '##', cleanup: false }, wordpiece(uncased, { max_input_chars_per_word: 12 })) };
}

for (const [name, fam] of Object.entries(families())) {
  const dir = path.join(out, name);
  const writeJson = (file, j) => fs.writeFileSync(path.join(dir, file), JSON.stringify(j, null, 2) + '\n');
  fs.mkdirSync(dir, { recursive: true });
  writeJson('tokenizer.json', fam.json);
  if (fam.config) writeJson('tokenizer_config.json', fam.config);
  if (fam.map) writeJson('special_tokens_map.json', fam.map);
  if (fam.vocab) fs.writeFileSync(path.join(dir, 'vocab.txt'), vocabTxt(fam.vocab));
  for (const [file, j] of Object.entries(fam.extra || {})) writeJson(file, j);
}
