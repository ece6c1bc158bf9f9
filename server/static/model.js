/* model.js - the model view: POST /model/gpt2, every layer and head (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Model view: POST /model/gpt2, every layer and head ===================== */

/* BertViz's model view: seed 003's whole GPT-2 built from a seed, or a
 * checkpoint the server loaded with --model (GET /models), on text the
 * server tokenizes (--tokenizer) or on token ids; one thumbnail per layer and
 * head, a click opens that map large with the tokens on its axes and each
 * weight on hover. Every reply format becomes the same Float32Array. */
const MODEL_INPUTS = {text: "m_text", idx: "m_text", tokenizer: "m_tokenizer", model: "m_model", module: "m_model",
                      layers: "m_layers", heads: "m_heads", query_rows: "m_row_start", top_k: "m_top_k",
                      init: "m_seed", dtype: "m_float16", qkv_bias: "m_qkv_bias"};
/* The inputs of the config's columns (core's family table: vocab, context,
 * layers, heads, width); their names are the family's own. */
const COL_IDS = ["m_vocab_size", "m_block_size", "m_n_layer", "m_n_head", "m_n_embd"];
const FAMILY_NOTES = {
  GPT2: "<code>torch.manual_seed(seed); GPT2(GPTConfig(...))</code>: seed 003's model, untrained.",
  GPTModel: "<code>torch.manual_seed(seed); GPTModel(cfg)</code>: the book's chapter-4 model, untrained.",
};
/* GPT-2's ids of the seed sentence, for a server without a tokenizer. */
const SEED_IDS = "7120 7002 4940 351 530 2239";
const mv = viewer.model = {models: [], tokenizers: null, renders: 0, errors: 0, timings: {}, reply: null, ctx: null,
                           open: null, noTokenizer: false, last: null};

/* A family's config names in the table's column order, from the API
 * document (the reply's config, one schema per family). */
function familyNames(family) {
  const cfg = viewer.doc?.components?.schemas?.Gpt2Response?.properties?.config;
  const s = (cfg?.oneOf || []).find((x) => x.title === family);
  return s ? Object.keys(s.properties) : ["vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "activation"];
}

/* The family of the model chosen: a seed-built one ("" is GPT2, "@NAME"
 * another), or a loaded model's. */
function chosenFamily() {
  const sel = $("m_model").value, md = mv.models.find((x) => x.name === sel);
  return md ? md.module : sel ? sel.slice(1) : "GPT2";
}

function mstatus(text, error) {
  $("m_status").textContent = text;
  $("m_status").className = error ? "error" : "";
}

/* "0 3 5", "0, 3" or "[0, 3]": the numbers; "" or "all": null. */
function intList(text, what) {
  const t = text.trim();
  if (t === "" || t === "all") return null;
  const out = t.replace(/[[\],]/g, " ").split(/\s+/).filter(Boolean).map(Number);
  if (out.some((x) => !Number.isInteger(x))) {
    const e = new Error(what + ": write whole numbers separated by spaces or commas");
    e.field = what === "token ids" ? "idx" : what;
    throw e;
  }
  return out;
}

/* A token as text with its spaces visible (GPT-2 tokens carry their leading space). */
function showToken(t) {
  return String(t).replace(/ /g, "\u2423").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5") || "\u2205";
}

/* The request the form describes. */
function modelRequest() {
  const req = {};
  const name = $("m_model").value;
  if (name && !name.startsWith("@")) req.model = name;
  else {
    const family = chosenFamily(), names = familyNames(family);
    if (family !== "GPT2") req.module = family;
    COL_IDS.forEach((id, c) => { const v = numberOr(id); if (v !== null) req[names[c]] = v; });
    if (names.includes("qkv_bias") && $("m_qkv_bias").checked) req.qkv_bias = true;
    req.init = {seed: numberOr("m_seed") ?? 0};
  }
  const textMode = $("m_input_text").checked, tok = $("m_tokenizer").value.trim();
  let T = null;
  if (textMode) req.text = $("m_text").value;
  else {
    req.idx = intList($("m_text").value, "token ids");
    if (!req.idx) { const e = new Error("token ids: type them separated by spaces, e.g. 7120 7002 4940"); e.field = "idx"; throw e; }
    T = req.idx.length;
  }
  if (tok) req.tokenizer = tok;
  req.return = ["attn_weights", "idx"];
  const withTokens = textMode || tok || !mv.noTokenizer;
  if (withTokens) req.return.push("tokens");
  /* not the model's own tokenizer: name one (the server reads text unnamed
   * only with the model's own or the one --tokenizer) */
  const md = mv.models.find((x) => x.name === name);
  if (withTokens && !tok && mv.tokenizers && mv.tokenizers.length && !(md && md.tokenizer))
    req.tokenizer = mv.tokenizers[0].name;
  const layers = intList($("m_layers").value, "layers"), heads = intList($("m_heads").value, "heads");
  if (layers) req.layers = layers;
  if (heads) req.heads = heads;
  encoderRequest(req);
  const r0 = numberOr("m_row_start"), r1 = numberOr("m_row_stop");
  if (r0 !== null || r1 !== null) {
    /* the stop left out: the end, known for ids, and for text once it ran */
    if (r1 === null && T === null && mv.last && mv.last.text === req.text && mv.last.model === name) T = mv.last.T;
    if (r1 === null && T === null) {
      const e = new Error("query rows: give the stop too (the text's token count is known after a run)");
      e.field = "query_rows";
      throw e;
    }
    req.query_rows = [r0 ?? 0, r1 ?? T];
  }
  if (numberOr("m_top_k") !== null) req.top_k = numberOr("m_top_k");
  req.output_format = $("m_format").value;
  if ($("m_float16").checked) req.dtype = "float16";
  return req;
}

function b64bytes(s) {
  const bin = atob(s), u = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
  return u;
}

/* A tensor of a JSON reply (nested arrays, {shape, data}, {shape, dtype, base64}) as {shape, data}. */
function jsonTensor(v) {
  if (Array.isArray(v)) return {shape: arrayShape(v), data: Float32Array.from(v.flat(Infinity))};
  if (typeof v.base64 === "string") {
    const u = b64bytes(v.base64), n = v.shape.reduce((a, x) => a * x, 1);
    if (v.dtype === "float16") return {shape: v.shape, data: Float32Array.from(new Uint16Array(u.buffer, 0, n), f16)};
    if (v.dtype === "int32") return {shape: v.shape, data: new Int32Array(u.buffer, 0, n)};
    return {shape: v.shape, data: new Float32Array(u.buffer, 0, n)};
  }
  return {shape: v.shape, data: Float32Array.from(v.data)};
}

/* Any reply format as readSafetensors gives it: {meta, t, bytes}. */
async function readModelReply(r, format) {
  const buf = await r.arrayBuffer();
  if (format === "safetensors" || (r.headers.get("Content-Type") || "").startsWith("application/octet-stream")) {
    const st = readSafetensors(buf);
    if (st.t.idx) st.meta.idx = Array.from(st.t.idx.data);
    st.bytes = buf.byteLength;
    return st;
  }
  const j = JSON.parse(new TextDecoder().decode(buf));
  const st = {meta: {}, t: {}, bytes: buf.byteLength};
  for (const k of ["module", "model", "config", "shape", "layers", "tokens", "sentence_b_start", "neuron_view"]) if (k in j) st.meta[k] = j[k];
  if (j.idx) st.meta.idx = Array.isArray(j.idx) ? j.idx.flat(Infinity) : Array.from(jsonTensor(j.idx).data);
  const w = j.attn_weights;
  if (w && w.indices) {
    st.t["attn_weights.values"] = jsonTensor(w.values);
    st.t["attn_weights.indices"] = jsonTensor(w.indices);
  } else if (w) st.t.attn_weights = jsonTensor(w);
  return st;
}

async function errorOf(r) {
  try { return (await r.json()).error || null; } catch (_) { return null; }
}

function errorLine(status, e) {
  return e ? status + " " + e.code + (e.field ? " (" + e.field + ")" : "") + ": " + e.message : "HTTP " + status;
}

/* Shows a refusal: the message, the input at fault outlined, the old maps dimmed. */
function modelError(text, field) {
  for (const el of document.querySelectorAll("#main_model .bad")) el.classList.remove("bad");
  const base = field ? String(field).split(/[.[]/)[0] : "";
  const col = familyNames(chosenFamily()).indexOf(base);
  const input = MODEL_INPUTS[base] || COL_IDS[col];
  if (input) $(input).classList.add("bad");
  if (base === "text" && /has none/.test(text))
    text += "\nOr choose \u201ctoken ids\u201d and type ids, e.g. 7120 7002 4940 351 530 2239.";
  mstatus(text, true);
  $("m_view").classList.add("stale");
  mv.errors++;
}

async function runModel() {
  let req;
  try { req = modelRequest(); } catch (e) { return modelError(e.message, e.field); }
  $("m_request").textContent = pretty(req);
  $("m_run").disabled = true;
  mstatus("running the model\u2026");
  const t0 = performance.now();
  try {
    let r = await post2(req);
    if (r.status === 400 && req.idx && req.return.includes("tokens")) {
      /* ids without a tokenizer: the axes show the ids */
      const e = await errorOf(r);
      if (!(e && /^return/.test(e.field || "") && /tokenizer/.test(e.message))) return modelError(errorLine(400, e), e && e.field);
      mv.noTokenizer = true;
      req.return = req.return.filter((x) => x !== "tokens");
      $("m_request").textContent = pretty(req);
      r = await post2(req);
    }
    if (!r.ok) { const e = await errorOf(r); return modelError(errorLine(r.status, e), e && e.field); }
    const st = await readModelReply(r, req.output_format);
    const tReply = performance.now();
    const shape = st.meta.shape || {}, T = shape.tokens;
    const m = mapOf(st, "attn_weights", T);
    if (!m || !m.P) return modelError("the reply has no attn_weights");
    const H = m.lead[m.lead.length - 1], L = m.P / H;
    const range = (n) => Array.from({length: n}, (_, i) => i);
    const tokens = firstRow(st.meta.tokens) || null, idx = st.meta.idx || req.idx || [];
    const md = chosenModel(), bStart = (st.meta.sentence_b_start || [0])[0] || 0;
    const ctx = {m, full: m, L, H, T, layers: st.meta.layers || range(L), heads: req.heads || range(H),
                 labels: tokens ? tokens.map(showToken) : idx.map(String), tokens, idx, bStart,
                 q0: req.query_rows ? req.query_rows[0] : 0, scale: $("m_color_scale").value, req,
                 encoder: isEncoder(md), shape: modelShape(md)};
    applyPair(ctx);
    for (const el of document.querySelectorAll("#main_model .bad")) el.classList.remove("bad");
    $("m_view").classList.remove("stale");
    mv.reply = st;
    mv.ctx = ctx;
    mv.last = {text: req.text, key: JSON.stringify(req.text), model: req.model || "", T};
    mv.timings = {request_ms: tReply - t0, reply_bytes: st.bytes};
    drawModelTokens(ctx);
    await drawGrid(ctx, tReply);
    const keep = mv.open && ctx.layers.indexOf(mv.open.layer) >= 0 && ctx.heads.indexOf(mv.open.head) >= 0
      ? ctx.layers.indexOf(mv.open.layer) * H + ctx.heads.indexOf(mv.open.head) : 0;
    openHead(keep);
    mv.timings.drawn_at = performance.now();
    /* the config's columns (core's family table): vocab, context, layers, heads, width */
    const cfg = st.meta.config || {}, k = Object.keys(cfg), v = Object.values(cfg);
    $("m_summary").textContent = (st.meta.model ? st.meta.model : (st.meta.module || "GPT2") + " from seed " + req.init.seed) +
      ": " + v[2] + " layers \u00d7 " + v[3] + " heads, " + k[4] + " " + v[4] + ", T = " + T +
      (L * H < v[2] * v[3] ? "; showing " + L + " \u00d7 " + H : "") + (ctx.encoder ? "; two-way (an encoder)" : "");
    const t = mv.timings;
    mstatus("reply " + fmtBytes(t.reply_bytes) + " (" + req.output_format +
            (req.dtype ? ", float16" : "") + ") in " + t.request_ms.toFixed(0) + " ms; first thumbnail " +
            t.first_thumb_ms.toFixed(0) + " ms after it, all " + L * H + " in " + t.all_thumbs_ms.toFixed(0) + " ms");
    await afterRun(ctx, st);
    mv.renders++;
  } catch (e) {
    modelError(String(e));
  } finally {
    $("m_run").disabled = false;
  }
}

async function post2(req) {
  return fetch("/model/gpt2", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(req)});
}

/* The tokens as the model saw them, each with its id. */
function drawModelTokens(ctx) {
  const box = $("m_tokens");
  box.innerHTML = "";
  const n = ctx.idx.length || ctx.labels.length, shown = Math.min(n, 256);
  for (let i = 0; i < shown; i++) {
    const c = document.createElement("span");
    c.className = "chip";
    c.textContent = ctx.tokens ? showToken(ctx.tokens[i]) : String(ctx.idx[i]);
    c.title = "position " + i + (ctx.idx.length ? ", token id " + ctx.idx[i] : "") + (ctx.bStart ? (i < ctx.bStart ? ", sentence A" : ", sentence B") : "");
    if (ctx.bStart && i >= ctx.bStart) c.classList.add("sentb");
    box.appendChild(c);
  }
  if (n > shown) box.append(" \u2026 " + (n - shown) + " more");
}

/* The colour levels of one map shrunk to nx x ny pixels: each pixel the
 * largest level of its block, -1 where no entry was given (top-k). */
function thumbLevels(m, p, nx, ny, scale) {
  const lv = new Int16Array(nx * ny).fill(-1), d = m.data, off = p * m.R * m.C;
  const xs = new Int32Array(m.C);
  for (let j = 0; j < m.C; j++) xs[j] = Math.floor(j * nx / m.C);
  const sc = scaler(m, p, "attn_weights", scale);
  for (let i = 0; i < m.R; i++) {
    const div = sc(i), row = Math.floor(i * ny / m.R) * nx, o = off + i * m.C;
    for (let j = 0; j < m.C; j++) {
      const v = d[o + j];
      if (Number.isNaN(v)) continue;
      const l = level(v, div), k = row + xs[j];
      if (l > lv[k]) lv[k] = l;
    }
  }
  return lv;
}

function drawThumb(m, p, size, scale) {
  const nx = Math.min(m.C, size), ny = Math.max(1, Math.min(m.R, Math.ceil(m.R * nx / m.C)));
  const cv = document.createElement("canvas");
  cv.width = nx;
  cv.height = ny;
  const c = cv.getContext("2d"), img = c.createImageData(nx, ny), px = new Uint32Array(img.data.buffer);
  const lv = thumbLevels(m, p, nx, ny, scale);
  for (let k = 0; k < lv.length; k++) px[k] = lv[k] < 0 ? GRAY_ABSENT : PALETTE[lv[k]];
  c.putImageData(img, 0, 0);
  cv.style.width = size + "px";
  cv.style.height = Math.max(3, Math.round(size * m.R / m.C)) + "px";
  return cv;
}

/* The layers x heads grid, a row of layers at a time in slices of about
 * 30 ms, so the first thumbnails show right after the reply. */
function drawGrid(ctx, tReply) {
  const grid = $("m_grid"), {m, L, H} = ctx;
  grid.innerHTML = "";
  const avail = Math.max(400, $("m_view").clientWidth);
  const size = Math.max(24, Math.min(96, Math.floor((avail * 0.55 - 56) / H) - 7));
  grid.style.gridTemplateColumns = "auto repeat(" + H + ", " + (size + 4) + "px)";
  grid.appendChild(Object.assign(document.createElement("span"), {className: "lab", textContent: "layer \\ head"}));
  for (const h of ctx.heads) grid.appendChild(Object.assign(document.createElement("span"), {className: "lab", textContent: String(h)}));
  let p = 0;
  return new Promise((done) => {
    const step = () => {
      const t0 = performance.now();
      while (p < m.P && (p === 0 || performance.now() - t0 < 30)) {
        const li = Math.floor(p / H), hi = p % H;
        if (hi === 0) grid.appendChild(Object.assign(document.createElement("span"), {className: "lab", textContent: String(ctx.layers[li])}));
        const b = document.createElement("button");
        b.className = "thumb";
        b.title = "layer " + ctx.layers[li] + ", head " + ctx.heads[hi] + ": click to open";
        b.setAttribute("aria-label", "layer " + ctx.layers[li] + ", head " + ctx.heads[hi]);
        Object.assign(b.dataset, {p, layer: ctx.layers[li], head: ctx.heads[hi]});
        b.appendChild(drawThumb(m, p, size, ctx.scale));
        grid.appendChild(b);
        if (p === 0) mv.timings.first_thumb_ms = performance.now() - tReply;
        p++;
      }
      if (p < m.P) setTimeout(step, 0);
      else { mv.timings.all_thumbs_ms = performance.now() - tReply; done(); }
    };
    step();
  });
}

/* One head large: the single-map view (tokens on the axes, values on hover). */
function openHead(p) {
  const ctx = mv.ctx;
  if (!ctx) return;
  const m = ctx.m, li = Math.floor(p / ctx.H), hi = p % ctx.H;
  const title = "layer " + ctx.layers[li] + ", head " + ctx.heads[hi] + (ctx.filter && ctx.filter !== "all" ? ", " + PAIR_FILTERS[ctx.filter] : "");
  const rowLabels = Array.from({length: m.R}, (_, i) => ctx.labels[ctx.r0 + i] ?? String(ctx.r0 + i));
  const colLabels = Array.from({length: m.C}, (_, j) => ctx.labels[ctx.c0 + j] ?? String(ctx.c0 + j));
  const box = $("m_detail");
  const width = Math.max(300, Math.min(520, box.parentElement.clientWidth - $("m_grid").offsetWidth - 30));
  const cv = drawHeat(m, p, {kind: "attn_weights", size: width - 60, display: width, title, rowLabels, colLabels,
                             scale: ctx.scale, numbers: $("m_numbers").checked});
  box.innerHTML = "";
  const note = Object.assign(document.createElement("div"), {className: "note"});
  note.textContent = "rows: queries" + (ctx.r0 || m.R < ctx.T ? " " + ctx.r0 + " to " + (ctx.r0 + m.R - 1) : "") +
    ", columns: keys" + (ctx.c0 || m.C < ctx.T ? " " + ctx.c0 + " to " + (ctx.c0 + m.C - 1) : "") + "; hover a cell for its weight" + (m.topk ? "; grey: not among the top " + m.topk : "");
  box.append(panelBox(title, cv), note);
  for (const b of $("m_grid").querySelectorAll("button.thumb")) b.classList.toggle("on", +b.dataset.p === p);
  mv.open = {layer: ctx.layers[li], head: ctx.heads[hi], p};
}

/* GET /models: the models the server loaded, as choices, and its tokenizers. */
async function loadModels() {
  try {
    const r = await fetch("/models");
    if (!r.ok) return;
    const j = await r.json();
    mv.models = j.models || [];
    mv.tokenizers = j.tokenizers || null;
  } catch (_) { return; }
  for (const md of mv.models) $("m_model").appendChild(modelOption(md));
  /* the view opens on a model the server loaded, as the other views do (the
   * trained demo model out of the box), else on one built from a seed */
  $("m_model").value = firstModel(mv.models);
  if (mv.tokenizers && mv.tokenizers.length)
    $("m_tokenizer").placeholder = mv.tokenizers.length === 1 ? mv.tokenizers[0].name : "the model's";
}

/* Who reads the text: the chosen model's own tokenizer, else the server's. */
function textNote() {
  const md = mv.models.find((x) => x.name === $("m_model").value);
  if (md && md.tokenizer)
    return "The model's own tokenizer reads the text (" + md.tokenizer.tokens + " tokens" +
      (md.tokenizer.tokens === 256 ? ": a token a byte" : "") + ").";
  return "The server's tokenizer splits the text into tokens (its --tokenizer, or the one named above).";
}

function modelChanged() {
  const md = mv.models.find((x) => x.name === $("m_model").value);
  /* the tab names the family of the model it shows (GPT2, LlamaForCausalLM, ...) */
  $("model_tab").textContent = "Model view: " + chosenFamily();
  encoderChanged();
  if ($("m_input_text").checked && !mv.noTokenizer) $("m_input_note").textContent = textNote();
  $("m_config").hidden = !!md;
  $("m_model_info").hidden = !md;
  if (md) {
    const c = md.config;
    const from = md.builtin ? "built into this server (made from " + (md.folder ? md.folder + "/" : md.file) + " when it was built)"
                            : "loaded from " + (md.folder ? md.folder + "/" : "") + md.file;
    $("m_model_info").textContent = from + ": " + md.module +
      ", " + Object.entries(c).map(([k, v]) => k + " " + v).join(", ") + ", " +
      (md.parameters || 0).toLocaleString() + " parameters" + (md.tokenizer ? "; its tokenizer reads the text" : "");
    return;
  }
  const family = chosenFamily(), names = familyNames(family);
  COL_IDS.forEach((id, c) => { $(id + "_name").textContent = names[c]; });
  $("m_qkv_row").hidden = !names.includes("qkv_bias");
  $("m_config_note").innerHTML = FAMILY_NOTES[family] || "";
}

/* A server without any tokenizer: the model reads token ids from the start
 * (the seed sentence's GPT-2 ids), and the note says how to type text. */
function defaultInput() {
  if (!mv.tokenizers || mv.tokenizers.length) return;
  mv.noTokenizer = true;
  $("m_input_idx").checked = true;
  mv.inputs = {text: $("m_text").value, idx: SEED_IDS};
  $("m_text").value = SEED_IDS;
  $("m_input_note").textContent = "This server has no tokenizer: these are GPT-2's ids of \u201cYour journey starts " +
    "with one step\u201d. Start it with --tokenizer NAME=DIR, or --model NAME=DIR of a folder with vocab.json and " +
    "merges.txt, to type text.";
}

/* The request as the curl command that sends it with a JSON reply. */
function copyModelCurl() {
  let req;
  try { req = modelRequest(); } catch (e) { return modelError(e.message, e.field); }
  req.output_format = "nested";
  delete req.dtype;
  return shareCurl($("m_curl"), "/model/gpt2", req, mstatus);
}

function inputChanged() {
  const text = $("m_input_text").checked;
  const other = mv.inputs || {text: "Your journey starts with one step", idx: ""};
  const from = text ? "idx" : "text";
  other[from] = $("m_text").value;
  /* switching to ids after a run shows the ids of the text */
  if (!text && mv.ctx && mv.ctx.idx.length && mv.last && mv.last.text === other.text) other.idx = mv.ctx.idx.join(" ");
  $("m_text").value = other[text ? "text" : "idx"];
  mv.inputs = other;
  $("m_input_note").textContent = text && mv.noTokenizer ? "This server has no tokenizer: start it with --tokenizer NAME=DIR, or --model NAME=DIR of a folder with vocab.json and merges.txt, to type text."
    : text ? textNote()
    : "Token ids separated by spaces, each below vocab_size.";
}

let modelStarted = false;
function showMode(name) {
  for (const b of $("modes").querySelectorAll("button")) b.classList.toggle("on", b.dataset.mode === name);
  $("main_modules").hidden = name !== "modules";
  $("main_model").hidden = name !== "model";
  showGenerate(name === "generate");
  $("main_inside").hidden = name !== "inside";
  if (name === "inside") viewer.showInside();
  showApi(name === "api");
  /* the first visit asks for the loaded models and tokenizers, then runs the form */
  if (name === "model" && !modelStarted) {
    modelStarted = true;
    Promise.resolve(viewer.docReady).catch(() => {}).then(loadModels).then(modelChanged).then(defaultInput).then(runModel);
  }
}
viewer.showMode = showMode;

function startModel() {
  drawLegend($("m_legend"));
  $("m_run").onclick = runModel;
  $("m_copy_curl").onclick = copyModelCurl;
  $("m_grid").onclick = (e) => {
    const b = e.target.closest("button.thumb");
    if (!b) return;
    openHead(+b.dataset.p);
    /* the neuron view follows the head opened */
    $("nv_layer").value = b.dataset.layer;
    $("nv_head").value = b.dataset.head;
    runNeuron();
  };
  $("m_detail").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  $("m_detail").addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
  $("m_model").onchange = modelChanged;
  $("m_input_text").onchange = $("m_input_idx").onchange = inputChanged;
  $("m_text").onkeydown = (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runModel(); };
  const redraw = () => { if (mv.ctx) { mv.ctx.scale = $("m_color_scale").value; drawGrid(mv.ctx, performance.now()).then(() => openHead(mv.open ? mv.open.p : 0)); } };
  $("m_color_scale").onchange = () => { setLegend("m_legend_max", $("m_color_scale").value); redraw(); };
  $("m_numbers").onchange = () => { if (mv.open) openHead(mv.open.p); };
  startEncoder();
}

