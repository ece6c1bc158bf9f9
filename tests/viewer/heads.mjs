// heads.mjs BASE OUTDIR - drives the viewer's "What each head does" view
// (BASE/#heads, server/static/analysis.js) in Debian's headless Chromium
// (playwright-core, found in $PLAYWRIGHT_DIR) and prints a JSON report for
// tests/test_viewer_analysis.c, which sends the page's own requests again
// and checks what the page shows against the service's numbers.
// Screenshots go to OUTDIR.
import { launch, watch } from "./page.mjs";

const [base, outdir] = process.argv.slice(2);
const report = { console_errors: [], http_errors: [], foreign_requests: [] };
const browser = await launch();

// What the view shows now: each grid's cells (score, layer, head, the value
// the cell was drawn from, its text), the ranking's rows, the rollout.
const state = () => {
  const hv = window.viewer.heads;
  return {
    status: document.getElementById("h_status").textContent,
    error: document.getElementById("h_status").className === "error",
    model: hv.model ? hv.model.name : null,
    names: hv.names,
    text: document.getElementById("h_text").value,
    grids: [...document.querySelectorAll("#h_grids .hgrid")].map((g) => g.dataset.score),
    cells: [...document.querySelectorAll("#h_grids button.hcell")].map((b) =>
      [b.dataset.score, +b.dataset.layer, +b.dataset.head, +b.dataset.value, b.textContent]),
    on: [...document.querySelectorAll("#h_grids button.hcell.on")].map((b) => [+b.dataset.layer, +b.dataset.head]),
    rank: [...document.querySelectorAll("#h_rank tr")].slice(1).map((r) => [+r.dataset.layer, +r.dataset.head]),
    opened: hv.opened,
    head_canvas: !!document.querySelector("#h_head canvas"),
    rollout_layer: hv.rolloutLayer,
    rollout_canvas: !!document.querySelector("#h_rollout canvas"),
    slider_max: +document.getElementById("h_layer").max,
    visible: !document.getElementById("main_heads").hidden,
    sent: hv.sent,
  };
};

try {
  const context = await browser.newContext({ viewport: { width: 1500, height: 1200 } });
  const page = await context.newPage();
  watch(page, base, report);
  const done = (key, n) => page.waitForFunction(([k, n]) => window.viewer.heads[k] + window.viewer.heads.errors > n,
                                                [key, n], { timeout: 120000 });
  const count = (key) => page.evaluate((k) => window.viewer.heads[k] + window.viewer.heads.errors, key);

  // 1. the view opens on the server's first model with its repeated text
  await page.goto(base + "/#heads");
  await done("runs", 0);
  report.first = await page.evaluate(state);
  await page.screenshot({ path: outdir + "/heads.png", fullPage: true });

  // 2. a click on the previous_token grid's largest cell opens that head's map
  const best = await page.evaluate(() => {
    const cells = [...document.querySelectorAll('#h_grids button.hcell[data-score="previous_token"]')];
    cells.sort((a, b) => +b.dataset.value - +a.dataset.value);
    return [+cells[0].dataset.layer, +cells[0].dataset.head];
  });
  let n = await count("opens");
  await page.click(`#h_grids button.hcell[data-score="previous_token"][data-layer="${best[0]}"][data-head="${best[1]}"]`);
  await done("opens", n);
  report.opened = await page.evaluate(state);
  report.clicked = best;

  // 3. the slider to layer 0: the first layer's own mixing
  await page.evaluate(() => {
    const s = document.getElementById("h_layer");
    s.value = "0";
    s.dispatchEvent(new Event("input"));
  });
  report.layer0 = await page.evaluate(state);

  // 4. another mode and back: the view hides and shows again, its results kept
  await page.goto(base + "/#inside");
  report.hidden = await page.evaluate(state);
  await page.goto(base + "/#heads");
  report.back = await page.evaluate(state);
} catch (e) {
  report.exception = String(e && e.stack || e);
}
await browser.close();
console.log(JSON.stringify(report));
