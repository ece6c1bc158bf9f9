// model.mjs BASE OUTDIR - drives the viewer's GPT-2 model view (BASE/#model)
// in Debian's headless Chromium (playwright-core, found in $PLAYWRIGHT_DIR)
// against a server started with --tokenizer and --model, and prints a JSON
// report for tests/test_viewer.c, which checks it against the service's own
// numbers. Screenshots go to OUTDIR.
import { writeFileSync } from "node:fs";
import { launch, menuFit, watch } from "./page.mjs";

const [base, outdir] = process.argv.slice(2);

const report = { console_errors: [], http_errors: [], foreign_requests: [] };
const browser = await launch();

// What the page shows now: status, grid, tokens, the open head.
const state = () => {
  const st = document.getElementById("m_status");
  const mv = window.viewer.model, det = document.querySelector("#m_detail canvas.heatmap");
  return {
    status: st.textContent, error: st.className === "error",
    summary: document.getElementById("m_summary").textContent,
    tokens: [...document.querySelectorAll("#m_tokens .chip")].map((c) => c.textContent),
    thumbs: document.querySelectorAll("#m_grid button.thumb").length,
    labels: [...document.querySelectorAll("#m_grid .lab")].map((l) => l.textContent),
    bad: [...document.querySelectorAll("#main_model .bad")].map((e) => e.id),
    stale: document.getElementById("m_view").classList.contains("stale"),
    detail: det ? { title: det.previousSibling.textContent, rows: +det.dataset.rows, cols: +det.dataset.cols } : null,
    // the open head's values as the page holds them (null: not among the top-k)
    values: mv.ctx && mv.open ? Array.from(mv.ctx.m.data.subarray(mv.open.p * mv.ctx.m.R * mv.ctx.m.C,
                                                                  (mv.open.p + 1) * mv.ctx.m.R * mv.ctx.m.C),
                                           (v) => (Number.isNaN(v) ? null : v)) : null,
    timings: mv.timings,
  };
};

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  // Chromium logs a refused fetch as a console error: those are kept apart (the test makes one)
  watch(page, base, report);
  const settled = (n) => page.waitForFunction((n) => window.viewer.model.renders + window.viewer.model.errors > n,
                                              n, { timeout: 120000 });
  const count = () => page.evaluate(() => window.viewer.model.renders + window.viewer.model.errors);
  const run = async () => { const n = await count(); await page.click("#m_run"); await settled(n); return page.evaluate(state); };

  // the modules view first, then its tab: the model view opens on the first
  // model the server loaded, as the other views do; then the seed-built model
  // on the seed sentence
  await page.goto(base + "/");
  await page.waitForFunction(() => window.viewer && window.viewer.ready, null, { timeout: 30000 });
  await page.click("#modes button[data-mode=model]");
  await settled(0);
  report.models = await page.$$eval("#m_model option", (os) => os.map((o) => o.value));
  report.opened = await page.evaluate(state);
  report.opened.model = await page.inputValue("#m_model");
  report.opened.tab = await page.textContent("#model_tab");
  // the tab names the family of the model chosen
  await page.selectOption("#m_model", "@GPTModel");
  report.tab_gptmodel = await page.textContent("#model_tab");
  await page.selectOption("#m_model", "");
  report.tab_seed = await page.textContent("#model_tab");
  report.first = await run();
  // every thumbnail's pixels (6 x 6 here: one pixel per weight)
  report.first_thumbs = await page.$$eval("#m_grid button.thumb", (bs) => bs.map((b) => {
    const cv = b.querySelector("canvas"), d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
    const px = [];
    for (let k = 0; k < cv.width * cv.height; k++) px.push([d[4 * k], d[4 * k + 1], d[4 * k + 2]]);
    return { layer: +b.dataset.layer, head: +b.dataset.head, w: cv.width, h: cv.height, px };
  }));
  await page.screenshot({ path: outdir + "/model.png" });

  // layer 3, head 5 large: every cell's centre pixel, and the value on hover (query 4, key 1)
  await page.click("#m_grid button.thumb[data-layer='3'][data-head='5']");
  report.detail = await page.$eval("#m_detail canvas.heatmap", (cv) => {
    const d = cv.dataset, ctx = cv.getContext("2d"), cell = +d.cell, cells = [];
    for (let i = 0; i < +d.rows; i++)
      for (let j = 0; j < +d.cols; j++) {
        const p = ctx.getImageData(+d.x0 + j * cell + Math.floor(cell / 2), +d.y0 + i * cell + Math.floor(cell / 2), 1, 1).data;
        cells.push([i, j, p[0], p[1], p[2]]);
      }
    return { title: cv.previousSibling.textContent, rows: +d.rows, cols: +d.cols, cells };
  });
  const cv = await page.$("#m_detail canvas.heatmap");
  const box = await cv.boundingBox();
  const d = await cv.evaluate((c) => ({ ...c.dataset, w: c.width, h: c.height }));
  await page.mouse.move(box.x + (+d.x0 + 1 * +d.cell + d.cell / 2) * box.width / d.w,
                        box.y + (+d.y0 + 4 * +d.cell + d.cell / 2) * box.height / d.h);
  await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 });
  report.hover = await page.textContent("#tooltip");
  await page.screenshot({ path: outdir + "/model-head.png" });

  // the same maps through every other reply format
  report.formats = {};
  for (const [format, half] of [["base64", false], ["base64", true], ["flat", false], ["nested", false], ["safetensors", true]]) {
    await page.selectOption("#m_format", format);
    await page.setChecked("#m_float16", half);
    report.formats[format + (half ? "16" : "")] = await run();
  }
  await page.selectOption("#m_format", "safetensors");
  await page.setChecked("#m_float16", false);

  // selection: layers 1 and 3, heads 0 and 5, query rows 2..5, top-2; the open head stays open
  await page.fill("#m_layers", "1 3");
  await page.fill("#m_heads", "0, 5");
  await page.fill("#m_row_start", "2");
  await page.fill("#m_row_stop", "5");
  await page.fill("#m_top_k", "2");
  report.selection = await run();
  await page.screenshot({ path: outdir + "/model-selection.png" });
  for (const id of ["#m_layers", "#m_heads", "#m_row_start", "#m_row_stop", "#m_top_k"]) await page.fill(id, "");

  // a checkpoint loaded with --model, on token ids
  await page.selectOption("#m_model", "tiny");
  report.tiny_info = await page.textContent("#m_model_info");
  await page.check("#m_input_idx");
  await page.fill("#m_text", "1 2 3 4 5");
  report.tiny = await run();
  await page.screenshot({ path: outdir + "/model-tiny.png" });

  // a model folder on text: its own tokenizer, no tokenizer field
  await page.selectOption("#m_model", "folder");
  await page.check("#m_input_text");
  await page.fill("#m_text", "the cat to");
  report.folder = await run();

  // refusals: GPT-2's tokens are not below the checkpoint's vocab_size (61); ids that are not numbers
  await page.selectOption("#m_model", "tiny");
  await page.check("#m_input_text");
  await page.fill("#m_text", "Your journey starts with one step");
  report.refused = await run();
  await page.screenshot({ path: outdir + "/model-error.png" });
  await page.check("#m_input_idx");
  await page.fill("#m_text", "1 two 3");
  report.bad_ids = await run();

  // 64 tokens through 12 layers x 12 heads
  await page.selectOption("#m_model", "");
  await page.fill("#m_text", Array.from({ length: 64 }, (_, i) => 100 + 37 * i).join(" "));
  report.big = {};
  for (const format of ["safetensors", "base64", "nested"]) {
    await page.selectOption("#m_format", format);
    const s = await run();
    report.big[format] = { status: s.status, error: s.error, thumbs: s.thumbs, detail: s.detail, timings: s.timings };
  }
  await page.screenshot({ path: outdir + "/model-t64.png" });

  // the model menus of every view hold their names whole; the inside view on
  // the first model (GPT-2's tokenizer): every next token by its text
  report.menus = { model: await menuFit(page, "m_model") };
  await page.click("#modes button[data-mode=generate]");
  await page.waitForFunction(() => document.querySelectorAll("#g_model option").length > 1, null, { timeout: 30000 });
  report.menus.generate = await menuFit(page, "g_model");
  await page.click("#modes button[data-mode=inside]");
  await page.waitForFunction(() => window.viewer.inside.runs + window.viewer.inside.errors > 0, null, { timeout: 120000 });
  report.menus.inside = await menuFit(page, "i_model");
  report.inside = await page.evaluate(() => ({ model: document.getElementById("i_model").value,
                                               status: document.getElementById("i_status").textContent,
                                               error: document.getElementById("i_status").className === "error",
                                               next: window.viewer.inside.next,
                                               shown: [...document.querySelectorAll("#i_next tr td:first-child")].map((t) => t.textContent) }));
  await page.screenshot({ path: outdir + "/inside-gpt2.png", fullPage: true });
} catch (e) {
  report.exception = String(e && e.stack || e);
} finally {
  await browser.close();
}
writeFileSync(outdir + "/model-report.json", JSON.stringify(report, null, 1));
process.stdout.write(JSON.stringify(report) + "\n");
