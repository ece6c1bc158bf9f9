/* main.js - the wiring: tabs, buttons, the first request (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Wiring =================================================================== */

function showTab(name) {
  for (const b of $("tabs").querySelectorAll("button")) b.classList.toggle("on", b.dataset.tab === name);
  for (const t of ["maps", "headview", "stages"]) $("view_" + t).hidden = t !== name;
}

async function start() {
  drawLegend();
  startInside();
  startModel();
  $("view_maps").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  $("view_stages").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  for (const id of ["view_maps", "view_stages"]) $(id).addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
  $("tabs").onclick = (e) => { if (e.target.dataset.tab) showTab(e.target.dataset.tab); };
  $("run").onclick = compute;
  $("random").onclick = randomInputs;
  $("big").onclick = () => { bigPreset(); compute(); };
  $("dl_png").onclick = () => download("png");
  $("dl_svg").onclick = () => download("svg");
  $("dl_json").onclick = () => download("json");
  $("tokens").oninput = () => { viewer.pad = new Set(); drawChips(); };
  $("example").onchange = () => { const e = viewer.examples[+$("example").value]; loadRequest(e.path, e.value); compute(); };
  $("endpoint").onchange = () => {
    const e = viewer.examples.find((x) => x.path === $("endpoint").value);
    if (e) { $("example").value = viewer.examples.indexOf(e); loadRequest(e.path, e.value); } else setModules($("endpoint").value);
  };
  $("module").onchange = () => {
    const m = $("module").value;
    const e = viewer.examples.find((x) => x.path === viewer.endpoint && (x.value.module || viewer.endpoints[x.path].modules[0]) === m);
    if (e) { $("example").value = viewer.examples.indexOf(e); loadRequest(e.path, e.value); return; }
    try { const r = JSON.parse($("request").value); r.module = m; $("request").value = pretty(r); } catch (_) { /* left as typed */ }
  };
  $("color_scale").onchange = () => { if (viewer.reply) compute(); };
  $("numbers").onchange = () => { if (viewer.reply) compute(); };
  try {
    await loadDocument();
  } catch (e) {
    return status("cannot read /openapi.json: " + e, true);
  }
  const first = viewer.examples[0];
  if (first) { loadRequest(first.path, first.value); await compute(); }
  viewer.ready = true;
}
start();
