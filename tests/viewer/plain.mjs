// plain.mjs BASE OUTDIR - the viewer's model view (BASE/#model) in Debian's
// headless Chromium (playwright-core, found in $PLAYWRIGHT_DIR) on a server
// with no model and no tokenizer at all (--demo-model off): it must open on
// the seed sentence's GPT-2 ids without an error and say how to get text.
// Prints a JSON report for tests/test_viewer.c; a screenshot goes to OUTDIR.
import { launch, modelViewState, watch } from "./page.mjs";

const [base, outdir] = process.argv.slice(2);

const report = { console_errors: [], foreign_requests: [] };
const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page, base, report);
  await page.goto(base + "/#model");
  await page.waitForFunction(() => window.viewer && window.viewer.model.renders + window.viewer.model.errors > 0,
                             null, { timeout: 120000 });
  report.plain = await modelViewState(page);
  await page.screenshot({ path: outdir + "/model-plain-no-tokenizer.png" });
} catch (e) {
  report.exception = String(e && e.stack || e);
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report) + "\n");
