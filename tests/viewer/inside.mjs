// inside.mjs BASE OUTDIR - drives the viewer's "Inside the model" view
// (BASE/#inside) in Debian's headless Chromium (playwright-core, found in
// $PLAYWRIGHT_DIR) and prints a JSON report for tests/test_viewer_inside.c,
// which sends the page's own requests again and checks what the page shows
// against the service's numbers. Screenshots go to OUTDIR.

const [base, outdir] = process.argv.slice(2);

const report = { console_errors: [], http_errors: [], foreign_requests: [] };
const browser = await launch();

// What the view shows now.
import { launch, watch } from "./page.mjs";
const state = () => {
  const iv = window.viewer.inside;
  return {
    status: document.getElementById("i_status").textContent,
    error: document.getElementById("i_status").className === "error",
    model: iv.model ? iv.model.name : null,
    text: document.getElementById("i_text").value,
    heads: document.querySelectorAll("#i_heads button.head").length,
    on: [...document.querySelectorAll("#i_heads button.head.on")].map((b) => [+b.dataset.layer, +b.dataset.head]),
    next: iv.next,
    lens: iv.lens,
    lens_cells: document.querySelectorAll("#i_lens td").length,
    patch: iv.patch,
    patch_canvas: !!document.querySelector("#i_patch canvas"),
    activation: iv.activation,
    act_canvases: document.querySelectorAll("#i_act canvas").length,
    // the first activation panel's axes (label font sizes, 0: none) and the legend
    act_axes: (() => { const c = document.querySelector("#i_act canvas");
                       return c ? { rows: +c.dataset.rowfont, cols: +c.dataset.colfont } : null; })(),
    act_legend: document.getElementById("i_act_legend").textContent,
    act_notes: [...document.querySelectorAll("#i_act .range")].map((n) => n.textContent),
    token_a: document.getElementById("i_a").value,
    opacity: getComputedStyle(document.getElementById("i_results")).opacity,
    sent: iv.sent,
  };
};

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
  const page = await context.newPage();
  watch(page, base, report);
  const done = (key, n) => page.waitForFunction(([k, n]) => window.viewer.inside[k] + window.viewer.inside.errors > n,
                                                [key, n], { timeout: 120000 });
  const count = (key) => page.evaluate((k) => window.viewer.inside[k] + window.viewer.inside.errors, key);

  // 1. the view opens on the server's first model and runs its sentences
  await page.goto(base + "/#inside");
  await done("runs", 0);
  report.first = await page.evaluate(state);
  await page.screenshot({ path: outdir + "/inside.png", fullPage: true });

  // 2. a click knocks out the last layer's last head
  const heads = await page.$$("#i_heads button.head");
  let n = await count("ablations");
  await heads[heads.length - 1].click();
  await done("ablations", n);
  report.ablated = await page.evaluate(state);

  // 3. another activation: the last block's hook_z, and ln_final's
  n = await count("runs");
  await page.evaluate(() => {
    document.getElementById("i_hook").value = "attn.hook_z";
    const l = document.getElementById("i_layer");
    l.value = l.options[l.options.length - 1].value;
    l.dispatchEvent(new Event("change"));
  });
  await done("runs", n);
  report.hook_z = await page.evaluate(state);

  // 4. a corrupted text of another length: an error with the field, then back
  n = await count("runs");
  const corrupted = await page.inputValue("#i_corrupted");
  await page.fill("#i_corrupted", corrupted + "x");
  await page.click("#i_run");
  await done("runs", n);
  report.mismatch = await page.evaluate(state);
  await page.fill("#i_corrupted", corrupted);
  n = await count("runs");
  await page.click("#i_run");
  await done("runs", n);
  report.again = await page.evaluate(state);
} catch (e) {
  report.exception = String(e && e.stack || e);
}
await browser.close();
console.log(JSON.stringify(report));
