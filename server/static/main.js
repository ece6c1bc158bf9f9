/* main.js - the wiring: tabs, buttons, the first request (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Wiring =================================================================== */

function showTab(name) {
  for (const b of $("tabs").querySelectorAll("button")) b.classList.toggle("on", b.dataset.tab === name);
  for (const t of ["maps", "headview", "stages"]) $("view_" + t).hidden = t !== name;
}

/* The view is in the URL: #model, #generate, #inside, #heads, #api (the API
 * document), #headview, #stages, or #modules (the heat maps); the back
 * button and a link to one of them work as a click does. */
const TABS = ["maps", "headview", "stages"];
function route() {
  const h = location.hash.replace(/^#/, "");
  if (["model", "generate", "inside", "heads", "api"].includes(h)) return viewer.showMode(h);
  viewer.showMode("modules");
  showTab(TABS.includes(h) ? h : "maps");
}
const goTo = (hash) => { if (location.hash !== hash) location.hash = hash; else route(); };

async function start() {
  drawLegend();
  startApi();
  startInside();
  startModel();
  startGenerate();
  $("view_maps").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  $("view_stages").addEventListener("mousemove", (e) => { if (e.target.tagName === "CANVAS") onHover(e); });
  for (const id of ["view_maps", "view_stages"]) $(id).addEventListener("mouseleave", () => { $("tooltip").style.display = "none"; });
  $("tabs").onclick = (e) => { const t = e.target.dataset.tab; if (t) goTo(t === "maps" ? "#modules" : "#" + t); };
  $("modes").onclick = (e) => { const m = e.target.dataset.mode; if (m) goTo("#" + m); };
  window.addEventListener("hashchange", route);
  viewer.docReady = loadDocument();
  route();
  $("copy_curl").onclick = copyCurl;
  $("run").onclick = compute;
  $("random").onclick = randomInputs;
  $("big").onclick = () => { bigPreset(); compute(); };
  $("dl_png").onclick = () => download("png");
  $("dl_svg").onclick = () => download("svg");
  $("dl_json").onclick = () => download("json");
  $("tokens").oninput = () => { viewer.pad = new Set(); syncTokens(); drawChips(); };
  const useExample = (e) => { markCustom(null); $("example").value = viewer.examples.indexOf(e); loadRequest(e.path, e.value); };
  $("example").onchange = () => {
    const e = viewer.examples[+$("example").value];
    if (e) { useExample(e); compute(); }
  };
  $("endpoint").onchange = () => {
    const e = viewer.examples.find((x) => x.path === $("endpoint").value);
    if (e) useExample(e); else { setModules($("endpoint").value); markCustom("your request  (" + $("module").value + ")"); }
  };
  $("module").onchange = () => {
    const m = $("module").value;
    const e = viewer.examples.find((x) => x.path === viewer.endpoint && (x.value.module || viewer.endpoints[x.path].modules[0]) === m);
    if (e) return useExample(e);
    try { const r = JSON.parse($("request").value); r.module = m; $("request").value = pretty(r); } catch (_) { /* left as typed */ }
    markCustom("your request  (" + m + ")");
  };
  $("color_scale").onchange = () => { setLegend("legend_max", $("color_scale").value); if (viewer.reply) compute(); };
  $("numbers").onchange = () => { if (viewer.reply) compute(); };
  try {
    await viewer.docReady;
  } catch (e) {
    return status("cannot read /openapi.json: " + e, true);
  }
  const first = viewer.examples[0];
  if (first) { loadRequest(first.path, first.value); await compute(); }
  viewer.ready = true;
}
start();
