// encoder.mjs BASE OUTDIR - drives the model view (BASE/#model) on an
// encoder in Debian's headless Chromium (playwright-core, found in
// $PLAYWRIGHT_DIR) against a server started with --model bert=DIR (2 layers
// x 4 heads) and --model bert512=DIR (12 x 8, 512 positions), and prints a
// JSON report for tests/test_viewer_encoder.c, which sends the page's own
// requests again and checks what the page drew against the service's
// numbers: a sentence pair and its filter, the neuron view (with pixels of
// its canvas), the fill-mask box, and a 512-token input one head at a time.
// Screenshots go to OUTDIR.
import { launch, watch } from "./page.mjs";

const [base, outdir] = process.argv.slice(2);
const report = { console_errors: [], http_errors: [], foreign_requests: [] };
const browser = await launch();

// The model view now: the request sent, the open head's block, the grid.
const state = () => {
  const mv = window.viewer.model, ctx = mv.ctx, m = ctx && ctx.m, p = mv.open ? mv.open.p : 0;
  return {
    status: document.getElementById("m_status").textContent,
    error: document.getElementById("m_status").className === "error",
    tab: document.getElementById("model_tab").textContent,
    summary: document.getElementById("m_summary").textContent,
    pair_visible: !document.getElementById("m_pair").hidden,
    fill_visible: !document.getElementById("m_fill").hidden,
    pairbar_visible: !document.getElementById("m_pairbar").hidden,
    filters: [...document.querySelectorAll("#m_filter option")].map((o) => o.textContent),
    tokens: [...document.querySelectorAll("#m_tokens .chip")].map((c) => c.textContent),
    sentb: [...document.querySelectorAll("#m_tokens .chip")].map((c) => c.classList.contains("sentb")),
    thumbs: document.querySelectorAll("#m_grid button.thumb").length,
    grid_note: document.getElementById("m_grid_note").textContent,
    req: ctx ? ctx.req : null,
    T: ctx ? ctx.T : 0, b_start: ctx ? ctx.bStart : 0, filter: ctx ? ctx.filter : null,
    open: mv.open, r0: ctx ? ctx.r0 : 0, c0: ctx ? ctx.c0 : 0, R: m ? m.R : 0, C: m ? m.C : 0,
    detail: (() => { const d = document.querySelector("#m_detail canvas.heatmap");
                     return d ? { rows: +d.dataset.rows, cols: +d.dataset.cols } : null; })(),
    // the open head's block as drawn (a 512 x 512 head: its row 100 only)
    values: m && m.R * m.C <= 4096 ? Array.from(m.data.subarray(p * m.R * m.C, (p + 1) * m.R * m.C)) : null,
    row100: m && m.R > 100 ? Array.from(m.data.subarray((p * m.R + 100) * m.C, (p * m.R + 101) * m.C)) : null,
    timings: mv.timings, one_head: mv.oneHead,
  };
};

// The neuron view: its request, the numbers drawn, and the colour of the
// canvas's pixels at the q cells and at some k and q x k cells.
const neuronState = () => {
  const n = window.viewer.model.neuron, cv = document.querySelector("#nv_view canvas");
  if (!n || !n.layout || !cv) return { error: n ? n.error : "no neuron view" };
  const L = n.layout, c = cv.getContext("2d");
  const px = (x, y) => Array.from(c.getImageData(Math.floor(x), Math.floor(y), 1, 1).data.slice(0, 3));
  const cells = [];
  for (let d = 0; d < L.D; d++) cells.push({ part: "q", j: -1, d, rgb: px(L.xk + d * L.cw + L.cw / 2, L.qy + 7) });
  for (let j = 0; j < L.T; j += Math.max(1, Math.floor(L.T / 7)))
    for (let d = 0; d < L.D; d += 3) {
      cells.push({ part: "k", j, d, rgb: px(L.xk + d * L.cw + L.cw / 2, L.top + j * L.rh + L.rh / 2) });
      cells.push({ part: "q_times_k", j, d, rgb: px(L.xp + d * L.cw + L.cw / 2, L.top + j * L.rh + L.rh / 2) });
    }
  return { req: n.req, view: n.view, layout: L, cells, note: document.getElementById("nv_note").textContent,
           menus: ["nv_layer", "nv_head", "nv_query"].map((id) => document.getElementById(id).options.length) };
};

try {
  const context = await browser.newContext({ viewport: { width: 1500, height: 1100 } });
  const page = await context.newPage();
  watch(page, base, report);
  const count = () => page.evaluate(() => window.viewer.model.renders + window.viewer.model.errors);
  const settled = (n) => page.waitForFunction((n) => window.viewer.model.renders + window.viewer.model.errors > n,
                                              n, { timeout: 60000 });
  const nvRuns = () => page.evaluate(() => (window.viewer.model.neuron ? window.viewer.model.neuron.runs : 0));
  const nvDone = (n) => page.waitForFunction((n) => window.viewer.model.neuron && window.viewer.model.neuron.runs > n,
                                             n, { timeout: 60000 });
  const run = async () => { const n = await count(); await page.click("#m_run"); await settled(n); };

  // 1. the view opens on the encoder: its family in the tab, the pair and fill-mask inputs shown
  // (the tab says the family from the page's start, before the model view is opened)
  await page.goto(base + "/");
  await page.waitForFunction(() => window.viewer && window.viewer.ready, null, { timeout: 30000 });
  await page.waitForFunction(() => document.getElementById("model_tab").textContent !== "Model view", null, { timeout: 10000 });
  report.tab_at_start = await page.textContent("#model_tab");
  await page.click("#modes button[data-mode=model]");
  await settled(0);
  report.opened = await page.evaluate(state);

  // 2. a sentence pair: every head, two-way, B's tokens marked, the filter offered
  await page.fill("#m_text", "the cat sat .");
  await page.fill("#m_text_b", "it was tired .");
  await run();
  report.pair = await page.evaluate(state);
  report.pair_neuron = await page.evaluate(neuronState);

  // 3. the filter A->B: the open head's block of queries in A and keys in B
  await page.selectOption("#m_filter", "AB");
  await page.waitForFunction(() => window.viewer.model.ctx.filter === "AB");
  report.ab = await page.evaluate(state);
  await page.selectOption("#m_filter", "BA");
  report.ba = await page.evaluate(state);
  // a click on layer 1, head 2: that head opens and the neuron view follows it
  let n = await nvRuns();
  await page.click('#m_grid button.thumb[data-layer="1"][data-head="2"]');
  await nvDone(n);
  report.clicked = await page.evaluate(state);

  // 4. the neuron view of query 3 in that head
  n = await nvRuns();
  await page.selectOption("#nv_query", "3");
  await nvDone(n);
  report.neuron = await page.evaluate(neuronState);
  await page.screenshot({ path: outdir + "/encoder-pair.png", fullPage: true });

  // 5. fill-mask: each [MASK]'s top 3
  await page.fill("#fm_text", "the cat [MASK] . it was [MASK] .");
  await page.fill("#fm_k", "3");
  await page.click("#fm_run");
  await page.waitForFunction(() => window.viewer.model.fill && window.viewer.model.fill.runs > 0, null, { timeout: 60000 });
  report.fill = await page.evaluate(() => ({ ...window.viewer.model.fill,
    rows: [...document.querySelectorAll("#fm_out tr[data-id]")].map((r) => [+r.dataset.id, +r.dataset.prob, r.cells[0].textContent]) }));

  // 6. 512 tokens through 12 x 8 heads: one head at a time, then another picked
  await page.selectOption("#m_model", "bert512");
  await page.fill("#m_text_b", "");
  const words = ["the", "cat", "sat", "it", "was", "tired", "."];
  await page.fill("#m_text", Array.from({ length: 510 }, (_, i) => words[(i * 5 + (i >> 3)) % 7]).join(" "));
  await run();
  report.long = await page.evaluate(state);
  n = await count();
  await page.selectOption("#nv_head", "5");
  await settled(n);
  n = await count();
  await page.selectOption("#nv_layer", "7");
  await settled(n);
  report.picked = await page.evaluate(state);
  report.picked_neuron = await page.evaluate(neuronState);
  report.picked_neuron.cells = null;
  await page.screenshot({ path: outdir + "/encoder-512.png" });
} catch (e) {
  report.exception = String(e && e.stack || e);
}
await browser.close();
console.log(JSON.stringify(report));
