/* inside.js - inside the model: a head knocked out by a click, a patching heat map, the logit lens, any activation (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Inside the model: ablation, patching, the logit lens, the cache ======== */

/* What TransformerLens users do in a notebook, on POST /model/gpt2 (docs/inside.md):
 * one run with the logits, the logit lens and one activation of the cache;
 * a click on a head reruns with that head's hook_z ablated and shows how the
 * next-token probabilities move; a second text (as many tokens) is the
 * corrupted input of a patching sweep, drawn as layers x heads. The model is
 * the first one the server loaded (its trained model out of the box), else a
 * small GPT2 from a seed on the text's bytes. Tests read window.viewer.inside. */
const HOOK_NAMES = ["hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
                    "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out",
                    "hook_resid_mid", "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_post",
                    "hook_mlp_out", "hook_resid_post"];
const SEED_MODEL = {vocab_size: 256, block_size: 128, n_layer: 2, n_head: 4, n_embd: 32, activation: "gelu_new",
                    init: {seed: 0}};
const iv = viewer.inside = {models: [], tokenizers: [], model: null, runs: 0, errors: 0, ablations: 0, base: null, ablation: null,
                            patch: null, lens: null, activation: null, started: false, sent: []};

/* The status line; an error dims the results of the run before. */
function istatus(text, error) {
  $("i_status").textContent = text;
  $("i_status").className = error ? "error" : "";
  if (error) { iv.errors++; $("i_results").classList.add("stale"); }
}

/* ==== Requests ================================================================ */

/* The model part of a request, and how text goes in: the model's own
 * tokenizer takes "text", else the server's first (--tokenizer), named;
 * without one, the text's UTF-8 bytes are the ids (the seed model's
 * vocabulary is the 256 bytes). */
function modelFields(text) {
  const md = iv.model, req = md ? {model: md.name} : {...SEED_MODEL};
  if (md && md.text) req.text = text;
  else req.idx = Array.from(new TextEncoder().encode(text));
  if (md && md.text && !md.tokenizer) req.tokenizer = iv.tokenizers[0].name;
  return req;
}

async function postModel(req, kind) {
  iv.sent.push({kind, body: JSON.stringify(req)});   /* what tests send again to check the page */
  const r = await fetch("/model/gpt2", {method: "POST", headers: {"Content-Type": "application/json"},
                                        body: JSON.stringify(req)});
  if (!r.ok) {
    let e = {};
    try { e = (await r.json()).error || {}; } catch (_) { /* not JSON */ }
    const err = new Error("HTTP " + r.status + (e.code ? " " + e.code : "") + ": " + (e.message || r.statusText));
    err.field = e.field;
    throw err;
  }
  return req.output_format === "safetensors" ? readSafetensors(await r.arrayBuffer()) : r.json();
}

/* The hook of the activation view: "blocks.L.NAME" or ln_final's. */
function hookName() {
  const h = $("i_hook").value;
  return h === "ln_final.hook_normalized" ? h : "blocks." + $("i_layer").value + "." + h;
}

/* softmax of the last row of logits [T][V]. */
function lastProbs(t) {
  const V = t.shape[t.shape.length - 1], row = t.data.subarray(t.data.length - V);
  let mx = -Infinity, sum = 0;
  for (const v of row) if (v > mx) mx = v;
  const p = new Float64Array(V);
  for (let i = 0; i < V; i++) { p[i] = Math.exp(row[i] - mx); sum += p[i]; }
  for (let i = 0; i < V; i++) p[i] /= sum;
  return p;
}

function topOf(p, k) {
  return Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b).slice(0, k);
}

/* ==== The run: logits, the lens, one activation ================================ */

async function runInside() {
  const text = $("i_text").value, k = Math.max(1, +$("i_k").value || 5);
  istatus("running the model...");
  try {
    const req = {...modelFields(text), return: ["tokens", "logits", hookName()], logit_lens: {k},
                 output_format: "safetensors"};
    if (req.idx) req.return = req.return.filter((x) => x !== "tokens");
    const st = await postModel(req, "run");
    const ids = req.idx || null;
    iv.base = {tokens: st.meta.tokens || ids.map((b) => String.fromCharCode(b)), probs: lastProbs(st.t.logits),
               lens: {ids: st.t["logit_lens.ids"], probs: st.t["logit_lens.probs"], tokens: st.meta["logit_lens.tokens"]},
               act: st.t["cache." + hookName()], hook: hookName(), tokenOf: tokenNamer(st)};
    drawHeads();
    await drawNext(null);
    drawLens();
    drawActivation();
    await runPatch();
    $("i_results").classList.remove("stale");
    iv.runs++;
    istatus("ready: click a head to knock it out");
  } catch (e) {
    istatus(e.message, true);
  }
}

/* A token id's text: the lens's texts name the ids it shows; the others a
 * model that reads text asks of POST /detokenize (name.learn, before they
 * are shown); the seed model's ids are the text's bytes. */
function tokenNamer(st) {
  const names = new Map(), ids = st.t["logit_lens.ids"], texts = st.meta["logit_lens.tokens"];
  if (ids && texts) {
    const flat = texts.flat(Infinity);
    ids.data.forEach((id, i) => names.set(id, flat[i]));
  }
  const md = iv.model;
  const name = (id) => names.has(id) ? names.get(id) : md && md.text ? "#" + id : String.fromCharCode(id);
  name.learn = async (want) => {
    if (!md || !md.text) return;
    const missing = [...new Set(want)].filter((id) => !names.has(id));
    await Promise.all(missing.map(async (id) => {
      const req = md.tokenizer ? {tokens: [id], model: md.name} : {tokens: [id], tokenizer: iv.tokenizers[0].name};
      try {
        const r = await fetch("/detokenize", {method: "POST", headers: {"Content-Type": "application/json"},
                                              body: JSON.stringify(req)});
        if (r.ok) names.set(id, (await r.json()).content);
      } catch (_) { /* shown as its id */ }
    }));
  };
  return name;
}

/* ==== Heads: a click knocks one out ============================================ */

function drawHeads() {
  const c = iv.modelConfig(), box = $("i_heads");
  box.textContent = "";
  box.style.gridTemplateColumns = "auto repeat(" + c.n_head + ", 28px)";
  box.append(cellDiv(""));
  for (let h = 0; h < c.n_head; h++) box.append(cellDiv("h" + h));
  for (let l = 0; l < c.n_layer; l++) {
    box.append(cellDiv("layer " + l));
    for (let h = 0; h < c.n_head; h++) {
      const b = document.createElement("button");
      b.className = "head";
      b.dataset.layer = l;
      b.dataset.head = h;
      b.title = "knock out layer " + l + ", head " + h + " (its hook_z)";
      b.textContent = h;
      box.append(b);
    }
  }
}

function cellDiv(text) {
  const d = document.createElement("div");
  d.className = "lab";
  d.textContent = text;
  return d;
}

async function ablate(layer, head) {
  const method = $("i_method").value;
  istatus("layer " + layer + ", head " + head + " knocked out (" + method + ")...");
  try {
    const st = await postModel({...modelFields($("i_text").value), return: ["logits"],
                                ablate: [{layer, head, method}], output_format: "safetensors"}, "ablate");
    iv.ablation = {layer, head, method, probs: lastProbs(st.t.logits)};
    for (const b of $("i_heads").querySelectorAll("button.head"))
      b.classList.toggle("on", +b.dataset.layer === layer && +b.dataset.head === head);
    await drawNext(iv.ablation);
    $("i_results").classList.remove("stale");
    iv.ablations++;
    istatus("layer " + layer + ", head " + head + " knocked out (" + method + ")");
  } catch (e) {
    istatus(e.message, true);
  }
}

/* The next token's most likely choices, before and after the ablation. */
async function drawNext(ab) {
  const before = iv.base.probs, after = ab ? ab.probs : null, name = iv.base.tokenOf;
  const ids = [...new Set([...topOf(before, 8), ...(after ? topOf(after, 8) : [])])]
    .sort((a, b) => (after ? after[b] - after[a] : 0) || before[b] - before[a]);
  await name.learn(ids);
  const rows = ids.map((id) => ({id, token: name(id), before: before[id], after: after ? after[id] : null}));
  const t = $("i_next");
  t.textContent = "";
  const head = t.insertRow();
  for (const s of ["next token", "probability", ab ? "knocked out L" + ab.layer + "H" + ab.head : "", ab ? "change" : ""])
    head.insertCell().textContent = s;
  for (const r of rows) {
    const tr = t.insertRow();
    tr.insertCell().textContent = showToken(r.token);
    tr.insertCell().append(bar(r.before, "#1f77b4"));
    tr.insertCell().append(r.after === null ? "" : bar(r.after, "#d62728"));
    const d = r.after === null ? null : r.after - r.before;
    tr.insertCell().textContent = d === null ? "" : (d >= 0 ? "+" : "") + (100 * d).toFixed(1) + " pt";
  }
  iv.next = rows;
}

function bar(p, colour) {
  const s = document.createElement("span");
  s.className = "pbar";
  const b = document.createElement("i");
  b.style.width = Math.round(100 * p) + "px";
  b.style.background = colour;
  s.append(b, " " + (100 * p).toFixed(1) + "%");
  return s;
}

/* ==== Patching: layers x heads ================================================ */

async function runPatch() {
  const clean = $("i_text").value, corrupted = $("i_corrupted").value;
  const a = $("i_a").value, b = $("i_b").value;
  if (!corrupted) { $("i_patch").textContent = ""; iv.patch = null; return; }
  const req = {...modelFields(clean), return: [], patch: {site: "attn_head", logit_diff: [tokenArg(a), tokenArg(b)]}};
  if (req.text) req.patch.corrupted_text = corrupted;
  else req.patch.corrupted_idx = Array.from(new TextEncoder().encode(corrupted));
  const j = await postModel(req, "patch");
  iv.patch = j.patch;
  drawPatch(j.patch);
}

/* A token as typed in a logit_diff box: spaces, new lines and tabs shown as
 * showToken shows them (a lone space would be invisible), and back. */
const visibleToken = (s) => s.replace(/ /g, "\u2423").replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5");
const typedToken = (s) => s.replace(/\u2423/g, " ").replace(/\u21b5/g, "\n").replace(/\u21e5/g, "\t");

/* A logit_diff entry: the token's text, or its id when it is a number. */
function tokenArg(shown) {
  const s = typedToken(shown);
  if (/^\d+$/.test(s.trim())) return +s.trim();
  return iv.model && iv.model.text ? s : s.codePointAt(0);
}

/* Blue (the corrupted run's difference) through white to red (the clean
 * run's): how much of the clean behaviour one head brings back. */
function divergingColour(x) {
  const t = Math.max(-1, Math.min(1, x));
  const w = (c0, c1, f) => Math.round(c0 + (c1 - c0) * f);
  return t >= 0 ? [w(247, 178, t), w(247, 24, t), w(247, 43, t)] : [w(247, 33, -t), w(247, 102, -t), w(247, 172, -t)];
}

function drawPatch(p) {
  const res = p.result, L = res.length, H = res[0].length, cell = 30, ml = 60, mt = 20;
  const span = p.clean - p.corrupted;
  const cv = document.createElement("canvas");
  cv.width = ml + H * cell;
  cv.height = mt + L * cell;
  const g = cv.getContext("2d");
  g.font = "11px sans-serif";
  g.textAlign = "center";
  g.textBaseline = "middle";
  for (let l = 0; l < L; l++) {
    g.fillStyle = "#1d2330";
    g.fillText("layer " + l, ml / 2, mt + l * cell + cell / 2);
    for (let h = 0; h < H; h++) {
      const frac = span !== 0 ? (res[l][h] - p.corrupted) / span : 0, [r, gg, b] = divergingColour(frac);
      g.fillStyle = "rgb(" + r + "," + gg + "," + b + ")";
      g.fillRect(ml + h * cell, mt + l * cell, cell - 1, cell - 1);
      g.fillStyle = Math.abs(frac) > 0.6 ? "#fff" : "#1d2330";
      g.fillText(frac.toFixed(2), ml + h * cell + cell / 2, mt + l * cell + cell / 2, cell - 2);
    }
  }
  for (let h = 0; h < H; h++) { g.fillStyle = "#1d2330"; g.fillText("h" + h, ml + h * cell + cell / 2, mt / 2); }
  cv.className = "patchmap";
  cv.title = "logit difference: clean " + fmt(p.clean) + ", corrupted " + fmt(p.corrupted);
  cv.onmousemove = (e) => {
    const h = Math.floor((e.offsetX - ml) / cell), l = Math.floor((e.offsetY - mt) / cell), tip = $("tooltip");
    if (l < 0 || h < 0 || l >= L || h >= H) { tip.style.display = "none"; return; }
    tip.textContent = "layer " + l + ", head " + h + " patched from the clean run: " + fmt(res[l][h]) +
      " (clean " + fmt(p.clean) + ", corrupted " + fmt(p.corrupted) + ")";
    Object.assign(tip.style, {display: "block", left: e.clientX + 14 + "px", top: e.clientY + 12 + "px"});
  };
  cv.onmouseleave = () => { $("tooltip").style.display = "none"; };
  $("i_patch").textContent = "";
  $("i_patch").append(cv);
  $("i_patch_note").textContent = "Each cell: (patched - corrupted) / (clean - corrupted) of logit[" + $("i_a").value +
    "] - logit[" + $("i_b").value + "] at the last position; 1 = the clean run's, 0 = the corrupted run's.";
}

/* ==== The logit lens: each layer's top token at every position ================== */

function drawLens() {
  const lens = iv.base.lens, t = $("i_lens");
  const [E, T, k] = lens.ids.shape, tokens = iv.base.tokens, name = iv.base.tokenOf;
  t.textContent = "";
  const head = t.insertRow();
  head.insertCell().textContent = "input \u2192";
  for (let i = 0; i < T; i++) head.insertCell().textContent = showToken(tokens[i]);
  iv.lens = [];
  for (let e = 0; e < E; e++) {
    const tr = t.insertRow(), row = [];
    tr.insertCell().textContent = e < E - 1 ? "block " + e + " input" : "block " + (E - 2) + " output";
    for (let i = 0; i < T; i++) {
      const at = (e * T + i) * k, id = lens.ids.data[at], p = lens.probs.data[at];
      const td = tr.insertCell();
      td.textContent = showToken(name(id));
      td.style.background = "rgba(31,119,180," + Math.min(1, p).toFixed(3) + ")";
      td.style.color = p > 0.55 ? "#fff" : "";
      const top = [];
      for (let j = 0; j < k; j++) top.push(showToken(name(lens.ids.data[at + j])) + " " + (100 * lens.probs.data[at + j]).toFixed(1) + "%");
      td.title = top.join(", ");
      row.push([id, p]);
    }
    iv.lens.push(row);
  }
}

/* ==== One activation of the cache as a heat map =============================== */

/* The activation's panels with the tokens on their axes (rows tall enough
 * for a label each, a map's cells large enough for its columns' too) and
 * what the colours stand for: the pattern's 0 to 1, else each panel's own
 * min and max. */
function drawActivation() {
  const t = iv.base.act, box = $("i_act");
  box.textContent = "";
  $("i_act_legend").textContent = "";
  if (!t) return;
  const s = t.shape, map = s.length === 3 && s[1] === s[2] && iv.base.hook.includes("attn.hook_");
  /* [H][T][T] maps one panel per head; [T][H][D] as [T][H*D]; [T][C] as it is */
  const R = map ? s[1] : s[0], C = map ? s[2] : t.data.length / s[0], P = map ? s[0] : 1;
  const m = {name: iv.base.hook, lead: map ? [P] : [], P, R, C, data: t.data, topk: 0};
  const kind = iv.base.hook.endsWith("hook_pattern") ? "attn_weights" : "scores";
  const tokens = iv.base.tokens.map(showToken);
  const size = map ? Math.min(600, Math.max(240, 14 * C)) : 520;
  $("i_act_legend").append(kind === "attn_weights" ? legendBar("0", "1")
                                                   : legendBar("min", "max (of each panel, below it)"));
  for (let p = 0; p < P; p++) {
    const title = iv.base.hook + (map ? ", head " + p : "");
    const cv = drawHeat(m, p, {kind, scale: "unit", size, maxCell: 24, rowHeight: map ? 0 : 14, numbers: false, title,
                               rowLabels: tokens, colLabels: map ? tokens : Array.from({length: C}, (_, j) => String(j))});
    const panel = panelBox(title, cv);
    const note = map ? "rows: queries, columns: keys" : "rows: tokens, columns: " + C + " values (0 to " + (C - 1) + ")";
    panel.append(Object.assign(document.createElement("div"), {className: "note range",
                                                               textContent: note + "; " + colourRange(m, p, kind, "unit")}));
    box.append(panel);
  }
  iv.activation = {name: iv.base.hook, shape: s, panels: P};
}

/* ==== Start ================================================================ */

async function loadInsideModels() {
  try {
    const r = await fetch("/models");
    const j = r.ok ? await r.json() : {};
    iv.models = j.models || [];
    iv.tokenizers = j.tokenizers || [];
  } catch (_) { iv.models = []; iv.tokenizers = []; }
  const sel = $("i_model");
  sel.textContent = "";
  for (const md of iv.models) {
    sel.append(modelOption(md));
    md.text = !!(md.tokenizer || iv.tokenizers.length);
  }
  const o = document.createElement("option");
  o.value = "";
  o.textContent = "GPT2 from a seed (bytes)";
  o.title = "GPT2 built from a seed, untrained; the ids are the text's bytes";
  sel.append(o);
  sel.value = firstModel(iv.models);
  insideModelChanged();
}

function insideModelChanged() {
  iv.model = iv.models.find((x) => x.name === $("i_model").value) || null;
  const c = iv.model ? iv.model.config : SEED_MODEL;
  /* layers and heads under the family's own names (num_hidden_layers, n_layers, ...): the config's columns 2 and 3 */
  const v = Object.values(c);
  iv.modelConfig = () => ({n_layer: c.n_layer ?? c.n_layers ?? v[2], n_head: c.n_head ?? c.n_heads ?? v[3]});
  const layers = $("i_layer"), n = iv.modelConfig().n_layer;
  layers.textContent = "";
  for (let l = 0; l < n; l++) layers.append(new Option(String(l), String(l)));
}

function showInside() {
  if (iv.started) return;
  iv.started = true;
  loadInsideModels().then(runInside);
}
viewer.showInside = showInside;

function startInside() {
  const hooks = $("i_hook");
  for (const h of [...HOOK_NAMES, "ln_final.hook_normalized"]) hooks.append(new Option(h, h));
  hooks.value = "attn.hook_pattern";
  $("i_run").onclick = runInside;
  for (const id of ["i_a", "i_b"]) $(id).addEventListener("input", () => {
    const el = $(id), at = el.selectionStart, v = visibleToken(el.value);
    if (v !== el.value) { el.value = v; el.setSelectionRange(at, at); }
  });
  $("i_model").onchange = () => { insideModelChanged(); runInside(); };
  $("i_hook").onchange = $("i_layer").onchange = () => { if (iv.base) runInside(); };
  $("i_heads").onclick = (e) => {
    const b = e.target.closest("button.head");
    if (b) ablate(+b.dataset.layer, +b.dataset.head);
  };
  $("i_act").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  $("i_act").addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
}
