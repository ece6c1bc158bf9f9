/* share.js - what the views give back to the user: a request as the curl
 * command that sends it, sizes in words, the colour legend's words
 * (server/static/; inlined into the page by server/static/inline.py) */
/* ==== Sharing ================================================================ */

/* Bytes as a person reads them: "812 bytes", "23.4 kB", "3.02 MB". */
function fmtBytes(n) {
  if (n < 1024) return n + " bytes";
  if (n < 1048576) return (n / 1024).toFixed(1) + " kB";
  return (n / 1048576).toFixed(2) + " MB";
}
viewer.fmtBytes = fmtBytes;

/* Text in single quotes for a POSIX shell. */
function shellQuote(s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; }

/* The curl command that sends body (a request object) to path on this
 * server: -d '...' for a body a command line holds, else the body on stdin
 * from a here-document (a command line's argument is at most 128 kB). */
function curlLine(path, body) {
  const text = JSON.stringify(body);
  const head = "curl -s " + shellQuote(location.origin + path) + " -H 'Content-Type: application/json'";
  if (text.length <= 65536) return head + " -d " + shellQuote(text);
  return head + " --data-binary @- <<'JSON'\n" + text + "\nJSON";
}
viewer.curlLine = curlLine;

/* Shows the command in pre and copies it (the page may not be allowed to:
 * it stays shown for a manual copy). */
async function shareCurl(pre, path, body, status) {
  const line = curlLine(path, body);
  pre.textContent = line;
  pre.hidden = false;
  try {
    await navigator.clipboard.writeText(line);
    status("copied the curl command (" + fmtBytes(line.length) + "): the same request with a JSON reply");
  } catch (_) {
    status("the curl command is below: select it and copy it");
  }
}

/* What the top of the colour legend stands for under a colour scale. */
const LEGEND_TOPS = {unit: "1", row: "row max", max: "map max"};
function setLegend(id, scale) { $(id).textContent = LEGEND_TOPS[scale] || "1"; }
