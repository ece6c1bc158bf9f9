// generate.mjs BASE OUTDIR - drives the viewer's generation view
// (BASE/#generate) in Debian's headless Chromium (playwright-core, found in
// $PLAYWRIGHT_DIR) against a server started with --model tiny=... and a
// tokenizer, and prints a JSON report for tests/test_viewer_generate.c,
// which checks it against the server's own whole replies. Screenshots go to
// OUTDIR.
import { resolve } from "node:path";
import { launch, watch } from "./page.mjs";

const [base, outdir] = process.argv.slice(2);

const report = { console_errors: [], foreign_requests: [] };
const browser = await launch();

// What the view shows: its chips, the open step's alternatives and attention canvas.
const state = () => {
  const gv = window.viewer.gen, cv = document.querySelector("#g_attn canvas");
  let attn = null;
  if (cv) { // each cell's centre pixel, row by row
    const { x0, y0, cell, cellh, rows, cols, rowfont } = cv.dataset, c = +cell, ch = +cellh, px = [];
    const d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
    for (let i = 0; i < +rows; i++)
      for (let j = 0; j < +cols; j++) {
        const k = 4 * ((+y0 + i * ch + (ch >> 1)) * cv.width + (+x0 + j * c + (c >> 1)));
        px.push([d[k], d[k + 1], d[k + 2]]);
      }
    // its row labels: the font and the height of a row (a label taller than its row overlaps the next)
    attn = { w: +cols, h: +rows, px, row_font: +rowfont, row_height: ch };
  }
  return {
    status: document.getElementById("g_status").textContent,
    error: document.getElementById("g_status").className === "error",
    prompt_chips: [...document.querySelectorAll("#g_text .chip.prompt")].map((c) => c.textContent),
    gen_chips: [...document.querySelectorAll("#g_text .chip.gen")].map((c) => c.textContent),
    steps: gv.steps.map((s) => ({ id: s.id, logprob: s.logprob, text: s.text })),
    alternatives: [...document.querySelectorAll("#g_alts tr")].map((tr) => [...tr.cells].map((c) => c.textContent)),
    chosen_row: [...document.querySelectorAll("#g_alts tr")].findIndex((tr) => tr.className === "chosen"),
    open: gv.open, attn, arrivals: gv.arrivals, done: !!gv.done,
    request: JSON.parse(document.getElementById("g_request").textContent || "null"),
  };
};

const setRange = (page, id, v) => page.$eval("#" + id, (el, v) => {
  el.value = String(v);
  el.dispatchEvent(new Event("input", { bubbles: true }));
}, v);

try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page, base, report);
  const finished = (n) => page.waitForFunction((n) => window.viewer.gen.renders + window.viewer.gen.errors > n
                                               || (!window.viewer.gen.running && /stopped/.test(document.getElementById("g_status").textContent)),
                                               n, { timeout: 120000 });
  const count = () => page.evaluate(() => window.viewer.gen.renders + window.viewer.gen.errors);

  await page.goto(base + "/#generate");
  await page.waitForFunction(() => window.viewer && window.viewer.ready && window.viewer.gen.started
                             && document.querySelectorAll("#g_model option").length > 1, null, { timeout: 30000 });
  report.visible = await page.evaluate(() => !document.getElementById("main_generate").hidden
                                       && document.getElementById("main_modules").hidden);
  report.models = await page.$$eval("#g_model option", (os) => os.map((o) => o.value));

  // the checkpoint, sampled: its tokens, then step 3 opened
  await page.selectOption("#g_model", "tiny");
  await page.fill("#g_prompt", "Hello");
  for (const [k, v] of [["g_temperature", 0.8], ["g_top_k", 0], ["g_top_p", 0.95], ["g_seed", 5], ["g_length", 10]])
    await setRange(page, k, v);
  report.slider_texts = await page.$$eval("#main_generate .val", (vs) => vs.map((v) => v.textContent));
  let n = await count();
  await page.click("#g_run");
  await finished(n);
  report.sampled = await page.evaluate(state);
  await page.click("#g_text .chip.gen[data-k='3']");
  report.step3 = await page.evaluate(state);
  const box = await page.$eval("#g_attn canvas", (cv) => ({ x: +cv.dataset.x0 + 2, y: +cv.dataset.y0 + 2 }));
  await page.hover("#g_attn canvas", { position: box });
  report.tooltip = await page.$eval("#tooltip", (t) => t.textContent);
  await page.screenshot({ path: outdir + "/generate.png" });

  // the seed-built model, 100 tokens: they arrive one by one
  await page.selectOption("#g_model", "");
  await setRange(page, "g_length", 100);
  n = await count();
  await page.click("#g_run");
  await finished(n);
  report.long = await page.evaluate(state);
  report.long.steps = report.long.steps.length;
  // a late step: 16 rows of heads over about 45 positions
  await page.click("#g_text .chip.gen[data-k='40']");
  const late = await page.evaluate(state);
  report.long.attn = { row_font: late.attn.row_font, row_height: late.attn.row_height, cols: late.attn.w,
                       rows: late.attn.h };

  // Stop after a few tokens of 200
  // (clicked from inside the page as the fifth token is drawn: the tiny model
  // writes 200 tokens in well under a second, faster than a poll from here)
  await setRange(page, "g_length", 200);
  const stopClicked = page.evaluate(() => new Promise((resolve) => {
    const stop = document.getElementById("g_stop");
    const watch = new MutationObserver(() => {
      if (window.viewer.gen.steps.length < 5 || stop.disabled) return;
      watch.disconnect();
      stop.click();
      resolve();
    });
    watch.observe(document.getElementById("g_text"), { childList: true, subtree: true });
  }));
  await page.click("#g_run");
  await stopClicked;
  await page.waitForFunction(() => !window.viewer.gen.running, null, { timeout: 60000 });
  report.stopped = { steps: await page.evaluate(() => window.viewer.gen.steps.length),
                     status: await page.$eval("#g_status", (s) => s.textContent) };

  // token ids that are no numbers: an error, the tokens of the run before
  // kept but dimmed; a run after it undims them
  const dimmed = () => page.evaluate(() => ({
    error: document.getElementById("g_status").className === "error",
    status: document.getElementById("g_status").textContent,
    opacity: getComputedStyle(document.getElementById("g_results")).opacity,
    chips: document.querySelectorAll("#g_text .chip.gen").length }));
  await page.check("#g_ids");
  await page.fill("#g_prompt", "15496 x");
  await page.click("#g_run");
  report.bad_ids = await dimmed();
  await page.fill("#g_prompt", "15496");
  await setRange(page, "g_length", 3);
  n = await count();
  await page.click("#g_run");
  await finished(n);
  report.after_bad = await dimmed();

  // three streams of the checkpoint, sampled, seeds 5, 6, 7: side by side,
  // each pane's tokens and the line for all of them
  await page.uncheck("#g_ids");
  await page.selectOption("#g_model", "tiny");
  await page.fill("#g_prompt", "Hello");
  for (const [k, v] of [["g_temperature", 0], ["g_top_k", 0], ["g_top_p", 0.95], ["g_seed", 5], ["g_length", 10]])
    await setRange(page, k, v);
  await page.fill("#g_streams", "3");
  report.greedy_note = await page.$eval("#g_streams_note", (e) => e.textContent);
  await setRange(page, "g_temperature", 0.8);
  n = await count();
  await page.click("#g_run");
  await finished(n);
  const panes = () => page.evaluate(() => ({
    status: document.getElementById("g_status").textContent,
    error: document.getElementById("g_status").className === "error",
    single_hidden: document.getElementById("g_text").hidden && !document.getElementById("g_multi").hidden,
    aggregate: (document.getElementById("g_aggregate") || {}).textContent || null,
    panes: [...document.querySelectorAll("#g_multi .pane")].map((p, i) => ({
      title: p.querySelector("h3").textContent,
      gen_chips: [...p.querySelectorAll(".chip.gen")].map((c) => c.textContent),
      prompt_chips: [...p.querySelectorAll(".chip.prompt")].map((c) => c.textContent),
      rate: p.querySelector(".rate").textContent,
      seed: window.viewer.gen.multi.streams[i].seed,
      ids: window.viewer.gen.multi.streams[i].steps.map((s) => s.id),
      text: window.viewer.gen.multi.streams[i].steps.map((s) => s.text).join("") })) }));
  report.streams = await panes();
  await page.screenshot({ path: outdir + "/generate_streams.png" });

  // the seed-built model, three streams of 200 tokens: the second stopped
  // after its fifth token (from inside the page, as above), the others go on
  await page.selectOption("#g_model", "");
  await setRange(page, "g_length", 200);
  const stopOne = page.evaluate(() => new Promise((resolve) => {
    const watch = new MutationObserver(() => {
      const m = window.viewer.gen.multi, st = m && m.streams[1];
      if (!st || !st.stopButton || st.steps.length < 5 || st.stopButton.disabled || !window.viewer.gen.running) return;
      watch.disconnect();
      st.stopButton.click();
      resolve();
    });
    watch.observe(document.getElementById("g_multi"), { childList: true, subtree: true });
  }));
  n = await count();
  await page.click("#g_run");
  await stopOne;
  await finished(n);
  report.stop_one = await page.evaluate(() => window.viewer.gen.multi.streams.map((st) => ({
    steps: st.steps.length, status: st.status })));
} catch (e) {
  report.exception = String(e && e.stack ? e.stack : e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(report));
