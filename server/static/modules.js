/* modules.js - the modules view: a request to an attention endpoint, its maps, head view and stages (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Request JSON ========================================================== */

/* JSON with one line per object key and arrays of numbers on one line. */
function pretty(v, indent = "") {
  if (Array.isArray(v)) {
    if (v.every((x) => !Array.isArray(x) && (x === null || typeof x !== "object"))) return JSON.stringify(v).replace(/,/g, ", ");
    const inner = indent + " ";
    return "[" + v.map((x) => pretty(x, inner)).join(",\n" + inner) + "]";
  }
  if (v && typeof v === "object") {
    const inner = indent + " ";
    const keys = Object.keys(v);
    if (!keys.length) return "{}";
    return "{" + keys.map((k) => JSON.stringify(k) + ": " + pretty(v[k], inner)).join(",\n" + inner) + "}";
  }
  return JSON.stringify(v);
}

function tokenList() { return $("tokens").value.trim().split(/\s+/).filter(Boolean); }

function headsField(module) { return module === "GPT2CausalSelfAttention" ? "n_head" : "num_heads"; }

function numberOr(id) { const v = $(id).value.trim(); return v === "" ? null : Number(v); }

/* The request as sent: the JSON text (a request by itself) plus the form's fields. */
function buildRequest(format) {
  let req;
  try { req = JSON.parse($("request").value); } catch (e) { throw new Error("the request is not JSON: " + e.message); }
  const tokens = tokenList();
  if (tokens.length) req.tokens = tokens;
  if (viewer.pad.size && tokens.length) req.key_padding_mask = tokens.map((_, i) => viewer.pad.has(i) ? 1 : 0);
  if ($("causal").value) req.causal = $("causal").value === "true";
  const module = req.module || (viewer.endpoints[viewer.endpoint] || {modules: [""]}).modules[0];
  if (numberOr("num_heads") !== null) req[headsField(module)] = numberOr("num_heads");
  if (numberOr("dropout") !== null) req.dropout = numberOr("dropout");
  if ($("training").checked) req.training = true;
  if (numberOr("dropout_seed") !== null) req.dropout_seed = numberOr("dropout_seed");
  if ($("mask_method").value) req.mask_method = $("mask_method").value;
  if ($("average").checked) req.average_attn_weights = true;
  const heads = $("heads").value.trim();
  if (heads && heads !== "all") req.heads = heads.split(/[\s,]+/).filter(Boolean).map(Number);
  const r0 = numberOr("row_start"), r1 = numberOr("row_stop");
  if (r0 !== null || r1 !== null) req.query_rows = [r0 === null ? 0 : r0, r1 === null ? tokenCount(req) : r1];
  const image = format === "png" || format === "svg";
  if (numberOr("top_k") !== null && !image) req.top_k = numberOr("top_k");
  if (image && $("color_scale").value !== "unit") req.color_scale = $("color_scale").value;
  req.output_format = format;
  return req;
}

/* T of a request: its tokens, or the rows of its inputs (query for sdpa). */
function tokenCount(req) {
  if (Array.isArray(req.tokens)) return req.tokens.length;
  const x = req.inputs || req.query;
  if (!x) return 0;
  const shape = Array.isArray(x) ? arrayShape(x) : x.shape || [];
  return shape.length >= 2 ? shape[shape.length - 2] : 0;
}

function arrayShape(x) {
  const s = [];
  while (Array.isArray(x)) { s.push(x.length); x = x[0]; }
  return s;
}

/* ==== Examples and modules from /openapi.json ================================ */

async function loadDocument() {
  const doc = viewer.doc = await (await fetch("/openapi.json")).json();
  const resolve = (ref) => ref.split("/").slice(1).reduce((o, k) => o[k], doc);
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith("/attention/") || !item.post) continue;
    const rb = item.post.requestBody.$ref ? resolve(item.post.requestBody.$ref) : item.post.requestBody;
    const body = rb.content["application/json"];
    const schema = body.schema.$ref ? resolve(body.schema.$ref) : body.schema;
    const modules = ((schema.properties || {}).module || {}).enum || [];
    viewer.endpoints[path] = {modules};
    for (const [name, ex] of Object.entries(body.examples || {}))
      viewer.examples.push({name, path, value: ex.value});
  }
  /* the chapters' seed sentence first, its MultiHeadAttention before the others */
  const rank = (e) => {
    const seed = Array.isArray(e.value.tokens) && e.value.tokens[0] === "Your";
    return seed ? (e.value.module === "MultiHeadAttention" ? 0 : 1) : 2;
  };
  viewer.examples.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
  $("example").innerHTML = "";
  viewer.examples.forEach((e, i) => {
    const o = document.createElement("option");
    o.value = i;
    o.textContent = e.name + "  (" + (e.value.module || viewer.endpoints[e.path].modules[0]) + ")";
    $("example").appendChild(o);
  });
  $("endpoint").innerHTML = "";
  for (const path of Object.keys(viewer.endpoints)) {
    const o = document.createElement("option");
    o.value = o.textContent = path;
    $("endpoint").appendChild(o);
  }
}

function setModules(path, module) {
  viewer.endpoint = path;
  $("endpoint").value = path;
  $("module").innerHTML = "";
  for (const m of viewer.endpoints[path].modules) {
    const o = document.createElement("option");
    o.value = o.textContent = m;
    $("module").appendChild(o);
  }
  $("module").value = module || viewer.endpoints[path].modules[0];
}

function setField(id, v) {
  const el = $(id);
  if (el.type === "checkbox") el.checked = !!v;
  else el.value = v === undefined || v === null ? "" : String(v);
}

/* Puts a request into the form and the JSON box. */
function loadRequest(path, value) {
  const req = JSON.parse(JSON.stringify(value));
  $("curl").hidden = true; /* a command shown is for the request before */
  setModules(path, req.module);
  setField("tokens", Array.isArray(req.tokens) ? req.tokens.join(" ") : "");
  viewer.pad = new Set();
  const kpm = req.key_padding_mask;
  const flatKpm = Array.isArray(kpm) && (kpm.length === 1 && Array.isArray(kpm[0]) ? kpm[0] : kpm);
  if (flatKpm && flatKpm.every((x) => !Array.isArray(x)) && Array.isArray(req.tokens) && flatKpm.length === req.tokens.length) {
    flatKpm.forEach((x, i) => { if (x) viewer.pad.add(i); });
    delete req.key_padding_mask;
  }
  setField("causal", req.causal === undefined ? "" : String(req.causal));
  setField("num_heads", req.num_heads ?? req.n_head);
  setField("dropout", req.dropout);
  setField("training", req.training);
  setField("dropout_seed", req.dropout_seed);
  setField("mask_method", req.mask_method === "renorm" ? "renorm" : "");
  setField("average", req.average_attn_weights);
  setField("heads", Array.isArray(req.heads) ? req.heads.join(" ") : "");
  setField("row_start", Array.isArray(req.query_rows) ? req.query_rows[0] : "");
  setField("row_stop", Array.isArray(req.query_rows) ? req.query_rows[1] : "");
  setField("top_k", req.top_k);
  const x = req.inputs;
  if (x) { const s = Array.isArray(x) ? arrayShape(x) : x.shape || []; if (s.length) setField("d_in", s[s.length - 1]); }
  for (const k of FORM_KEYS) delete req[k];
  $("request").value = pretty(req);
  drawChips();
}

/* ==== Tokens, embeddings and context in step ================================= */

/* x (inputs: [T][D] or [B][T][D] nested, {shape, data} or a float32 binary
 * tensor) with T rows: its first rows kept, new ones drawn from seed
 * (nested: two decimals in [0, 1), as "Random embeddings" writes them;
 * binary: uniform in [-1, 1)). null when x has T rows already or is of
 * another form. */
function resizeRows(x, T, seed) {
  const next = mulberry32(seed);
  if (Array.isArray(x)) {
    const batched = Array.isArray(x[0]) && Array.isArray(x[0][0]), batches = batched ? x : [x];
    const D = Array.isArray(batches[0][0]) ? batches[0][0].length : 0;
    if (!D || batches.every((b) => b.length === T)) return null;
    const out = batches.map((b) => Array.from({length: T}, (_, i) =>
      b[i] || Array.from({length: D}, () => Math.round(next() * 100) / 100)));
    return batched ? out : out[0];
  }
  const shape = x && Array.isArray(x.shape) ? x.shape : [];
  const binary = typeof x?.base64 === "string" && (x.dtype || "float32") === "float32";
  if ((shape.length !== 2 && shape.length !== 3) || !(binary || Array.isArray(x.data))) return null;
  const r = shape.length, Told = shape[r - 2], D = shape[r - 1], B = r === 3 ? shape[0] : 1;
  if (Told === T) return null;
  const old = binary ? binaryF32(x) : Float32Array.from(x.data), data = new Float32Array(B * T * D);
  for (let b = 0; b < B; b++)
    for (let i = 0; i < T; i++)
      for (let d = 0; d < D; d++)
        data[(b * T + i) * D + d] = i < Told ? old[(b * Told + i) * D + d] : next() * 2 - 1;
  const newShape = r === 3 ? [B, T, D] : [T, D];
  return binary ? f32Binary(data, newShape) : {shape: newShape, data: Array.from(data)};
}

/* After the tokens changed: the request's inputs get one row per token (the
 * rows there kept, new ones drawn from the seed field) and context_length
 * (block_size) grows to the token count, so that a request for 7 tokens is
 * not a 400 about 6 embeddings or a context of 6. */
function syncTokens() {
  const T = tokenList().length;
  let req;
  try { req = JSON.parse($("request").value); } catch (_) { return; }
  if (!T || !("inputs" in req)) return;
  const notes = [];
  const x = resizeRows(req.inputs, T, (numberOr("seed") || 0) + T);
  if (x) { req.inputs = x; notes.push("inputs: " + T + " rows"); }
  for (const k of ["context_length", "block_size"])
    if (typeof req[k] === "number" && req[k] < T) { req[k] = T; notes.push(k + " " + T); }
  if (!notes.length) return;
  $("request").value = pretty(req);
  $("curl").hidden = true;
  status(notes.join(", ") + " for " + T + " tokens (new rows drawn from the seed)");
}

/* The example menu names what the request is: an example, or (text) a
 * request that is none of them any more (null: no such entry). */
function markCustom(text) {
  let o = $("example").querySelector("option[value=custom]");
  if (text === null) { if (o) o.remove(); return; }
  if (!o) { o = document.createElement("option"); o.value = "custom"; $("example").appendChild(o); }
  o.textContent = text;
  $("example").value = "custom";
}

function drawChips() {
  const box = $("chips");
  box.innerHTML = "";
  const tokens = tokenList();
  if (tokens.length > 64) { box.textContent = tokens.length + " tokens"; return; }
  tokens.forEach((t, i) => {
    const c = document.createElement("span");
    c.className = "chip" + (viewer.pad.has(i) ? " pad" : "");
    c.textContent = t;
    c.title = "position " + i + ": click to mark as padding";
    c.onclick = () => { viewer.pad.has(i) ? viewer.pad.delete(i) : viewer.pad.add(i); drawChips(); };
    box.appendChild(c);
  });
}

/* Random embeddings for the tokens: written out when small, else a "random:" spec. */
function randomInputs() {
  let req;
  try { req = JSON.parse($("request").value); } catch (e) { return status(e.message, true); }
  if (!("inputs" in req)) return status("this module takes query, key and value: edit them in the JSON", true);
  const T = tokenList().length || tokenCount(req) || 6, D = Math.max(1, numberOr("d_in") || 3);
  const seed = numberOr("seed") || 0;
  if (T * D <= 4096) {
    const next = mulberry32(seed);
    req.inputs = Array.from({length: T}, () => Array.from({length: D}, () => Math.round(next() * 100) / 100));
  } else {
    req.inputs = randomBinary(T, D, seed); /* a float32 binary tensor: a request as it is */
  }
  for (const k of ["d_in", "n_embd", "embed_dim"]) if (k in req) req[k] = D;
  for (const k of ["context_length", "block_size"]) if (typeof req[k] === "number" && req[k] < T) req[k] = T;
  $("request").value = pretty(req);
  status("inputs: " + T + " x " + D + " from seed " + seed);
}

function bigPreset() {
  const T = 1024;
  loadRequest("/attention/multihead", {module: "GPT2CausalSelfAttention", n_embd: 768, n_head: 12,
                                       init: {seed: 1}, inputs: randomBinary(T, 768, 1)});
  setField("d_in", 768);
  setField("seed", 1);
  /* weights over 1,024 keys are small: each row to its largest, and the legend says so */
  setField("color_scale", "row");
  setLegend("legend_max", "row");
  markCustom("GPT-2 layer: T = 1,024, 12 heads, random embeddings  (GPT2CausalSelfAttention)");
}

/* ==== Requests ================================================================ */

/* The status line; an error dims the results, which are now those of
 * another request (a drawing undims them). */
function status(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
  if (error) { $("results").classList.add("stale"); viewer.errors++; }
}

async function post(req) {
  return fetch(viewer.endpoint, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(req)});
}

async function errorText(r) {
  try {
    const e = (await r.json()).error;
    return r.status + " " + e.code + (e.field ? " (" + e.field + ")" : "") + ": " + e.message;
  } catch (_) { return "HTTP " + r.status; }
}

async function compute() {
  let req;
  try { req = buildRequest("safetensors"); } catch (e) { return status(e.message, true); }
  const T = tokenCount(req), heads = Array.isArray(req.heads) ? req.heads.length : req.num_heads || req.n_head || 1;
  const rows = req.query_rows ? req.query_rows[1] - req.query_rows[0] : T;
  const stages = heads * rows * T <= STAGES_LIMIT;
  req.return = stages ? ["attn_weights", "attn_scores", "masked_scores", "mask", "dropout_mask"] : ["attn_weights"];
  $("run").disabled = true;
  status("computing\u2026");
  const t0 = performance.now();
  try {
    const r = await post(req);
    if (!r.ok) { status(await errorText(r), true); return; }
    const buf = await r.arrayBuffer();
    const tReply = performance.now();
    const st = readSafetensors(buf);
    const ctx = {tokens: req.tokens || null, S: st.meta.shape.kv_tokens, r0: req.query_rows ? req.query_rows[0] : 0,
                 heads: req.heads || null, averaged: !!req.average_attn_weights,
                 batched: ((req.inputs || req.query || {}).shape || arrayShape(req.inputs || req.query)).length === (req.query ? 4 : 3)};
    viewer.reply = st;
    viewer.timings = {request_ms: tReply - t0, reply_bytes: buf.byteLength};
    await drawMaps(st, ctx, tReply);
    drawHeadView(ctx);
    drawStages(st, ctx);
    $("results").classList.remove("stale");
    const s = st.meta.shape;
    $("shape").textContent = st.meta.module + ": B " + s.batch + ", T " + s.tokens + ", S " + s.kv_tokens + ", " + s.num_heads + " head" + (s.num_heads > 1 ? "s" : "");
    status("reply " + fmtBytes(buf.byteLength) + " in " + viewer.timings.request_ms.toFixed(0) +
           " ms; first map " + viewer.timings.first_map_ms.toFixed(0) + " ms after it, all " + viewer.timings.all_maps_ms.toFixed(0) + " ms");
    viewer.renders++;
  } catch (e) {
    status(String(e), true);
  } finally {
    $("run").disabled = false;
  }
}

/* The request as the curl command that sends it with a JSON reply. */
function copyCurl() {
  let req;
  try { req = buildRequest("nested"); } catch (e) { return status(e.message, true); }
  req.return = ["attn_weights"];
  return shareCurl($("curl"), viewer.endpoint, req, status);
}

async function download(format) {
  let req;
  try { req = buildRequest(format === "json" ? "nested" : format); } catch (e) { return status(e.message, true); }
  req.return = format === "json" ? ["context", "attn_weights", "tokens"] : ["attn_weights"];
  if (format === "json" && !req.tokens) req.return.pop();
  const r = await post(req);
  if (!r.ok) return status(await errorText(r), true);
  const blob = await r.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = "attention." + format;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  status("downloaded attention." + format + " (" + blob.size + " bytes)");
}

