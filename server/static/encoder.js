/* encoder.js - what the model view adds for encoders and long inputs: the sentence pair and its filter, the fill-mask box, the neuron view, one head at a time (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Encoders, the neuron view, long inputs ================================= */

/* An encoder (BERT, RoBERTa, DistilBERT, ...) sees every token both ways: its
 * maps have no causal triangle, it takes a sentence pair ([CLS] A [SEP] B
 * [SEP]) and fills masks. The neuron view (any model) shows how one query
 * and each key multiply into the scores and weights of one head, as
 * BertViz's does. A long input (12 x 12 heads at T = 512 is 150 MB of maps)
 * asks for the head picked, not every head at once. */
const ENCODER_RE = /^(Bert|Roberta|DistilBert|Electra|XLMRoberta)/;
const ONE_HEAD_LIMIT = 1 << 22;   /* most map entries (16 MB of float32) asked for at once */
const PAIR_FILTERS = {all: "all", AA: "A\u2192A", AB: "A\u2192B", BA: "B\u2192A", BB: "B\u2192B"};

/* The loaded model chosen in the model view (null for one built from a seed). */
function chosenModel() {
  return mv.models.find((x) => x.name === $("m_model").value) || null;
}

function isEncoder(md) { return !!md && ENCODER_RE.test(md.module); }

/* The token that marks a blank for the model's tokenizer. */
function maskToken(md) { return md && /Roberta/.test(md.module) ? "<mask>" : "[MASK]"; }

/* Layers and heads of the chosen model (the config's columns 2 and 3). */
function modelShape(md) {
  if (md) { const c = Object.values(md.config || {}); return {L: +c[2] || 1, H: +c[3] || 1}; }
  return {L: numberOr("m_n_layer") ?? 12, H: numberOr("m_n_head") ?? 12};
}

/* How many tokens the request will have: known after a run of the same
 * input, else estimated (a token a byte for a byte tokenizer, else about
 * 1.3 per word or mark, and the special tokens). */
function tokensOf(req, md) {
  if (req.idx) return req.idx.length;
  const key = JSON.stringify(req.text);
  if (mv.last && mv.last.key === key && mv.last.model === (req.model || "")) return mv.last.T;
  const texts = Array.isArray(req.text) ? req.text.flat() : [req.text];
  let n = 0;
  for (const t of texts) {
    if (md && md.tokenizer && md.tokenizer.tokens === 256) n += new TextEncoder().encode(t).length;
    else n += Math.ceil(1.3 * (t.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu) || []).length);
  }
  return n + 3;
}

/* The encoder's part of the request: text B makes a pair; a long input asks
 * for one layer and one head (the neuron view's), unless layers or heads
 * were chosen. Sets mv.oneHead. */
function encoderRequest(req) {
  const md = chosenModel(), b = $("m_text_b").value;
  if (isEncoder(md) && req.text !== undefined && b.trim() !== "") req.text = [[req.text, b]];
  mv.oneHead = false;
  if (req.layers || req.heads) return;
  const {L, H} = modelShape(md), T = tokensOf(req, md);
  if (L * H * T * T <= ONE_HEAD_LIMIT) return;
  mv.oneHead = true;
  req.layers = [Math.min(L - 1, +$("nv_layer").value || 0)];
  req.heads = [Math.min(H - 1, +$("nv_head").value || 0)];
  /* the input ran before (its length is known): the same forward pass gives
   * the neuron view of the head picked too */
  const q = +$("nv_query").value;
  const known = req.idx || (mv.last && mv.last.key === JSON.stringify(req.text) && mv.last.model === (req.model || ""));
  if (known && q < T)
    req.neuron_view = {layer: req.layers[0], head: req.heads[0], query: q};
}

/* The neuron view a reply carries (asked for with the map): JSON's object, or
 * safetensors' neuron_view.* tensors and metadata, as JSON gives it. */
function neuronOf(st) {
  if (st.meta.neuron_view && typeof st.meta.neuron_view === "object") return st.meta.neuron_view;
  const t = (k) => st.t["neuron_view." + k];
  if (!t("q")) return null;
  const v = {}, num = (x) => (Number.isFinite(x) ? x : null);
  for (const k of ["layer", "head", "kv_head", "batch", "query", "scale", "q_hook", "k_hook"]) v[k] = st.meta["neuron_view." + k];
  const D = t("q").data.length, T = t("dot").data.length;
  v.q = Array.from(t("q").data, num);
  for (const k of ["k", "q_times_k"]) v[k] = Array.from({length: T}, (_, j) => Array.from(t(k).data.subarray(j * D, (j + 1) * D), num));
  for (const k of ["dot", "scores", "weights"]) v[k] = Array.from(t(k).data, num);
  return v;
}

/* The block of map m (panels x R x C, rows from r0) that the pair filter
 * keeps: A is [0, bStart), B is [bStart, T). Returns {m, r0, c0}. */
function pairBlock(m, filter, bStart, T, r0) {
  if (!bStart || filter === "all" || m.C !== T) return {m, r0, c0: 0};
  const span = (s) => (s === "A" ? [0, bStart] : [bStart, T]);
  const [q0, q1] = span(filter[0]), [k0, k1] = span(filter[1]);
  const a = Math.max(q0, r0), z = Math.min(q1, r0 + m.R);
  const R = Math.max(0, z - a), C = k1 - k0, data = new Float32Array(m.P * R * C);
  for (let p = 0; p < m.P; p++)
    for (let i = 0; i < R; i++) {
      const from = (p * m.R + (a - r0 + i)) * m.C + k0;
      data.set(m.data.subarray(from, from + C), (p * R + i) * C);
    }
  return {m: {...m, R, C, data}, r0: a, c0: k0};
}

/* The reply's tokens of row 0 (a pair's reply is a batch of one). */
function firstRow(x) { return Array.isArray(x) && Array.isArray(x[0]) ? x[0] : x; }

/* The pair's filter applied to the run's maps (ctx.full): ctx.m, r0, c0. */
function applyPair(ctx) {
  const f = ctx.bStart ? $("m_filter").value : "all";
  const b = pairBlock(ctx.full, f, ctx.bStart, ctx.T, ctx.q0);
  ctx.m = b.m;
  ctx.r0 = b.r0;
  ctx.c0 = b.c0;
  ctx.filter = f;
}

/* Shows or hides the encoder's inputs for the model chosen. */
function encoderChanged() {
  const md = chosenModel(), enc = isEncoder(md);
  $("m_pair").hidden = !enc;
  $("m_fill").hidden = !enc;
  if (enc && !$("fm_text").dataset.typed) $("fm_text").value = "the cat " + maskToken(md) + " .";
}

/* ==== The pair filter ======================================================== */

function drawPairBar(ctx) {
  $("m_pairbar").hidden = !ctx.bStart;
  if (!ctx.bStart) return;
  const T = ctx.T, s = ctx.bStart;
  $("m_pair_note").textContent = "A: tokens 0 to " + (s - 1) + ", B: " + s + " to " + (T - 1) +
    (ctx.filter === "all" ? "" : "; showing " + PAIR_FILTERS[ctx.filter] + ": queries in " + ctx.filter[0] +
     ", keys in " + ctx.filter[1]);
}

/* A new filter redraws the grid and the open head from the same reply. */
function pairFilterChanged() {
  const ctx = mv.ctx;
  if (!ctx || !ctx.bStart) return;
  applyPair(ctx);
  drawPairBar(ctx);
  drawGrid(ctx, performance.now()).then(() => openHead(mv.open ? mv.open.p : 0));
}

/* ==== Fill-mask ============================================================== */

async function runFill() {
  const md = chosenModel(), out = $("fm_out");
  if (!md) return;
  const req = {model: md.name, text: $("fm_text").value, fill_mask: {top_k: numberOr("fm_k") ?? 5}, return: ["tokens"]};
  mv.fill = {req, runs: (mv.fill ? mv.fill.runs : 0), shown: null, error: null};
  out.textContent = "filling\u2026";
  try {
    const r = await fetch("/model", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(req)});
    if (!r.ok) {
      const e = await errorOf(r);
      out.textContent = errorLine(r.status, e);
      out.className = "error";
      mv.fill.error = e ? e.code : String(r.status);
      return;
    }
    const j = await r.json();
    out.className = "";
    out.innerHTML = "";
    const tokens = firstRow(j.tokens) || [];
    mv.fill.shown = (j.fill_mask || []).map((f) => ({position: f.position, ids: f.ids, probs: f.probs, tokens: f.tokens}));
    if (!mv.fill.shown.length) out.textContent = "no " + maskToken(md) + " in the text";
    for (const f of mv.fill.shown) {
      const t = Object.assign(document.createElement("table"), {className: "itable fill"});
      t.dataset.position = f.position;
      t.insertRow().insertCell().textContent = "position " + f.position + " (" + showToken(tokens[f.position] ?? "") + ")";
      t.rows[0].cells[0].colSpan = 2;
      f.ids.forEach((id, i) => {
        const row = t.insertRow();
        Object.assign(row.dataset, {id, prob: f.probs[i]});
        row.insertCell().textContent = showToken(f.tokens[i].trim() || f.tokens[i]);
        row.cells[0].title = "token id " + id;
        const bar = Object.assign(document.createElement("span"), {className: "pbar"});
        const w = Object.assign(document.createElement("i"), {});
        w.style.width = Math.round(80 * f.probs[i]) + "px";
        w.style.background = "var(--accent)";
        bar.append(w, (100 * f.probs[i]).toFixed(1) + "%");
        row.insertCell().appendChild(bar);
      });
      out.appendChild(t);
    }
  } catch (e) {
    out.textContent = String(e);
    mv.fill.error = String(e);
  } finally {
    mv.fill.runs++;
  }
}

/* ==== The neuron view ========================================================= */

/* The colour of v on a scale of -max..max: white at 0, red above, blue below. */
function neuronColour(v, max) {
  if (v === null || !Number.isFinite(v)) return [200, 200, 200];
  const t = max > 0 ? Math.max(-1, Math.min(1, v / max)) : 0;
  if (t >= 0) { const g = Math.round(255 * (1 - t)); return [255, g, g]; }
  const g = Math.round(255 * (1 + t));
  return [g, g, 255];
}
viewer.neuronColour = neuronColour;

const maxAbs = (rows) => rows.flat().reduce((a, v) => (v === null ? a : Math.max(a, Math.abs(v))), 0);

/* Fills the layer, head and query menus for the run's model and tokens,
 * keeping the choices that still exist. */
function neuronMenus(ctx) {
  const {L, H} = ctx.shape, T = ctx.T;
  const fill = (id, n, label, def, key) => {
    const s = $(id), keep = s.value !== "" && +s.value < n && s.dataset.key === key ? +s.value : def;
    if (s.options.length !== n || s.dataset.key !== key) {
      s.innerHTML = "";
      for (let i = 0; i < n; i++) s.appendChild(new Option(label(i), i));
      s.dataset.key = key;
    }
    s.value = keep;
  };
  fill("nv_layer", L, String, 0, "");
  fill("nv_head", H, String, 0, "");
  /* a new input starts on its last position (a decoder's query that sees every key) or, for an encoder, its first word */
  fill("nv_query", T, (i) => i + ": " + (ctx.labels[i] ?? i), ctx.encoder ? Math.min(1, T - 1) : T - 1, ctx.labels.join("\u0001"));
}

/* The request of the run, asking for the neuron view of the menus' head and query. */
function neuronRequest(ctx) {
  const req = {...ctx.req};
  for (const k of ["return", "layers", "heads", "query_rows", "top_k", "output_format", "dtype"]) delete req[k];
  req.neuron_view = {layer: +$("nv_layer").value, head: +$("nv_head").value, query: +$("nv_query").value};
  req.return = ["idx"];
  return req;
}

async function runNeuron() {
  const ctx = mv.ctx;
  if (!ctx) return;
  const req = neuronRequest(ctx), t0 = performance.now();
  const n = mv.neuron = {req, runs: mv.neuron ? mv.neuron.runs : 0, view: null, error: null, layout: null};
  $("nv_note").textContent = "asking for the neuron view\u2026";
  $("nv_note").className = "note";
  try {
    const r = await post2(req);
    if (!r.ok) {
      const e = await errorOf(r);
      n.error = e ? e.code : String(r.status);
      $("nv_note").textContent = errorLine(r.status, e);
      $("nv_note").className = "error";
      return;
    }
    n.view = (await r.json()).neuron_view;
    drawNeuron(ctx, n);
    n.ms = performance.now() - t0;
  } catch (e) {
    n.error = String(e);
    $("nv_note").textContent = String(e);
  } finally {
    n.runs++;
  }
}

/* BertViz's neuron view on a canvas: for each key (a row) its vector k, the
 * product q x k with the query's vector, their sum q.k, the score (times the
 * scale) and the weight; q itself above the k column. */
function drawNeuron(ctx, n) {
  const v = n.view, T = v.k.length, D = v.q.length;
  const cw = Math.max(2, Math.min(14, Math.floor(224 / D))), rh = T <= 48 ? 16 : Math.max(2, Math.min(16, Math.floor(1536 / T)));
  const lw = rh >= 9 ? 90 : 8, gap = 16, bw = 90, top = 2 * 16 + 16;
  const xk = lw, xp = xk + D * cw + gap, xd = xp + D * cw + gap, xw = xd + bw + gap;
  const cv = document.createElement("canvas");
  cv.width = xw + bw + 70;
  cv.height = top + T * rh + 4;
  const c = cv.getContext("2d");
  const sk = maxAbs([v.q, ...v.k]), sp = maxAbs(v.q_times_k), sd = maxAbs([v.dot]);
  const cell = (x, y, w, h, rgb) => { c.fillStyle = "rgb(" + rgb.join(",") + ")"; c.fillRect(x, y, w, h); };
  c.font = "11px sans-serif";
  c.fillStyle = "#1d2330";
  c.textBaseline = "middle";
  c.fillText("q (query " + v.query + ")", xk, 8);
  for (let d = 0; d < D; d++) cell(xk + d * cw, 16, cw, 14, neuronColour(v.q[d], sk));
  c.fillStyle = "#1d2330";
  c.fillText("q \u00d7 k", xp, 8);
  c.fillText("q\u00b7k", xd, 8);
  c.fillText("weight", xw, 8);
  c.fillText("k (each key, a row)", xk, top - 8);
  /* the query's own row marked behind its label */
  if (lw > 8) cell(0, top + v.query * rh, lw - 2, rh, [255, 236, 179]);
  for (let j = 0; j < T; j++) {
    const y = top + j * rh;
    for (let d = 0; d < D; d++) {
      cell(xk + d * cw, y, cw, rh, neuronColour(v.k[j] ? v.k[j][d] : null, sk));
      cell(xp + d * cw, y, cw, rh, neuronColour(v.q_times_k[j] ? v.q_times_k[j][d] : null, sp));
    }
    const dot = v.dot[j], wgt = v.weights[j] ?? 0;
    if (dot !== null) {
      const len = Math.round((bw / 2) * Math.min(1, Math.abs(dot) / (sd || 1)));
      cell(dot >= 0 ? xd + bw / 2 : xd + bw / 2 - len, y, len, Math.max(1, rh - 1), dot >= 0 ? [214, 39, 40] : [31, 119, 180]);
    }
    cell(xw, y, Math.round(bw * wgt), Math.max(1, rh - 1), [58, 91, 217]);
    c.fillStyle = "#1d2330";
    if (lw > 8) {
      c.textAlign = "right";
      c.font = (j === v.query ? "bold " : "") + Math.min(12, rh - 3) + "px sans-serif";
      c.fillText(ctx.labels[j] ?? String(j), lw - 6, y + rh / 2, lw - 10);
      c.textAlign = "left";
      if (rh >= 12) c.fillText(v.scores[j] === null ? "masked" : fmt(Math.fround(Number(wgt.toPrecision(3)))), xw + bw + 4, y + rh / 2);
    }
  }
  n.layout = {xk, xp, xd, xw, top, cw, rh, bw, qy: 16, scale_k: sk, scale_qk: sp, T, D};
  cv.className = "neuron";
  neuronInfo.set(cv, {n, labels: ctx.labels});
  const box = $("nv_view");
  box.innerHTML = "";
  box.appendChild(cv);
  $("nv_note").textContent = "layer " + v.layer + ", head " + v.head + (v.kv_head !== v.head ? " (key/value head " + v.kv_head + ")" : "") +
    ", query " + v.query + " (" + (ctx.labels[v.query] ?? v.query) + "); scale " + fmt(v.scale) +
    "; k and q from " + v.k_hook + " and " + v.q_hook + "; red positive, blue negative (k and q: \u00b1" +
    fmt(Math.fround(sk)) + ", q \u00d7 k: \u00b1" + fmt(Math.fround(sp)) + "); hover for the numbers";
}

const neuronInfo = new WeakMap();

/* The number under the pointer on the neuron view. */
function neuronHover(e) {
  const cv = e.target, s = neuronInfo.get(cv), tip = $("tooltip");
  if (!s || !s.n.layout) return;
  const L = s.n.layout, v = s.n.view;
  const x = e.offsetX * cv.width / cv.clientWidth, y = e.offsetY * cv.height / cv.clientHeight;
  const j = Math.floor((y - L.top) / L.rh), dk = Math.floor((x - L.xk) / L.cw), dp = Math.floor((x - L.xp) / L.cw);
  let text = null;
  if (y >= L.qy && y < L.qy + 14 && dk >= 0 && dk < L.D) text = "q[" + dk + "] = " + fmt(v.q[dk]);
  else if (j >= 0 && j < L.T) {
    const who = "key " + j + " (" + (s.labels[j] ?? j) + ")";
    if (dk >= 0 && dk < L.D) text = who + ": k[" + dk + "] = " + fmt(v.k[j][dk]);
    else if (dp >= 0 && dp < L.D) text = who + ": q[" + dp + "] \u00d7 k[" + dp + "] = " + fmt(v.q_times_k[j][dp]);
    else if (x >= L.xd) text = who + ": q\u00b7k " + fmt(v.dot[j]) + ", score " + (v.scores[j] === null ? "masked" : fmt(v.scores[j])) +
      ", weight " + fmt(v.weights[j]);
  }
  if (!text) { tip.style.display = "none"; return; }
  tip.textContent = text;
  tip.style.display = "block";
  tip.style.left = e.clientX + 14 + "px";
  tip.style.top = e.clientY + 12 + "px";
}

/* A new layer or head: in one-head mode the map is asked for again (timed
 * from the choice to the drawn map), and the neuron view follows. */
async function neuronPicked() {
  if (mv.oneHead && mv.ctx) {
    const t0 = performance.now();
    await runModel();
    /* the pick to the head drawn (the neuron view is asked for after it) */
    if (mv.timings.drawn_at > t0) mv.timings.pick_ms = mv.timings.drawn_at - t0;
    return;
  }
  if (mv.ctx) {
    const p = mv.ctx.layers.indexOf(+$("nv_layer").value) * mv.ctx.H + mv.ctx.heads.indexOf(+$("nv_head").value);
    if (p >= 0) openHead(p, true);
  }
  return runNeuron();
}

/* After a run: the pair bar, the menus and the neuron view of the open head
 * (from the reply when it carries one). */
function afterRun(ctx, st) {
  drawPairBar(ctx);
  neuronMenus(ctx);
  $("m_grid_note").textContent = mv.oneHead
    ? "T = " + ctx.T + " with " + ctx.shape.L + " \u00d7 " + ctx.shape.H + " heads: one head at a time (pick it under " +
      "\u201cNeuron view\u201d, or type layers and heads), not " + (ctx.shape.L * ctx.shape.H * ctx.T * ctx.T * 4 / 1e6).toFixed(0) +
      " MB of maps at once."
    : "Each thumbnail is one head of one layer: rows are queries, columns keys. Click one to open it." +
      (ctx.encoder ? " An encoder looks both ways: no causal triangle." : "");
  if (mv.open) { $("nv_layer").value = mv.open.layer; $("nv_head").value = mv.open.head; }
  const view = ctx.req.neuron_view ? neuronOf(st) : null;
  if (!view) return runNeuron();
  mv.neuron = {req: ctx.req, runs: (mv.neuron ? mv.neuron.runs : 0) + 1, view, error: null, layout: null, ms: 0};
  drawNeuron(ctx, mv.neuron);
}

/* The model view's tab names the family of the model it opens on from the
 * page's start, whichever view is shown first (an encoder's class, say). */
async function nameModelTab() {
  try {
    const r = await fetch("/models");
    const md = r.ok ? ((await r.json()).models || [])[0] : null;
    if (md && !modelStarted) $("model_tab").textContent = "Model view: " + md.module;
  } catch (_) { /* the tab keeps its plain name */ }
}

function startEncoder() {
  nameModelTab();
  const f = $("m_filter");
  for (const [k, t] of Object.entries(PAIR_FILTERS)) f.appendChild(new Option(t, k));
  f.onchange = pairFilterChanged;
  $("fm_run").onclick = runFill;
  $("fm_text").oninput = () => { $("fm_text").dataset.typed = "1"; };
  $("fm_text").onkeydown = (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runFill(); };
  $("nv_layer").onchange = $("nv_head").onchange = neuronPicked;
  $("nv_query").onchange = runNeuron;
  $("nv_view").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") neuronHover(e); });
  $("nv_view").addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
}
