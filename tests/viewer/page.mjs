// page.mjs - what every viewer script shares: Debian's headless Chromium
// through playwright-core (found in $PLAYWRIGHT_DIR), and the watch on a
// page that fills a report's console_errors and foreign_requests (and its
// http_errors, when the report has that list, with the 4xx lines Chromium
// logs for a refused fetch, which the scripts make on purpose).
import { createRequire } from "node:module";
import { resolve } from "node:path";

export function launch() {
  const require = createRequire(resolve(process.env.PLAYWRIGHT_DIR) + "/");
  const { chromium } = require("playwright-core");
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

export function watch(page, base, report) {
  const origin = new URL(base).origin;
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const refused = report.http_errors && /^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text());
    (refused ? report.http_errors : report.console_errors).push(m.text());
  });
  page.on("pageerror", (e) => report.console_errors.push("pageerror: " + e.message));
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.protocol !== "blob:" && u.protocol !== "data:" && u.origin !== origin) report.foreign_requests.push(r.url());
  });
}

// The options of a menu against its room: each option's text width in the
// menu's font, and the width left beside the menu's arrow.
export function menuFit(page, id) {
  return page.evaluate((id) => {
    const s = document.getElementById(id), cs = getComputedStyle(s);
    const c = document.createElement("canvas").getContext("2d");
    c.font = cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily;
    return [...s.options].map((o) => ({ text: o.textContent, width: c.measureText(o.textContent).width,
                                        room: s.clientWidth - 30 }));
  }, id);
}

// What the model view shows once it has drawn (or refused) its first
// request: the status line, whether it is an error, the view's error count,
// whether the input is token ids, the model chosen and how many there are,
// the token chips, the note under the text, the width of the grid's note
// and the number of thumbnails.
export function modelViewState(page) {
  return page.evaluate(() => ({
    status: document.getElementById("m_status").textContent, error: document.getElementById("m_status").className === "error",
    errors: window.viewer.model.errors, ids: document.getElementById("m_input_idx").checked,
    model: document.getElementById("m_model").value,
    info: document.getElementById("m_model_info").hidden ? null : document.getElementById("m_model_info").textContent,
    models: document.querySelectorAll("#m_model option").length,
    tokens: [...document.querySelectorAll("#m_tokens .chip")].map((c) => c.textContent),
    note: document.getElementById("m_input_note").textContent,
    grid_note_width: document.getElementById("m_grid_note").getBoundingClientRect().width,
    thumbs: document.querySelectorAll("#m_grid button.thumb").length }));
}
