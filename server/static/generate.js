/* generate.js - the generation view: the model writes, token by token (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Generation view: POST /model/gpt2 with "generate", streamed ============ */

/* A prompt, the sliders of Transformer Explainer and the book's generate()
 * (temperature, top-k, top-p, seed, length), and the model writing: the
 * request goes with Accept: text/event-stream, each written token shows as
 * its event arrives, with the alternatives the model weighed at that step
 * (their probabilities), and a click on a written token shows what the
 * position that chose it attended to, layer by layer and head by head. Stop
 * closes the stream: the server stops at the next token. With "streams"
 * over 1, streams.js runs that many side by side. Tests read
 * window.viewer.gen. */
const gv = viewer.gen = {models: [], started: false, running: false, abort: null, prompt: null, steps: [],
                         done: null, open: -1, renders: 0, errors: 0, arrivals: [], chips_seen: [], t0: 0};

const GEN_STYLE = `
#main_generate { grid-template-columns: 320px 1fr; }
#g_prompt { height: 80px; width: 100%; }
#main_generate input[type=range] { width: 130px; }
#main_generate .val { font: 12px ui-monospace, Menlo, monospace; min-width: 34px; display: inline-block; }
#g_text { line-height: 2; font: 14px/2 ui-monospace, Menlo, Consolas, monospace; }
#g_text .chip { cursor: default; }
#g_text .chip.gen { cursor: pointer; background: #eef2ff; border-color: #c5cff5; }
#g_text .chip.gen.on { background: var(--accent); color: #fff; }
#g_status { margin: 8px 0 0; min-height: 20px; color: var(--muted); white-space: pre-wrap; }
#g_status.error { color: #b3261e; }
#g_alts table { border-collapse: collapse; font-size: 12px; }
#g_alts td { padding: 1px 6px; }
#g_alts td.tok { font-family: ui-monospace, Menlo, monospace; }
#g_alts tr.chosen td { font-weight: 700; }
#g_alts .bar { display: inline-block; height: 9px; background: var(--accent); vertical-align: middle; }
#g_attn canvas { image-rendering: pixelated; display: block; }
#g_attn .panel { align-items: flex-start; }
.gen_cols { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; margin-top: 10px; }
`;

const GEN_HTML = `
<aside>
  <h2>Model</h2>
  <div class="row"><select id="g_model" aria-label="model"><option value="" title="GPT2 built from a seed: 4 layers, 4 heads, n_embd 64, untrained">GPT2 from a seed (4 \u00d7 4)</option></select></div>
  <h2>Prompt</h2>
  <textarea id="g_prompt" spellcheck="false" aria-label="prompt">Every effort moves you</textarea>
  <div class="row"><label><input id="g_ids" type="checkbox"> token ids</label></div>
  <h2>Sampling</h2>
  <div class="row"><label>temperature <input id="g_temperature" type="range" min="0" max="2" step="0.05" value="1"> <span class="val" id="g_temperature_v"></span></label></div>
  <div class="row"><label>top-k <input id="g_top_k" type="range" min="0" max="100" step="1" value="25"> <span class="val" id="g_top_k_v"></span></label></div>
  <div class="row"><label>top-p <input id="g_top_p" type="range" min="0.05" max="1" step="0.05" value="1"> <span class="val" id="g_top_p_v"></span></label></div>
  <div class="row"><label>seed <input id="g_seed" type="range" min="0" max="999" step="1" value="123"> <span class="val" id="g_seed_v"></span></label></div>
  <div class="row"><label>length <input id="g_length" type="range" min="1" max="200" step="1" value="30"> <span class="val" id="g_length_v"></span></label></div>
  <div class="note">temperature 0: greedy (the book's generate_text_simple); top-k 0 and top-p 1: off.
  torch.manual_seed(seed) before the loop: the same seed writes the same text.</div>
  <div class="row"><label>streams <input id="g_streams" type="number" min="1" max="8" step="1" value="1" style="width:48px"></label></div>
  <div class="note" id="g_streams_note">1: one generation, with its alternatives and attention.</div>
  <div class="row" style="gap:6px; margin-top:8px"><button id="g_run" class="primary">Generate</button><button id="g_stop" disabled>Stop</button></div>
  <div id="g_status" role="status"></div>
  <details><summary class="note">The request sent to <code>POST /model/gpt2</code></summary><pre id="g_request"></pre></details>
</aside>
<section class="view" id="g_results">
  <div id="g_multi" hidden></div>
  <div class="note" id="g_summary">The prompt in grey, then the tokens as the model writes them; click one.</div>
  <div class="chips" id="g_text"></div>
  <div class="gen_cols">
    <div id="g_alts"></div>
    <div id="g_attn"></div>
  </div>
</section>`;

const SLIDERS = ["temperature", "top_k", "top_p", "seed", "length"];

/* The status line; an error dims what the last run wrote. */
function gstatus(text, error) {
  $("g_status").textContent = text;
  $("g_status").className = error ? "error" : "";
  if (error) $("g_results").classList.add("stale");
}

function sliderText(name) {
  const v = +$("g_" + name).value;
  if (name === "top_k" && v === 0) return "off";
  if (name === "top_p" && v === 1) return "off";
  if (name === "temperature" && v === 0) return "0 greedy";
  return String(v);
}

/* The request the form describes. */
function genRequest() {
  const req = {};
  const name = $("g_model").value;
  if (name) req.model = name;
  else Object.assign(req, {vocab_size: 50257, block_size: 256, n_layer: 4, n_head: 4, n_embd: 64, init: {seed: 0}});
  if ($("g_ids").checked) {
    req.idx = intList($("g_prompt").value, "token ids");
    if (!req.idx) throw new Error("token ids: type them separated by spaces");
  } else req.text = $("g_prompt").value;
  const v = (k) => +$("g_" + k).value;
  req.generate = {max_new_tokens: v("length"), temperature: v("temperature"), top_k: v("top_k"),
                  top_p: v("top_p"), seed: v("seed"), logprobs: 5, attention: true};
  return req;
}

/* One server-sent event block: {event, data}. */
function sseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return {event, data: data.join("\n")};
}

function chip(text, cls, title) {
  const c = Object.assign(document.createElement("span"), {className: "chip " + cls, title});
  c.textContent = showToken(text);
  return c;
}

function onGenEvent(ev) {
  const d = JSON.parse(ev.data);
  if (ev.event === "start") {
    gv.prompt = d;
    const box = $("g_text");
    box.innerHTML = "";
    d.idx.forEach((id, i) => box.appendChild(chip(d.tokens ? d.tokens[i] : String(id), "prompt",
                                                   "prompt, position " + i + ", id " + id)));
  } else if (ev.event === "token") {
    gv.steps.push(d);
    gv.arrivals.push(performance.now() - gv.t0);
    const c = chip(d.text ?? String(d.id), "gen", "position " + d.position + ", id " + d.id +
                   ", log-probability " + d.logprob.toFixed(4) + ", probability " + Math.exp(d.logprob).toFixed(4));
    c.dataset.k = d.index;
    $("g_text").appendChild(c);
    gv.chips_seen.push(document.querySelectorAll("#g_text .chip.gen").length);
    if (gv.open < 0 || gv.open === gv.steps.length - 2) openStep(d.index); /* follow the newest */
  } else if (ev.event === "done") {
    gv.done = d;
    const g = d.generation || {};
    $("g_summary").textContent = g.completion_tokens + " tokens written after " + g.prompt_tokens +
      " (" + g.finish_reason + "), seed " + g.seed + ", " + (g.ms ? g.ms.per_token.toFixed(1) : "?") +
      " ms a token; click a written token for its alternatives and attention";
  } else if (ev.event === "error") {
    throw new Error(errorLine(d.error ? d.error.status : "", d.error));
  }
}

async function readEvents(r, onEvent = onGenEvent) {
  const reader = r.body.getReader(), dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (block.trim()) onEvent(sseBlock(block));
    }
  }
}

/* One stream's view (the tokens, their alternatives and attention) or the
 * side-by-side panes of several (streams.js). */
function showSingle(on) {
  $("g_multi").hidden = on;
  for (const id of ["g_summary", "g_text"]) $(id).hidden = !on;
  document.querySelector("#g_results .gen_cols").hidden = !on;
}

async function runGen() {
  let req, n;
  try { req = genRequest(); n = streamCount(); } catch (e) { gv.errors++; return gstatus(e.message, true); }
  if (n > 1) return runStreams(req, n);
  showSingle(true);
  $("g_request").textContent = pretty(req);
  Object.assign(gv, {steps: [], done: null, open: -1, prompt: null, arrivals: [], chips_seen: [], t0: performance.now()});
  $("g_text").innerHTML = $("g_alts").innerHTML = $("g_attn").innerHTML = "";
  $("g_results").classList.remove("stale");
  $("g_run").disabled = true;
  $("g_stop").disabled = false;
  gv.running = true;
  gv.abort = new AbortController();
  gstatus("the model is writing\u2026");
  try {
    const r = await fetch("/model/gpt2", {method: "POST", signal: gv.abort.signal, body: JSON.stringify(req),
                                          headers: {"Content-Type": "application/json", "Accept": "text/event-stream"}});
    if (!r.ok) { const e = await errorOf(r); throw new Error(errorLine(r.status, e)); }
    await readEvents(r);
    if (!gv.done) throw new Error("the stream ended before its last event");
    gstatus("done in " + (performance.now() - gv.t0).toFixed(0) + " ms; the first token came after " +
            (gv.arrivals.length ? gv.arrivals[0].toFixed(0) : "-") + " ms");
    gv.renders++;
  } catch (e) {
    if (e.name === "AbortError") gstatus("stopped after " + gv.steps.length + " tokens: the server stops at its next token");
    else { gv.errors++; gstatus(String(e.message || e), true); }
  } finally {
    gv.running = false;
    $("g_run").disabled = false;
    $("g_stop").disabled = true;
  }
}

/* The text of position p: the prompt's tokens, then the written ones. */
function tokenAt(p) {
  const P = gv.prompt ? gv.prompt.idx.length : 0;
  if (p < P) return gv.prompt.tokens ? gv.prompt.tokens[p] : String(gv.prompt.idx[p]);
  const s = gv.steps[p - P];
  return s ? s.text ?? String(s.id) : "?";
}

/* The alternatives of step k, with their probabilities (exp of the model's log-probabilities). */
function drawAlternatives(s) {
  const box = $("g_alts");
  box.innerHTML = "<h2>Step " + s.index + ": the model's top choices</h2>";
  const t = document.createElement("table");
  for (const a of s.top || []) {
    const tr = t.insertRow(), p = Math.exp(a.logprob);
    if (a.id === s.id) tr.className = "chosen";
    tr.insertCell().textContent = (p * 100).toFixed(1) + "%";
    tr.insertCell().innerHTML = "<span class=bar style='width:" + Math.round(p * 120) + "px'></span>";
    const c = tr.insertCell();
    c.className = "tok";
    c.textContent = showToken(a.text ?? String(a.id));
    tr.insertCell().textContent = "id " + a.id;
  }
  box.appendChild(t);
  const note = Object.assign(document.createElement("div"), {className: "note"});
  note.textContent = "written: " + showToken(s.text ?? String(s.id)) + " (" + (Math.exp(s.logprob) * 100).toFixed(1) +
    "% under the model, before temperature and filters)";
  box.appendChild(note);
}

/* What position - 1 attended to: one row per layer and head, one column per
 * position it saw, viridis at the weight (the other views' colours, and
 * their hover: the head, the token, the weight). */
function drawAttention(s) {
  const box = $("g_attn"), A = s.attention;
  box.innerHTML = "";
  if (!A || !A.length) return;
  const L = A.length, H = A[0].length, t = A[0][0].length, start = s.position - t;
  const data = new Float32Array(L * H * t);
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) data.set(A[l][h], (l * H + h) * t);
  const m = {data, R: L * H, C: t, P: 1, name: "attention"};
  const rowLabels = [], colLabels = Array.from({length: t}, (_, j) => showToken(tokenAt(start + j)));
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) rowLabels.push("layer " + l + ", head " + h);
  const title = "what position " + (s.position - 1) + " attended to when it chose " + showToken(s.text ?? String(s.id));
  /* a row per head: tall enough for its label whatever the text's length */
  const cv = drawHeat(m, 0, {kind: "attn_weights", size: 520, display: 640, rowHeight: 14, title, rowLabels,
                             colLabels, scale: "unit", numbers: false});
  const note = Object.assign(document.createElement("div"), {className: "note"});
  note.textContent = "rows: each head of each layer (" + L + " \u00d7 " + H + "); columns: positions " + start +
    " to " + (s.position - 1) + "; hover a cell for the token and the weight";
  box.append(panelBox(title, cv), note);
}

function openStep(k) {
  const s = gv.steps[k];
  if (!s) return;
  gv.open = k;
  for (const c of $("g_text").querySelectorAll(".chip.gen")) c.classList.toggle("on", +c.dataset.k === k);
  drawAlternatives(s);
  drawAttention(s);
}

/* GET /models: the loaded checkpoints, as choices. */
async function loadGenModels() {
  try {
    const r = await fetch("/models");
    if (r.ok) gv.models = (await r.json()).models || [];
  } catch (_) { return; }
  for (const md of gv.models) $("g_model").appendChild(modelOption(md));
  $("g_model").value = firstModel(gv.models);
}

/* Shown by showMode (model.js) when the view is #generate. */
function showGenerate(on) {
  $("main_generate").hidden = !on;
  if (on && !gv.started) { gv.started = true; loadGenModels(); }
}

function startGenerate() {
  const style = document.createElement("style");
  style.textContent = GEN_STYLE;
  document.head.appendChild(style);
  $("main_generate").innerHTML = GEN_HTML;
  for (const k of SLIDERS) {
    const show = () => { $("g_" + k + "_v").textContent = sliderText(k); };
    $("g_" + k).addEventListener("input", show);
    show();
  }
  $("g_streams").addEventListener("input", streamsNote);
  $("g_temperature").addEventListener("input", streamsNote);
  $("g_run").onclick = runGen;
  $("g_stop").onclick = () => { if (gv.abort) gv.abort.abort(); };
  $("g_text").onclick = (e) => { const c = e.target.closest(".chip.gen"); if (c) openStep(+c.dataset.k); };
  $("g_attn").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  $("g_attn").addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
  $("g_prompt").onkeydown = (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) runGen(); };
  startStreams();
}
