/* apidoc.js - the API document (GET /openapi.json) as a page to read: each endpoint with its fields, an example and its replies (server/static/; inlined into the page by server/static/inline.py) */
/* ==== The API document, rendered ================================================= */

/* The page's header links here (#api): the document the viewer has read
 * already (viewer.doc), one collapsible entry per endpoint: its summary and
 * description, the request's fields (type, default, what it does), its first
 * example, the statuses it answers. The raw JSON stays a link away. Tests
 * read window.viewer.api. */
const API_STYLE = `
#main_api { grid-template-columns: minmax(0, 1fr); }
#api_doc { max-width: 1100px; }
#api_doc details { border-top: 1px solid var(--line); padding: 6px 0; }
#api_doc summary { cursor: pointer; }
#api_doc summary code { font-size: 13px; font-weight: 600; }
#api_doc table { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
#api_doc td { border: 1px solid var(--line); padding: 2px 6px; vertical-align: top; }
#api_doc td:first-child { font-family: ui-monospace, Menlo, Consolas, monospace; white-space: nowrap; }
#api_doc pre { font-size: 11px; max-height: 260px; overflow: auto; background: #f0f2f5; padding: 6px; white-space: pre-wrap; }
#api_doc p { margin: 4px 0; }
`;
const av = viewer.api = {drawn: false, endpoints: 0};

/* A $ref of the document, resolved ("#/components/schemas/X"). */
function apiResolve(doc, v) {
  let guard = 0;
  while (v && v.$ref && guard++ < 8) v = v.$ref.split("/").slice(1).reduce((o, k) => (o ? o[k] : undefined), doc);
  return v || {};
}

/* A schema's type in a few words: "integer", "string: a, b", "array of number", "Gpt2Response". */
function apiType(doc, s) {
  if (!s) return "";
  if (s.$ref) return s.$ref.split("/").pop();
  const alt = s.oneOf || s.anyOf;
  if (alt) return alt.map((x) => x.title || apiType(doc, x)).filter(Boolean).join(" | ");
  let t = Array.isArray(s.type) ? s.type.join(" | ") : s.type || "";
  if (s.enum) t += (t ? ": " : "") + s.enum.map((x) => JSON.stringify(x)).join(", ");
  if (s.items) t += " of " + apiType(doc, s.items);
  return t;
}

function apiEl(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

/* The request body's fields: name, type, default, description. */
function apiFields(doc, op) {
  const rb = apiResolve(doc, op.requestBody);
  const media = (rb.content || {})["application/json"] || {};
  const schema = apiResolve(doc, media.schema);
  const props = schema.properties || {};
  const box = document.createElement("div");
  if (schema.description) box.append(apiEl("p", schema.description, "note"));
  if (Object.keys(props).length) {
    const t = apiEl("table");
    const head = t.insertRow();
    for (const h of ["field", "type", "default", "what it is"]) head.insertCell().textContent = h;
    for (const [name, p0] of Object.entries(props)) {
      const p = apiResolve(doc, p0), tr = t.insertRow();
      tr.insertCell().textContent = name + ((schema.required || []).includes(name) ? " *" : "");
      tr.insertCell().textContent = apiType(doc, p0);
      tr.insertCell().textContent = "default" in p ? JSON.stringify(p.default) : "";
      tr.insertCell().textContent = p.description || "";
    }
    box.append(t);
  }
  const examples = Object.entries(media.examples || {});
  if (examples.length) {
    const [name, ex] = examples[0];
    const text = JSON.stringify(apiResolve(doc, ex).value, null, 1);
    box.append(apiEl("p", "Example " + name + (examples.length > 1 ? " (of " + examples.length + ")" : "") + ":", "note"),
               apiEl("pre", text.length > 4000 ? text.slice(0, 4000) + "\n\u2026" : text));
  }
  return box;
}

/* The statuses an operation answers and what each means. */
function apiResponses(op) {
  const t = apiEl("table");
  for (const [code, r] of Object.entries(op.responses || {})) {
    const tr = t.insertRow();
    tr.insertCell().textContent = code;
    tr.insertCell().textContent = (r.description || "") +
      (r.content ? " (" + Object.keys(r.content).join(", ") + ")" : "");
  }
  return t;
}

function drawApi() {
  const doc = viewer.doc, box = $("api_doc");
  if (!doc || av.drawn) return;
  box.textContent = "";
  const info = doc.info || {};
  box.append(apiEl("h2", (info.title || "API") + " " + (info.version || "")));
  if (info.description) box.append(apiEl("p", info.description));
  const raw = apiEl("a", "the document as JSON (/openapi.json)");
  raw.href = "/openapi.json";
  box.append(apiEl("p", "", "note"));
  box.lastChild.append("OpenAPI " + (doc.openapi || "") + "; ", raw, ". Click an endpoint for its fields.");
  for (const [path, item] of Object.entries(doc.paths || {}))
    for (const [method, op] of Object.entries(item)) {
      const d = apiEl("details"), s = apiEl("summary");
      s.append(apiEl("code", method.toUpperCase() + " " + path), " " + (op.summary || ""));
      d.append(s);
      d.dataset.endpoint = method.toUpperCase() + " " + path;
      if (op.description) d.append(apiEl("p", op.description));
      if (op.requestBody) d.append(apiEl("h2", "Request"), apiFields(doc, op));
      d.append(apiEl("h2", "Replies"), apiResponses(op));
      box.append(d);
      av.endpoints++;
    }
  av.drawn = true;
}

/* Shown by showMode (model.js) for #api, once the document is read. */
function showApi(on) {
  $("main_api").hidden = !on;
  if (on) Promise.resolve(viewer.docReady).catch(() => {}).then(drawApi);
}

function startApi() {
  const style = document.createElement("style");
  style.textContent = API_STYLE;
  document.head.appendChild(style);
}
