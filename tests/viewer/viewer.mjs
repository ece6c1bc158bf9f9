// viewer.mjs BASE OUTDIR - drives the viewer page at BASE/ in Debian's
// headless Chromium (playwright-core, found in $PLAYWRIGHT_DIR) and prints a
// JSON report for tests/test_viewer.c, which checks it against the service's
// own numbers. Screenshots and the downloaded files go to OUTDIR.
import { writeFileSync } from "node:fs";
import { launch, menuFit, modelViewState, watch } from "./page.mjs";

const [base, outdir] = process.argv.slice(2);

const report = { console_errors: [], foreign_requests: [], requests: 0 };
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  watch(page, base, report);
  page.on("request", () => { report.requests++; });

  await page.goto(base + "/");
  await page.waitForFunction(() => window.viewer && window.viewer.ready && window.viewer.renders > 0, null, { timeout: 30000 });
  report.status = await page.textContent("#status");
  report.example = await page.$eval("#example", (s) => s.options[s.selectedIndex].textContent);
  report.tokens = await page.inputValue("#tokens");

  // every cell's centre pixel of every heat map
  report.maps = await page.$$eval("#view_maps canvas.heatmap", (cvs) => cvs.map((cv) => {
    const d = cv.dataset, ctx = cv.getContext("2d"), cell = +d.cell, cells = [];
    for (let i = 0; i < +d.rows; i++)
      for (let j = 0; j < +d.cols; j++) {
        const x = +d.x0 + j * cell + Math.floor(cell / 2), y = +d.y0 + i * cell + Math.floor(cell / 2);
        const p = ctx.getImageData(x, y, 1, 1).data;
        cells.push([i, j, p[0], p[1], p[2]]);
      }
    return { panel: +d.panel, rows: +d.rows, cols: +d.cols, cell, title: cv.previousSibling.textContent, cells };
  }));
  await page.screenshot({ path: outdir + "/viewer.png" });

  // hover: head 1, query 3, key 2
  const cv = (await page.$$("#view_maps canvas.heatmap"))[1];
  const box = await cv.boundingBox();
  const d = await cv.evaluate((c) => ({ ...c.dataset, w: c.width, h: c.height }));
  const sx = box.width / d.w, sy = box.height / d.h;
  await page.mouse.move(box.x + (+d.x0 + 2 * +d.cell + d.cell / 2) * sx, box.y + (+d.y0 + 3 * +d.cell + d.cell / 2) * sy);
  await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 });
  report.hover = { panel: 1, row: 3, col: 2, text: await page.textContent("#tooltip") };
  await page.screenshot({ path: outdir + "/viewer-hover.png" });

  // head view
  await page.click("button[data-tab=headview]");
  report.headview = await page.$$eval("#view_headview svg.headview g.head", (gs) => gs.map((g) => g.querySelectorAll("line").length));
  report.headview_labels = await page.$$eval("#view_headview svg.headview text", (ts) => ts.length);
  await page.screenshot({ path: outdir + "/viewer-headview.png" });
  await page.click("button[data-tab=stages]");
  report.stages = await page.$$eval("#view_stages canvas.heatmap", (cvs) => cvs.map((c) => c.dataset.map));
  // each stage's colours in words; the dropout mask's centre pixel (dropout 0 here)
  report.stage_notes = await page.$$eval("#view_stages .panel .range", (ns) => ns.map((n) => n.textContent));
  report.dropout_pixel = await page.$eval("#view_stages canvas[data-map=dropout_mask]", (cv) =>
    Array.from(cv.getContext("2d").getImageData(+cv.dataset.x0 + 2, +cv.dataset.y0 + 2, 1, 1).data.slice(0, 3)));
  await page.screenshot({ path: outdir + "/viewer-stages.png" });
  await page.click("button[data-tab=maps]");

  // the values written in the cells (the README's screenshot)
  let n0 = await page.evaluate(() => window.viewer.renders);
  await page.check("#numbers");
  await page.waitForFunction((n) => window.viewer.renders > n, n0, { timeout: 30000 });
  await page.screenshot({ path: outdir + "/viewer-values.png" });
  n0 = await page.evaluate(() => window.viewer.renders);
  await page.uncheck("#numbers");
  await page.waitForFunction((n) => window.viewer.renders > n, n0, { timeout: 30000 });

  // downloads
  for (const [button, file] of [["#dl_png", "download.png"], ["#dl_svg", "download.svg"], ["#dl_json", "download.json"]]) {
    const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 15000 }), page.click(button)]);
    await dl.saveAs(outdir + "/" + file);
  }

  // every example of api/examples/ draws (heat maps, head view, stages) without an error
  report.examples = [];
  const count = await page.$eval("#example", (s) => s.options.length);
  for (let i = 0; i < count; i++) {
    const n = await page.evaluate(() => window.viewer.renders);
    await page.selectOption("#example", String(i));
    await page.waitForFunction((n) => window.viewer.renders > n || document.getElementById("status").className === "error",
                               n, { timeout: 30000 });
    report.examples.push(await page.evaluate(() => ({
      name: document.querySelector("#example").selectedOptions[0].textContent,
      error: document.getElementById("status").className === "error" ? document.getElementById("status").textContent : null,
      panels: document.querySelectorAll("#view_maps canvas.heatmap").length,
      stages: document.querySelectorAll("#view_stages canvas.heatmap").length,
      lines: document.querySelectorAll("#view_headview line").length })));
  }

  // an error dims the results it leaves behind; the next drawing undims them
  const opacity = () => page.$eval("#results", (e) => getComputedStyle(e).opacity);
  await page.fill("#request", "{\"module\": ");
  let e0 = await page.evaluate(() => window.viewer.errors);
  await page.click("#run");
  await page.waitForFunction((n) => window.viewer.errors > n, e0, { timeout: 30000 });
  report.stale = { error: await opacity() };

  const settle = async (action, timeout = 60000) => {
    const n = await page.evaluate(() => window.viewer.renders);
    await action();
    await page.waitForFunction((n) => window.viewer.renders > n || document.getElementById("status").className === "error",
                               n, { timeout });
  };
  const shown = () => page.evaluate(() => {
    const c = document.querySelector("#view_maps canvas.heatmap"), req = JSON.parse(document.getElementById("request").value);
    return { status: document.getElementById("status").textContent, error: document.getElementById("status").className === "error",
             rows: c ? +c.dataset.rows : 0, cols: c ? +c.dataset.cols : 0, context_length: req.context_length,
             input_rows: Array.isArray(req.inputs) ? req.inputs[0].length : null };
  });

  // tokens, embeddings and context_length in step: the seed example with 7, then 54 tokens
  await settle(() => page.selectOption("#example", "0"));
  report.stale.after = await opacity();
  const seed = ["Your", "journey", "starts", "with", "one", "step"];
  report.sync = [];
  for (const T of [7, 54]) {
    await page.fill("#tokens", Array.from({ length: T }, (_, i) => seed[i] || "w" + i).join(" "));
    await settle(() => page.click("#run"));
    report.sync.push(await shown());
  }

  // the request as the curl command that sends it (run by the test), and the page's weights
  await page.click("#copy_curl");
  report.curl = { line: await page.textContent("#curl"),
                  weights: await page.evaluate(() => Array.from(window.viewer.weights.data)) };

  // the view is in the URL: a hash set, a hash followed, the back button
  const views = () => page.evaluate(() => ({ hash: location.hash, model: !document.getElementById("main_model").hidden,
                                             stages: !document.getElementById("view_stages").hidden }));
  await page.evaluate(() => { location.hash = "#stages"; });
  await page.waitForFunction(() => !document.getElementById("view_stages").hidden, null, { timeout: 5000 });
  report.hash = { stages: await views() };
  // the model view on this server (no --model): the demo model, its text as bytes
  const mcount = () => page.evaluate(() => window.viewer.model.renders + window.viewer.model.errors);
  await page.click("#modes button[data-mode=model]");
  await page.waitForFunction(() => window.viewer.model.renders + window.viewer.model.errors > 0, null, { timeout: 120000 });
  report.hash.model = await views();
  report.model_plain = await modelViewState(page);
  report.model_plain.menu = await menuFit(page, "m_model");
  await page.screenshot({ path: outdir + "/model-plain.png" });
  // the book's GPTModel built from a seed: its own config names
  await page.selectOption("#m_model", "@GPTModel");
  await page.fill("#m_n_layer", "2");
  await page.check("#m_qkv_bias");
  let m0 = await mcount();
  await page.click("#m_run");
  await page.waitForFunction((n) => window.viewer.model.renders + window.viewer.model.errors > n, m0, { timeout: 120000 });
  report.gptmodel = await page.evaluate(() => ({
    status: document.getElementById("m_status").textContent, error: document.getElementById("m_status").className === "error",
    summary: document.getElementById("m_summary").textContent,
    names: ["m_vocab_size", "m_block_size", "m_n_layer", "m_n_head", "m_n_embd"].map((id) => document.getElementById(id + "_name").textContent),
    thumbs: document.querySelectorAll("#m_grid button.thumb").length, request: JSON.parse(document.getElementById("m_request").textContent) }));
  await page.click("#m_copy_curl");
  report.gptmodel.curl = await page.textContent("#m_curl");
  await page.goBack();
  await page.waitForFunction(() => !document.getElementById("view_stages").hidden, null, { timeout: 5000 });
  report.hash.back = await views();
  await page.click("button[data-tab=maps]");

  // a GPT-2 layer at T = 1,024 with 12 heads
  const before = await page.evaluate(() => window.viewer.renders);
  await page.click("#big");
  await page.waitForFunction((n) => window.viewer.renders > n || document.getElementById("status").className === "error",
                             before, { timeout: 120000 });
  report.big = await page.evaluate(() => ({ ...window.viewer.timings, status: document.getElementById("status").textContent,
                                            panels: document.querySelectorAll("#view_maps canvas.heatmap").length,
                                            first: document.querySelector("#view_maps canvas.heatmap")?.dataset }));
  await page.screenshot({ path: outdir + "/viewer-gpt2.png" });
  // what the page says about it: the menu, the legend, a request box any client can send
  report.big_request = await page.evaluate(() => {
    const text = document.getElementById("request").value;
    let inputs = null;
    try { inputs = JSON.parse(text).inputs; } catch (_) { /* reported as null */ }
    return { example: document.querySelector("#example").selectedOptions[0].textContent,
             legend: document.getElementById("legend_max").textContent, colour: document.getElementById("color_scale").value,
             length: text.length, random: text.includes("random:"), shape: inputs && inputs.shape,
             base64: inputs && typeof inputs.base64 === "string" ? inputs.base64.length : 0 };
  });
  await page.click("#copy_curl");
  const big = await page.textContent("#curl");
  report.big_request.curl_head = big.slice(0, big.indexOf("\n"));
  report.big_request.curl_tail = big.slice(big.lastIndexOf("\n") + 1);

  // top-k and query rows on the long input
  await page.fill("#top_k", "8");
  await page.fill("#heads", "0 5");
  await page.fill("#row_start", "0");
  await page.fill("#row_stop", "64");
  const n2 = await page.evaluate(() => window.viewer.renders);
  await page.click("#run");
  await page.waitForFunction((n) => window.viewer.renders > n || document.getElementById("status").className === "error",
                             n2, { timeout: 60000 });
  report.big_topk = await page.evaluate(() => ({ status: document.getElementById("status").textContent,
                                                 panels: [...document.querySelectorAll("#view_maps canvas.heatmap")].map((c) => c.previousSibling.textContent),
                                                 lines: [...document.querySelectorAll("#view_headview svg.headview g.head")].map((g) => g.querySelectorAll("line").length) }));
  await page.screenshot({ path: outdir + "/viewer-topk.png" });

  // the header's "API document": the document rendered in the page, not its raw JSON
  await page.click("#api_link");
  await page.waitForFunction(() => window.viewer.api.drawn, null, { timeout: 30000 });
  report.api = await page.evaluate(() => ({ url: location.href, visible: !document.getElementById("main_api").hidden,
                                            endpoints: window.viewer.api.endpoints,
                                            listed: [...document.querySelectorAll("#api_doc details")].map((d) => d.dataset.endpoint),
                                            ops: Object.values(window.viewer.doc.paths).reduce((n, it) => n + Object.keys(it).length, 0) }));
  await page.click("#api_doc details[data-endpoint='POST /model/gpt2'] summary");
  report.api.gpt2_fields = await page.$$eval("#api_doc details[data-endpoint='POST /model/gpt2'] table tr td:first-child",
                                             (tds) => tds.map((t) => t.textContent));
  await page.screenshot({ path: outdir + "/viewer-api.png" });
} catch (e) {
  report.exception = String(e && e.stack || e);
} finally {
  await browser.close();
}
writeFileSync(outdir + "/report.json", JSON.stringify(report, null, 1));
process.stdout.write(JSON.stringify(report) + "\n");
