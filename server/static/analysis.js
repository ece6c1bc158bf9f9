/* analysis.js - what each head does: POST /model's "analysis" as grids, the rollout and a ranking (server/static/; inlined into the page by server/static/inline.py) */
/* ==== What each head does (#heads) ========================================== */

/* One request with every analysis (docs/analysis.md) on the server's first
 * model (the demo model out of the box), else a small GPT2 from a seed on
 * the text's bytes: a layers x heads grid per score (a click opens that
 * head's map), the rollout with a layer slider, the heads ranked by
 * importance. The analyses' names are the API document's (the table core
 * keeps). Tests read window.viewer.heads. */
const HEADS_SEED = {vocab_size: 256, block_size: 128, n_layer: 2, n_head: 4, n_embd: 32, activation: "gelu_new",
                    init: {seed: 0}};
const HEADS_NOTES = {
  entropy: "nats: low = a head that looks at few positions",
  sink: "weight on position 0",
  previous_token: "share of the weight on the previous token",
  duplicate_token: "share on earlier copies of the token",
  induction: "share on the token after an earlier copy",
  importance: "loss rise in nats when knocked out",
};
const hv = viewer.heads = {models: [], model: null, names: [], runs: 0, errors: 0, opens: 0, sent: [],
                           reply: null, grids: {}, opened: null, rolloutLayer: 0, rank: []};

function hstatus(text, error) {
  $("h_status").textContent = text;
  $("h_status").className = error ? "error" : "";
  if (error) hv.errors++;
}

/* The model part of a request: a loaded model takes text through its
 * tokenizer; the seed model's vocabulary is the text's UTF-8 bytes. */
function headsModel(text) {
  const md = hv.model, req = md ? {model: md.name} : {...HEADS_SEED};
  if (md && md.text) req.text = text;
  else req.idx = Array.from(new TextEncoder().encode(text));
  return req;
}

async function headsPost(req, kind) {
  hv.sent.push({kind, body: JSON.stringify(req)});   /* what the tests send again */
  const r = await fetch("/model", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(req)});
  const j = await r.json().catch(() => ({}));
  if (!r.ok) {
    const e = j.error || {};
    throw new Error("HTTP " + r.status + (e.code ? " " + e.code : "") + ": " + (e.message || r.statusText) +
                    (e.field ? " (field " + e.field + ")" : ""));
  }
  return j;
}

/* ==== The run ================================================================ */

async function runHeads() {
  const text = $("h_text").value;
  $("h_view").classList.add("stale");
  hstatus(hv.names.includes("importance") ? "running the model, and once more per head knocked out..." : "running the model...");
  try {
    const req = {...headsModel(text), analysis: hv.names, return: []};
    if (req.text) req.return.push("tokens");
    const j = await headsPost(req, "analysis");
    hv.reply = j;
    hv.tokens = j.tokens || Array.from(new TextEncoder().encode(text)).map((b) => String.fromCharCode(b));
    drawScoreGrids(j.analysis);
    setupRollout(j.analysis.rollout);
    drawRanking(j.analysis.importance);
    $("h_head").textContent = "";
    hv.opened = null;
    $("h_view").classList.remove("stale");
    hv.runs++;
    const [L, H] = [j.analysis[hv.names[0]].length, j.analysis[hv.names[0]][0].length];
    hstatus((hv.model ? hv.model.name : "GPT2 from a seed") + ": " + L + " layers \u00d7 " + H + " heads, " +
            hv.tokens.length + " tokens. Click a cell to open that head's map.");
  } catch (e) {
    hstatus(e.message, true);
  }
}

/* ==== A grid per score ======================================================= */

/* A cell's colour: viridis on [0, 1] for shares, on [0, max] for entropy,
 * blue-white-red around 0 for importance. */
function cellColour(name, v, max) {
  if (name === "importance") {
    const t = Math.max(-1, Math.min(1, max > 0 ? v / max : 0));
    const w = (c0, c1, f) => Math.round(c0 + (c1 - c0) * f);
    const [r, g, b] = t >= 0 ? [w(247, 178, t), w(247, 24, t), w(247, 43, t)] : [w(247, 33, -t), w(247, 102, -t), w(247, 172, -t)];
    return {bg: "rgb(" + r + "," + g + "," + b + ")", fg: Math.abs(t) > 0.6 ? "#fff" : "#1d2330"};
  }
  const [r, g, b] = viridis(level(Math.min(1, max > 0 ? v / max : 0), 1));
  return {bg: "rgb(" + r + "," + g + "," + b + ")", fg: 0.3 * r + 0.59 * g + 0.11 * b > 140 ? "#000" : "#fff"};
}

function labDiv(text) {
  const d = document.createElement("div");
  d.className = "lab";
  d.textContent = text;
  return d;
}

function drawScoreGrids(an) {
  const box = $("h_grids");
  box.textContent = "";
  hv.grids = {};
  for (const name of hv.names) {
    const g = an[name];
    if (!g || !Array.isArray(g[0]) || Array.isArray(g[0][0])) continue;   /* [L][H] scores only */
    const L = g.length, H = g[0].length, flat = g.flat();
    const max = name === "entropy" ? Math.max(...flat) : name === "importance" ? Math.max(...flat.map(Math.abs)) : 1;
    const wrap = document.createElement("div");
    wrap.className = "hscore";
    const h3 = document.createElement("h3");
    h3.textContent = name;
    const note = document.createElement("div");
    note.className = "note";
    note.textContent = HEADS_NOTES[name] || "";
    const grid = document.createElement("div");
    grid.className = "hgrid";
    grid.dataset.score = name;
    grid.style.gridTemplateColumns = "auto repeat(" + H + ", 38px)";
    grid.append(labDiv(""));
    for (let h = 0; h < H; h++) grid.append(labDiv("h" + h));
    for (let l = 0; l < L; l++) {
      grid.append(labDiv("layer " + l));
      for (let h = 0; h < H; h++) {
        const v = g[l][h], c = cellColour(name, v, max), b = document.createElement("button");
        b.className = "hcell";
        Object.assign(b.dataset, {score: name, layer: l, head: h, value: v});
        b.style.background = c.bg;
        b.style.color = c.fg;
        b.textContent = Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
        b.title = name + ", layer " + l + ", head " + h + ": " + fmt(v) + " (click: this head's map)";
        grid.append(b);
      }
    }
    wrap.append(h3, grid, note);
    box.append(wrap);
    hv.grids[name] = g;
  }
}

/* The head's weights ([T][T], the "attn_weights" of that layer and head). */
async function openHeadMap(layer, head) {
  hstatus("layer " + layer + ", head " + head + ": its map...");
  try {
    const req = {...headsModel($("h_text").value), return: ["attn_weights"], layers: [layer], heads: [head],
                 output_format: "flat"};
    const j = await headsPost(req, "head");
    const t = j.attn_weights, T = t.shape[t.shape.length - 1];
    const m = {name: "attn_weights", lead: [], P: 1, R: T, C: T, data: Float32Array.from(t.data), topk: 0};
    const tokens = hv.tokens.map(showToken), title = "layer " + layer + ", head " + head;
    const cv = drawHeat(m, 0, {kind: "attn_weights", scale: "unit", size: 480, maxCell: 24, numbers: false, title,
                               rowLabels: tokens, colLabels: tokens});
    $("h_head").textContent = "";
    $("h_head").append(panelBox(title + " (queries \u00d7 keys)", cv));
    for (const b of $("h_grids").querySelectorAll("button.hcell"))
      b.classList.toggle("on", +b.dataset.layer === layer && +b.dataset.head === head);
    hv.opened = {layer, head, T, rowSums: Array.from({length: T}, (_, i) => m.data.subarray(i * T, i * T + T).reduce((a, x) => a + x, 0)),
                 data: Array.from(m.data)};
    hv.opens++;
    hstatus("layer " + layer + ", head " + head + ": rows are queries, columns keys");
  } catch (e) {
    hstatus(e.message, true);
  }
}

/* ==== The rollout, a layer at a time ========================================== */

function setupRollout(r) {
  hv.rollout = r || null;
  const s = $("h_layer");
  if (!r) { $("h_rollout").textContent = ""; return; }
  s.max = String(r.length - 1);
  s.value = String(r.length - 1);   /* the whole model's flow first */
  drawRollout(r.length - 1);
}

function drawRollout(l) {
  const r = hv.rollout, T = r[l].length, tokens = hv.tokens.map(showToken);
  const m = {name: "rollout", lead: [], P: 1, R: T, C: T, data: Float32Array.from(r[l].flat()), topk: 0};
  const cv = drawHeat(m, 0, {kind: "attn_weights", scale: "row", size: 480, maxCell: 24, numbers: false,
                             title: "rollout to layer " + l, rowLabels: tokens, colLabels: tokens});
  $("h_rollout").textContent = "";
  $("h_rollout").append(panelBox("rollout through layers 0.." + l + " (row q: where position q's representation comes from; each row to its largest)", cv));
  $("h_layer_label").textContent = "layers 0 to " + l;
  hv.rolloutLayer = l;
}

/* ==== Heads ranked by importance ============================================== */

function drawRanking(imp) {
  const t = $("h_rank");
  t.textContent = "";
  hv.rank = [];
  if (!imp) return;
  imp.forEach((row, l) => row.forEach((v, h) => hv.rank.push({layer: l, head: h, importance: v})));
  hv.rank.sort((a, b) => b.importance - a.importance || a.layer - b.layer || a.head - b.head);
  const head = t.insertRow();
  for (const s of ["rank", "head", "importance", ""]) head.insertCell().textContent = s;
  const top = Math.max(1e-12, ...hv.rank.map((x) => Math.abs(x.importance)));
  hv.rank.slice(0, 24).forEach((x, i) => {
    const tr = t.insertRow();
    tr.insertCell().textContent = String(i + 1);
    tr.insertCell().textContent = "layer " + x.layer + ", head " + x.head;
    tr.insertCell().textContent = (x.importance >= 0 ? "+" : "") + x.importance.toFixed(4);
    const bar = document.createElement("i");
    bar.style.cssText = "display:inline-block;height:9px;border-radius:2px;width:" + Math.round(120 * Math.abs(x.importance) / top) +
                        "px;background:" + (x.importance >= 0 ? "#d62728" : "#1f77b4");
    tr.insertCell().append(bar);
    tr.dataset.layer = x.layer;
    tr.dataset.head = x.head;
  });
}

/* ==== Start ================================================================== */

async function loadHeadsModels() {
  try {
    const r = await fetch("/models");
    const j = r.ok ? await r.json() : {};
    hv.models = j.models || [];
    const tokenizers = (j.tokenizers || []).length;
    for (const md of hv.models) md.text = !!(md.tokenizer || tokenizers === 1);
  } catch (_) { hv.models = []; }
  const sel = $("h_model");
  sel.textContent = "";
  for (const md of hv.models) {
    const c = md.config;
    sel.append(new Option(md.name + ": " + (c.n_layer ?? c.n_layers) + " layers \u00d7 " + (c.n_head ?? c.n_heads) + " heads", md.name));
  }
  sel.append(new Option("GPT2 from a seed (untrained; ids = the text's bytes)", ""));
  hv.model = hv.models[0] || null;
}

/* The analyses' names from the API document (core's ATTN_ANALYSIS_MAP). */
async function loadHeadsNames() {
  try { await viewer.docReady; } catch (_) { /* the document's failure shows in the modules view */ }
  const body = ((viewer.doc || {}).components || {}).requestBodies || {};
  const props = (((body.Gpt2Request || {}).content || {})["application/json"] || {}).schema || {};
  hv.names = (((props.properties || {}).analysis || {}).items || {}).enum || [];
}

let headsStarted = false;
function showHeads() {
  if (headsStarted) return;
  headsStarted = true;
  Promise.all([loadHeadsModels(), loadHeadsNames()]).then(runHeads);
}

function startHeads() {
  $("h_run").onclick = runHeads;
  $("h_model").onchange = () => { hv.model = hv.models.find((x) => x.name === $("h_model").value) || null; runHeads(); };
  $("h_text").onkeydown = (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runHeads(); };
  $("h_grids").onclick = (e) => {
    const b = e.target.closest("button.hcell");
    if (b) openHeadMap(+b.dataset.layer, +b.dataset.head);
  };
  $("h_layer").oninput = () => { if (hv.rollout) drawRollout(+$("h_layer").value); };
  for (const id of ["h_head", "h_rollout"]) {
    $(id).addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
    $(id).addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
  }
  /* the view is a mode of the page (model.js's showMode), shown at #heads */
  const show = viewer.showMode;
  viewer.showMode = (name) => {
    show(name);
    $("main_heads").hidden = name !== "heads";
    if (name === "heads") showHeads();
  };
}
startHeads();
