/* streams.js - the generation view's streams side by side (server/static/; inlined by server/static/inline.py) */
/* ==== Several generations of one prompt at once ============================ */

/* With "streams" N over 1 the Generate button starts N generations of the
 * prompt at once, each its own streamed POST /model/gpt2 (the server batches
 * their decode steps: docs/generation.md), stream i with seed seed + i so
 * sampled ones differ (greedy ones write the same tokens). Each shows in a
 * pane of its own with its time to first token and tokens per second, and
 * its own Stop; a line above gives the tokens per second of all together.
 * The panes leave out the alternatives and attention of the one-stream view:
 * a step that keeps attention rows runs outside the batch. Tests read
 * window.viewer.gen.multi. */

const STREAMS_STYLE = `
#g_multi .panes { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 12px; margin-top: 8px; }
#g_multi .pane { border: 1px solid #dde; border-radius: 6px; padding: 6px 8px; }
#g_multi .pane h3 { font-size: 13px; margin: 0 0 4px; display: flex; justify-content: space-between; align-items: center; }
#g_multi .pane .chips { font: 13px/1.9 ui-monospace, Menlo, Consolas, monospace; }
#g_multi .pane .rate { font-size: 12px; color: var(--muted); margin-top: 4px; white-space: pre-wrap; }
#g_multi .pane .rate.error { color: #b3261e; }
#g_aggregate { font-weight: 600; }
`;

/* The "streams" field: a whole number from 1 to 8. */
function streamCount() {
  const t = $("g_streams").value.trim(), n = Number(t);
  if (!/^\d+$/.test(t) || n < 1 || n > 8) throw new Error("streams: a whole number from 1 to 8");
  return n;
}

/* What the streams field will do, said under it. */
function streamsNote() {
  let n;
  try { n = streamCount(); } catch (e) { n = 0; }
  const greedy = +$("g_temperature").value === 0;
  $("g_streams_note").textContent = n === 1 ? "1: one generation, with its alternatives and attention."
    : n > 1 ? n + " generations of the prompt at once, seeds seed to seed + " + (n - 1) +
      (greedy ? "; temperature 0 is greedy: every stream writes the same tokens." : ".") +
      " Side by side, without the per-token alternatives and attention (one stream shows those)."
    : "streams: 1 to 8";
}

function rate(tokens, ms) { return ms > 0 ? (tokens * 1000 / ms).toFixed(1) : "-"; }

/* A pane's line: its first token's wait, then its tokens per second. */
function paneRate(st, now) {
  const n = st.steps.length, end = st.t_end || now;
  const first = st.t_first == null ? "no token yet" : "first token after " + st.t_first.toFixed(0) + " ms";
  const tail = n > 1 ? ", then " + rate(n - 1, end - st.t0 - st.t_first) + " tokens/s" : "";
  return n + " tokens, " + rate(n, end - st.t0) + " tokens/s (" + first + tail + ")" +
    (st.status ? "\n" + st.status : "");
}

/* The line for all streams: every token over the time from the click to the last. */
function drawAggregate() {
  const m = gv.multi, now = performance.now();
  const total = m.streams.reduce((a, st) => a + st.steps.length, 0);
  const last = m.streams.every((st) => st.t_end) ? Math.max(...m.streams.map((st) => st.t_end)) : now;
  m.aggregate = {tokens: total, ms: last - m.t0, tokens_per_s: total * 1000 / Math.max(last - m.t0, 1e-3)};
  $("g_aggregate").textContent = "all " + m.streams.length + " streams: " + total + " tokens in " +
    (last - m.t0).toFixed(0) + " ms, " + rate(total, last - m.t0) + " tokens/s together";
  for (const st of m.streams) {
    st.rateBox.textContent = paneRate(st, now);
    st.rateBox.className = "rate" + (st.error ? " error" : "");
  }
}

function streamPane(st, i) {
  const pane = Object.assign(document.createElement("div"), {className: "pane"});
  pane.dataset.stream = i;
  const h = document.createElement("h3"), stop = Object.assign(document.createElement("button"), {textContent: "Stop"});
  h.append("stream " + (i + 1) + ", seed " + st.seed, stop);
  stop.onclick = () => st.abort.abort();
  st.stopButton = stop;
  st.chipBox = Object.assign(document.createElement("div"), {className: "chips"});
  st.rateBox = Object.assign(document.createElement("div"), {className: "rate"});
  pane.append(h, st.chipBox, st.rateBox);
  return pane;
}

/* One stream's events: its prompt, then its tokens as they come. */
function onStreamEvent(st, ev) {
  const d = JSON.parse(ev.data);
  if (ev.event === "start") {
    st.chipBox.innerHTML = "";
    d.idx.forEach((id, i) => st.chipBox.appendChild(chip(d.tokens ? d.tokens[i] : String(id), "prompt",
                                                         "prompt, position " + i + ", id " + id)));
  } else if (ev.event === "token") {
    if (st.t_first == null) st.t_first = performance.now() - st.t0;
    st.steps.push({id: d.id, text: d.text, logprob: d.logprob});
    st.chipBox.appendChild(chip(d.text ?? String(d.id), "gen", "position " + d.position + ", id " + d.id));
    drawAggregate();
  } else if (ev.event === "done") st.done = d;
  else if (ev.event === "error") throw new Error(errorLine(d.error ? d.error.status : "", d.error));
}

async function runStream(st) {
  try {
    const r = await fetch("/model/gpt2", {method: "POST", signal: st.abort.signal, body: JSON.stringify(st.req),
                                          headers: {"Content-Type": "application/json", "Accept": "text/event-stream"}});
    if (!r.ok) { const e = await errorOf(r); throw new Error(errorLine(r.status, e)); }
    await readEvents(r, (ev) => onStreamEvent(st, ev));
    if (!st.done) throw new Error("the stream ended before its last event");
    st.status = "done";
  } catch (e) {
    if (e.name === "AbortError") st.status = "stopped after " + st.steps.length + " tokens; the others go on";
    else { st.error = true; st.status = String(e.message || e); }
  } finally {
    st.t_end = performance.now();
    st.stopButton.disabled = true;
    drawAggregate();
  }
}

/* N generations of req at once, seeds seed, seed + 1, ...: each its own stream. */
async function runStreams(req, n) {
  delete req.generate.attention; /* a step with attention rows leaves the batch */
  req.generate.logprobs = 0;
  $("g_request").textContent = pretty(req) + "\n(" + n + " of it at once, seeds " + req.generate.seed + " to " +
    (req.generate.seed + n - 1) + ")";
  showSingle(false);
  $("g_results").classList.remove("stale");
  const t0 = performance.now();
  const streams = Array.from({length: n}, (_, i) => ({
    seed: req.generate.seed + i, req: {...req, generate: {...req.generate, seed: req.generate.seed + i}},
    steps: [], t0, t_first: null, t_end: null, done: null, status: "", error: false, abort: new AbortController()}));
  gv.multi = {streams, t0, aggregate: null};
  const box = $("g_multi"), panes = Object.assign(document.createElement("div"), {className: "panes"});
  box.innerHTML = "<div id=g_aggregate></div>";
  streams.forEach((st, i) => panes.appendChild(streamPane(st, i)));
  box.appendChild(panes);
  drawAggregate();
  $("g_run").disabled = true;
  $("g_stop").disabled = false;
  gv.running = true;
  gv.abort = {abort: () => streams.forEach((st) => st.abort.abort())}; /* Stop: every stream */
  gstatus(n + " streams: the model is writing\u2026");
  await Promise.all(streams.map(runStream));
  const failed = streams.filter((st) => st.error).length;
  gv.running = false;
  $("g_run").disabled = false;
  $("g_stop").disabled = true;
  if (failed) { gv.errors++; return gstatus(failed + " of " + n + " streams failed: " + streams.find((st) => st.error).status, true); }
  gstatus($("g_aggregate").textContent);
  gv.renders++;
}

function startStreams() {
  const style = document.createElement("style");
  style.textContent = STREAMS_STYLE;
  document.head.appendChild(style);
  streamsNote();
}
