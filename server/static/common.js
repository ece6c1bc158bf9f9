/* common.js - what every view of the viewer shares: colours, numbers, safetensors replies, heat maps (server/static/; inlined into the page by server/static/inline.py) */
"use strict";
const VIRIDIS_HEX =
  "44015444025645045745055946075a46085c460a5d460b5e470d60470e61471063471164471365481467481668481769" +
  "48186a481a6c481b6d481c6e481d6f481f70482071482173482374482475482576482677482878482979472a7a472c7a" +
  "472d7b472e7c472f7d46307e46327e46337f463480453581453781453882443983443a83443b84433d84433e85423f85" +
  "4240864241864142874144874045884046883f47883f48893e49893e4a893e4c8a3d4d8a3d4e8a3c4f8a3c508b3b518b" +
  "3b528b3a538b3a548c39558c39568c38588c38598c375a8c375b8d365c8d365d8d355e8d355f8d34608d34618d33628d" +
  "33638d32648e32658e31668e31678e31688e30698e306a8e2f6b8e2f6c8e2e6d8e2e6e8e2e6f8e2d708e2d718e2c718e" +
  "2c728e2c738e2b748e2b758e2a768e2a778e2a788e29798e297a8e297b8e287c8e287d8e277e8e277f8e27808e26818e" +
  "26828e26828e25838e25848e25858e24868e24878e23888e23898e238a8d228b8d228c8d228d8d218e8d218f8d21908d" +
  "21918c20928c20928c20938c1f948c1f958b1f968b1f978b1f988b1f998a1f9a8a1e9b8a1e9c891e9d891f9e891f9f88" +
  "1fa0881fa1881fa1871fa28720a38620a48621a58521a68522a78522a88423a98324aa8325ab8225ac8226ad8127ad81" +
  "28ae8029af7f2ab07f2cb17e2db27d2eb37c2fb47c31b57b32b67a34b67935b77937b87838b9773aba763bbb753dbc74" +
  "3fbc7340bd7242be7144bf7046c06f48c16e4ac16d4cc26c4ec36b50c46a52c56954c56856c66758c7655ac8645cc863" +
  "5ec96260ca6063cb5f65cb5e67cc5c69cd5b6ccd5a6ece5870cf5773d05675d05477d1537ad1517cd2507fd34e81d34d" +
  "84d44b86d54989d5488bd6468ed64590d74393d74195d84098d83e9bd93c9dd93ba0da39a2da37a5db36a8db34aadc32" +
  "addc30b0dd2fb2dd2db5de2bb8de29bade28bddf26c0df25c2df23c5e021c8e020cae11fcde11dd0e11cd2e21bd5e21a" +
  "d8e219dae319dde318dfe318e2e418e5e419e7e419eae51aece51befe51cf1e51df4e61ef6e620f8e621fbe723fde725";
/* The viewer: examples and module facts from /openapi.json, requests to the
 * same origin, replies as safetensors (Float32Array views on the reply's
 * buffer), drawn on canvases (heat maps, stages) and SVG (head view). The
 * colour of a weight is viridis at the level the server's PNG uses, computed
 * in float32 as the server does. Tests read window.viewer. */
const VIRIDIS = new Uint8Array(768);
for (let i = 0; i < 768; i++) VIRIDIS[i] = parseInt(VIRIDIS_HEX.substr(2 * i, 2), 16);
const PALETTE = new Uint32Array(256);   /* RGBA bytes of ImageData as one little-endian word */
for (let i = 0; i < 256; i++)
  PALETTE[i] = (255 << 24 | VIRIDIS[3 * i + 2] << 16 | VIRIDIS[3 * i + 1] << 8 | VIRIDIS[3 * i]) >>> 0;
const GRAY_MASKED = (255 << 24 | 205 << 16 | 200 << 8 | 200) >>> 0;  /* -inf */
const GRAY_ABSENT = (255 << 24 | 238 << 16 | 236 << 8 | 236) >>> 0;  /* not in the top-k */
const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                      "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a"];
const MAPS = ["attn_scores", "masked_scores", "mask", "attn_weights", "dropout_mask"];
const STAGE_TITLES = {attn_scores: "raw scores Q\u00b7K\u1d40", masked_scores: "scaled, masked scores",
                      mask: "mask (1 = masked)", attn_weights: "weights", dropout_mask: "dropout mask"};
/* Form fields: taken out of the JSON when an example loads, put back when sent. */
const FORM_KEYS = ["tokens", "causal", "num_heads", "n_head", "dropout", "training", "dropout_seed",
                   "mask_method", "average_attn_weights", "heads", "query_rows", "top_k", "color_scale",
                   "return", "output_format", "precision", "dtype", "cell"];
const LINE_LIMIT = 50000;          /* most lines in the head view */
const STAGES_LIMIT = 1 << 20;      /* most entries per map to ask for the five stages */

const $ = (id) => document.getElementById(id);
const viewer = window.viewer = {examples: [], endpoints: {}, endpoint: "", reply: null,
                                timings: {}, renders: 0, errors: 0, pad: new Set()};

/* ==== Numbers ============================================================== */

/* The colour level of v as the server computes it (api__image_level), in float32. */
function level(v, d) {
  let x = d > 0 ? Math.fround(v / d) : 0;
  x = x < 0 ? 0 : x > 1 ? 1 : x;
  return Math.trunc(Math.fround(Math.fround(x * 255) + 0.5));
}
viewer.level = level;
viewer.viridis = (l) => [VIRIDIS[3 * l], VIRIDIS[3 * l + 1], VIRIDIS[3 * l + 2]];

/* The shortest decimal that reads back as the same float32 (as the server writes). */
function fmt(v) {
  if (Number.isNaN(v)) return "not in top-k";
  if (!Number.isFinite(v)) return v < 0 ? "-inf (masked)" : String(v);
  for (let p = 1; p <= 9; p++) {
    const s = parseFloat(v.toPrecision(p));
    if (Math.fround(s) === v) return String(s);
  }
  return String(v);
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/* T x D uniform values in [-1, 1) from seed, as a binary tensor a request
 * takes ({"shape", "dtype": "float32", "base64"}). */
function randomBinary(T, D, seed) {
  const next = mulberry32(seed), x = new Float32Array(T * D);
  for (let i = 0; i < x.length; i++) x[i] = next() * 2 - 1;
  return f32Binary(x, [T, D]);
}

/* Float32Array x of the given shape as a binary tensor. */
function f32Binary(x, shape) {
  const bytes = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return {shape, dtype: "float32", base64: btoa(bin)};
}

/* A binary float32 tensor's values. */
function binaryF32(t) {
  const bin = atob(t.base64), u = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
  return new Float32Array(u.buffer, 0, u.length >> 2);
}

/* ==== Replies =============================================================== */

function f16(h) {
  const s = h >> 15 ? -1 : 1, e = (h >> 10) & 31, f = h & 1023;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

/* A safetensors reply: {meta, t: {name: {shape, data}}} with typed-array views. */
function readSafetensors(buf) {
  const n = Number(new DataView(buf).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, n)));
  const base = 8 + n, out = {meta: {}, t: {}};
  for (const [name, e] of Object.entries(header)) {
    if (name === "__metadata__") {
      for (const [k, v] of Object.entries(e)) { try { out.meta[k] = JSON.parse(v); } catch (_) { out.meta[k] = v; } }
      continue;
    }
    const count = e.shape.reduce((a, x) => a * x, 1), at = base + e.data_offsets[0];
    let data;
    if (e.dtype === "F32") data = new Float32Array(buf, at, count);
    else if (e.dtype === "I32") data = new Int32Array(buf, at, count);
    else if (e.dtype === "F16") { const h = new Uint16Array(buf, at, count); data = Float32Array.from(h, f16); }
    else data = new Uint8Array(buf, at, count);
    out.t[name] = {shape: e.shape, data};
  }
  return out;
}

/* A map of the reply as panels x R x C floats (top-k spread back over the keys). */
function mapOf(st, name, keys) {
  let t = st.t[name];
  if (t) {
    const s = t.shape, R = s[s.length - 2], C = s[s.length - 1];
    const data = t.data instanceof Float32Array ? t.data : Float32Array.from(t.data);
    return {name, lead: s.slice(0, -2), P: data.length / (R * C) || 0, R, C, data, topk: 0};
  }
  const v = st.t[name + ".values"], ix = st.t[name + ".indices"];
  if (!v || !ix) return null;
  const s = v.shape, R = s[s.length - 2], k = s[s.length - 1], P = v.data.length / (R * k) || 0;
  const C = keys, data = new Float32Array(P * R * C).fill(NaN);
  for (let r = 0; r < P * R; r++)
    for (let i = 0; i < k; i++) {
      const j = ix.data[r * k + i];
      if (j >= 0) data[r * C + j] = v.data[r * k + i];
    }
  return {name, lead: s.slice(0, -2), P, R, C, data, topk: k};
}

/* ==== Drawing ================================================================ */

const info = new WeakMap();   /* canvas -> what it shows, for hover */

/* How a map's values become levels: weights by the colour scale, scores min-max. */
function scaler(m, p, kind, scale = $("color_scale").value) {
  const d = m.data, n = m.R * m.C, off = p * n;
  if (kind === "attn_weights") {
    if (scale === "unit") return () => 1;
    if (scale === "row") return (i) => { let mx = 0; for (let j = 0; j < m.C; j++) { const v = d[off + i * m.C + j]; if (v > mx) mx = v; } return mx; };
    let mx = 0;
    for (let e = 0; e < n; e++) if (d[off + e] > mx) mx = d[off + e];
    return () => mx;
  }
  if (kind === "mask") return () => 1;
  let lo = Infinity, hi = -Infinity;
  for (let e = 0; e < n; e++) { const v = d[off + e]; if (Number.isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; } }
  if (kind === "dropout_mask") return () => hi > 0 ? hi : 1;
  return {lo, hi};
}

/* The colour a dropout mask with no zero gets: nothing was dropped, and a
 * panel of viridis's top would read as "everything" (the mask beside it
 * paints what is masked in that colour). */
const GRAY_KEPT = (255 << 24 | 234 << 16 | 229 << 8 | 226) >>> 0;

/* 1 when a dropout mask holds no zero: every multiplier the same. */
function nothingDropped(m, p) {
  const n = m.R * m.C, off = p * n;
  for (let e = 0; e < n; e++) if (m.data[off + e] !== m.data[off]) return false;
  return n > 0 && m.data[off] > 0;
}

/* One panel of a map on a new canvas. Cells are square (opts.size over the
 * larger side, at most opts.maxCell) unless opts.rowHeight makes the rows
 * taller, so that a wide map (many keys, few rows) still has a readable
 * label per row. A side gets its labels when its cells are 10 pixels or
 * more, in a font that fits them (12 px at most): labels never overlap. */
function drawHeat(m, p, opts) {
  const R = m.R, C = m.C, d = m.data, off = p * R * C;
  const cw = Math.max(1, Math.min(opts.maxCell || 40, Math.floor((opts.size || 360) / Math.max(R, C))));
  const ch = Math.max(cw, opts.rowHeight || 0);
  const rowFont = Math.min(12, ch - 2), colFont = Math.min(12, cw - 2);
  const rowLab = rowFont >= 8, colLab = colFont >= 8;
  const cv = document.createElement("canvas");
  const ctx = cv.getContext("2d");
  const widest = (list, font) => {
    ctx.font = font + "px sans-serif";
    return Math.min(100, Math.max(0, ...list.map((s) => ctx.measureText(s).width)));
  };
  const ml = rowLab ? Math.ceil(widest(opts.rowLabels, rowFont)) + 8 : 2;
  const mt = colLab ? Math.ceil(widest(opts.colLabels, colFont)) + 8 : 2;
  cv.width = ml + C * cw;
  cv.height = mt + R * ch;
  const img = ctx.createImageData(C * cw, R * ch);
  const px = new Uint32Array(img.data.buffer);
  const sc = scaler(m, p, opts.kind, opts.scale);
  const kept = opts.kind === "dropout_mask" && nothingDropped(m, p);
  const W = C * cw;
  for (let i = 0; i < R; i++) {
    const div = typeof sc === "function" ? sc(i) : 0;
    for (let j = 0; j < C; j++) {
      const v = d[off + i * C + j];
      let c;
      if (Number.isNaN(v)) c = GRAY_ABSENT;
      else if (v === -Infinity) c = GRAY_MASKED;
      else if (kept) c = GRAY_KEPT;
      else if (typeof sc === "function") c = PALETTE[level(v, div)];
      else c = PALETTE[level(sc.hi > sc.lo ? Math.fround((v - sc.lo) / (sc.hi - sc.lo)) : 0, 1)];
      if (cw === 1 && ch === 1) { px[i * W + j] = c; continue; }
      for (let y = 0; y < ch; y++) px.fill(c, (i * ch + y) * W + j * cw, (i * ch + y) * W + (j + 1) * cw);
    }
  }
  ctx.putImageData(img, ml, mt);
  if ((opts.numbers ?? $("numbers").checked) && Math.min(cw, ch) >= 30) {
    ctx.font = "10px sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let i = 0; i < R; i++)
      for (let j = 0; j < C; j++) {
        const v = d[off + i * C + j];
        if (Number.isNaN(v)) continue;
        const c = px[i * ch * W + j * cw];   /* the cell's colour: light text on dark cells */
        const lum = 0.3 * (c & 255) + 0.59 * (c >> 8 & 255) + 0.11 * (c >> 16 & 255);
        ctx.fillStyle = lum > 140 ? "#000" : "#fff";
        ctx.fillText(v === -Infinity ? "-inf" : String(Number(v.toPrecision(2))), ml + j * cw + cw / 2, mt + i * ch + ch / 2, cw - 2);
      }
  }
  ctx.fillStyle = "#1d2330";
  ctx.textBaseline = "middle";
  if (rowLab) {
    ctx.font = rowFont + "px sans-serif";
    ctx.textAlign = "right";
    opts.rowLabels.forEach((s, i) => ctx.fillText(s, ml - 4, mt + i * ch + ch / 2, 100));
  }
  if (colLab) {
    ctx.save();
    ctx.font = colFont + "px sans-serif";
    ctx.textAlign = "left";
    opts.colLabels.forEach((s, j) => {
      ctx.setTransform(1, 0, 0, 1, ml + j * cw + cw / 2, mt - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(s, 0, 0, 100);
    });
    ctx.restore();
  }
  /* large maps are shown smaller (the canvas keeps every entry; hover reads it) */
  const display = opts.display || 480;
  if (cv.width > display) { cv.style.width = display + "px"; cv.style.imageRendering = "auto"; }
  cv.className = "heatmap";
  Object.assign(cv.dataset, {x0: ml, y0: mt, cell: cw, cellh: ch, rows: R, cols: C, panel: p, map: m.name,
                             rowfont: rowLab ? rowFont : 0, colfont: colLab ? colFont : 0});
  info.set(cv, {m, p, ml, mt, cw, ch, rowLabels: opts.rowLabels, colLabels: opts.colLabels, title: opts.title});
  return cv;
}

/* What the colours of panel p of map m stand for, in words: the weights'
 * 0 to 1 (or the colour scale's top), a mask's two values, the min and max
 * of anything else (each map by itself). */
function colourRange(m, p, kind, scale) {
  if (kind === "attn_weights") return "colour: 0 to " + (LEGEND_TOPS[scale || $("color_scale").value] || "1");
  if (kind === "mask") return "yellow: masked (1), purple: kept (0)";
  if (kind === "dropout_mask") {
    if (nothingDropped(m, p)) return "every multiplier " + fmt(m.data[p * m.R * m.C]) + ": nothing dropped";
    const sc = scaler(m, p, kind);
    return "purple: dropped (0), yellow: kept (\u00d7" + fmt(sc()) + ")";
  }
  const sc = scaler(m, p, kind);
  return Number.isFinite(sc.lo) ? "colour: " + fmt(sc.lo) + " (purple) to " + fmt(sc.hi) + " (yellow)" : "";
}

/* A colour legend: lo, the viridis bar, hi. */
function legendBar(lo, hi) {
  const box = document.createElement("div");
  box.className = "legend";
  const cv = document.createElement("canvas");
  cv.width = 160;
  cv.height = 10;
  drawLegend(cv);
  box.append(Object.assign(document.createElement("span"), {textContent: lo}), cv,
             Object.assign(document.createElement("span"), {textContent: hi}));
  return box;
}

/* A loaded model (GET /models) as a menu names it: short enough for the
 * menu's width ("shakespeare (GPT2, 4 x 4)"); the rest in its tooltip. */
function modelOption(md) {
  const c = Object.values(md.config || {}), o = document.createElement("option");
  o.value = md.name;
  o.textContent = md.name + " (" + md.module + ", " + c[2] + " \u00d7 " + c[3] + ")";
  o.title = md.name + ": " + md.module + ", " + c[2] + " layers \u00d7 " + c[3] + " heads, " +
    (md.builtin ? "built into the server" : "from " + (md.folder ? md.folder + "/" : "") + md.file);
  return o;
}

/* The model a view opens on: the first the server loaded (the demo model
 * when it is the only one). */
function firstModel(models) { return models.length ? models[0].name : ""; }

function panelBox(title, canvas) {
  const box = document.createElement("div");
  box.className = "panel";
  const t = document.createElement("div");
  t.className = "title";
  t.textContent = title;
  box.append(t, canvas);
  return box;
}

function onHover(e) {
  const cv = e.target, s = info.get(cv), tip = $("tooltip");
  if (!s) return;
  const x = e.offsetX * cv.width / cv.clientWidth, y = e.offsetY * cv.height / cv.clientHeight;
  const j = Math.floor((x - s.ml) / s.cw), i = Math.floor((y - s.mt) / s.ch);
  if (i < 0 || j < 0 || i >= s.m.R || j >= s.m.C) { tip.style.display = "none"; return; }
  const v = s.m.data[s.p * s.m.R * s.m.C + i * s.m.C + j];
  tip.textContent = s.title + ": " + s.rowLabels[i] + " \u2192 " + s.colLabels[j] + ": " + fmt(v);
  tip.style.display = "block";
  tip.style.left = e.clientX + 14 + "px";
  tip.style.top = e.clientY + 12 + "px";
}

/* What the panels of a map are: [batch][head] leading axes as the reply has them. */
function panelTitles(m, ctx) {
  const titles = [];
  const lead = m.lead, batched = ctx.batched;
  for (let p = 0; p < m.P; p++) {
    let rest = p, b = 0, h = -1;
    if (lead.length === 2) { b = Math.floor(p / lead[1]); h = p % lead[1]; }
    else if (lead.length === 1 && batched) b = p;
    else if (lead.length === 1) h = p;
    const parts = [];
    if (batched) parts.push("batch " + b);
    if (h >= 0) parts.push("head " + (ctx.heads ? ctx.heads[h] : h));
    else if (m.name === "attn_weights" && ctx.averaged) parts.push("mean of " + (ctx.heads ? "heads " + ctx.heads.join(", ") : "heads"));
    titles.push(parts.join(", ") || m.name);
    void rest;
  }
  return titles;
}

function labelsFor(ctx, R, C) {
  const tok = ctx.tokens || [];
  const rowLabels = Array.from({length: R}, (_, i) => tok[ctx.r0 + i] ?? String(ctx.r0 + i));
  const colLabels = Array.from({length: C}, (_, j) => (C === ctx.S && tok.length === C ? tok[j] : String(j)));
  return {rowLabels, colLabels};
}

/* Draws every panel of the weights, the first at once and the rest in slices
 * of about 30 ms, so the first map shows right after the reply. */
function drawMaps(st, ctx, tReply) {
  const box = $("view_maps");
  box.innerHTML = "";
  const m = mapOf(st, "attn_weights", ctx.S);
  if (!m) { box.textContent = "no attn_weights in the reply"; return Promise.resolve(); }
  viewer.weights = m;
  const titles = panelTitles(m, ctx), lab = labelsFor(ctx, m.R, m.C);
  const size = m.P > 4 ? 300 : 360;
  let p = 0;
  return new Promise((done) => {
    const step = () => {
      const t0 = performance.now();
      while (p < m.P && (p === 0 || performance.now() - t0 < 30)) {
        box.appendChild(panelBox(titles[p], drawHeat(m, p, {kind: "attn_weights", size, display: m.P > 4 ? 300 : 480,
                                                             title: titles[p], ...lab})));
        if (p === 0) viewer.timings.first_map_ms = performance.now() - tReply;
        p++;
      }
      if (p < m.P) setTimeout(step, 0);
      else { viewer.timings.all_maps_ms = performance.now() - tReply; done(); }
    };
    step();
  });
}

function svgEl(tag, attrs) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return el;
}

/* BertViz's head view: queries left, keys right, one line per pair and head,
 * opacity = weight; hovering a token keeps only its lines. */
function drawHeadView(ctx) {
  const box = $("view_headview");
  box.innerHTML = "";
  const m = viewer.weights;
  if (!m) return;
  const lines = m.P * m.R * (m.topk ? Math.min(m.topk, m.C) : m.C);
  if (lines > LINE_LIMIT) {
    box.innerHTML = '<p class="note">The head view draws one line per query, key and head: ' +
      lines.toLocaleString() + " lines here. Select heads or query rows (or top-k) to bring it under " +
      LINE_LIMIT.toLocaleString() + ".</p>";
    return;
  }
  const titles = panelTitles(m, ctx), lab = labelsFor(ctx, m.R, m.C);
  const rowH = m.R > 40 || m.C > 40 ? (m.C > 200 ? 4 : 12) : 20, W = 460;
  const H = 30 + Math.max(m.R, m.C) * rowH;
  const svg = svgEl("svg", {class: "headview", width: W, height: H, viewBox: "0 0 " + W + " " + H});
  const xl = 150, xr = W - 150;
  const yq = (i) => 24 + i * rowH, yk = (j) => 24 + j * rowH;
  const legend = document.createElement("div");
  legend.className = "legend";
  for (let p = 0; p < m.P; p++) {
    const g = svgEl("g", {class: "head", "data-head": p});
    const colour = HEAD_COLOURS[p % HEAD_COLOURS.length];
    for (let i = 0; i < m.R; i++)
      for (let j = 0; j < m.C; j++) {
        const v = m.data[(p * m.R + i) * m.C + j];
        if (Number.isNaN(v)) continue;   /* not among the top-k */
        g.appendChild(svgEl("line", {x1: xl + 4, y1: yq(i) - 4, x2: xr - 4, y2: yk(j) - 4, stroke: colour,
                                     "stroke-width": 2, "stroke-opacity": Math.max(0, Math.min(1, v)).toFixed(4),
                                     "data-q": i, "data-k": j}));
      }
    svg.appendChild(g);
    const l = document.createElement("label");
    const cb = document.createElement("input");
    cb.type = "checkbox";
    cb.checked = true;
    cb.onchange = () => { g.style.display = cb.checked ? "" : "none"; };
    l.append(cb, Object.assign(document.createElement("span"), {textContent: titles[p]}));
    l.style.color = colour;
    legend.appendChild(l);
  }
  const focus = (attr, idx) => {
    for (const line of svg.querySelectorAll("line"))
      line.style.display = idx === null || line.getAttribute(attr) === String(idx) ? "" : "none";
  };
  const showLabels = rowH >= 12;
  if (showLabels) lab.rowLabels.forEach((s, i) => {
    const t = svgEl("text", {x: xl - 6, y: yq(i), "text-anchor": "end", class: "q"});
    t.textContent = s;
    t.onmouseenter = () => focus("data-q", i);
    t.onmouseleave = () => focus("data-q", null);
    svg.appendChild(t);
  });
  if (showLabels) lab.colLabels.forEach((s, j) => {
    const t = svgEl("text", {x: xr + 6, y: yk(j), "text-anchor": "start", class: "k"});
    t.textContent = s;
    t.onmouseenter = () => focus("data-k", j);
    t.onmouseleave = () => focus("data-k", null);
    svg.appendChild(t);
  });
  box.append(legend, svg);
}

/* The five stages of one panel side by side. */
function drawStages(st, ctx) {
  const box = $("view_stages");
  box.innerHTML = "";
  const w = viewer.weights;
  if (!w) return;
  const have = MAPS.map((n) => mapOf(st, n, ctx.S)).filter(Boolean);
  if (have.length < 2) {
    box.innerHTML = '<p class="note">The stages are asked for when each map has at most ' +
      STAGES_LIMIT.toLocaleString() + " entries: select heads or query rows.</p>";
    return;
  }
  const titles = panelTitles(w, ctx);
  const pick = document.createElement("select");
  titles.forEach((t, i) => { const o = document.createElement("option"); o.value = i; o.textContent = t; pick.appendChild(o); });
  pick.value = viewer.stagePanel < titles.length ? viewer.stagePanel : 0;
  const row = document.createElement("div");
  row.className = "panels";
  const draw = () => {
    row.innerHTML = "";
    const p = +pick.value;
    viewer.stagePanel = p;
    for (const m of have) {
      /* the mask has no head axis, the averaged weights neither */
      const q = m.P === w.P ? p : Math.min(m.P - 1, Math.floor(p * m.P / w.P));
      const lab = labelsFor(ctx, m.R, m.C);
      const title = STAGE_TITLES[m.name] + (m.name === "attn_weights" && ctx.averaged ? " (mean)" : "");
      const panel = panelBox(title, drawHeat(m, q, {kind: m.name, size: 160, maxCell: 28, title, ...lab}));
      /* each stage's own colours: its range in words under it */
      panel.append(Object.assign(document.createElement("div"), {className: "note range",
                                                                 textContent: colourRange(m, q, m.name)}));
      row.appendChild(panel);
    }
  };
  pick.onchange = draw;
  const l = document.createElement("label");
  l.append("panel ", pick);
  box.append(l, row);
  draw();
}

function drawLegend(cv = $("legend")) {
  const ctx = cv.getContext("2d");
  for (let x = 0; x < cv.width; x++) {
    const l = Math.round(x * 255 / (cv.width - 1));
    ctx.fillStyle = "rgb(" + viridis(l).join(",") + ")";
    ctx.fillRect(x, 0, 1, cv.height);
  }
}
const viridis = viewer.viridis;

