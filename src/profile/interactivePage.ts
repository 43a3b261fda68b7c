/**
 * The interactive login page: the remote tab as a picture (frames from /stream, server-sent events), whose
 * clicks, keys, wheel and paste go back to /input in order; a URL box (/navigate) and "Save profile"
 * (/save). Every request carries the page's own ?token=. Nothing is loaded from anywhere else.
 */
export const INTERACTIVE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>create-login-profile</title>
<style>
  body { margin: 0; font: 14px system-ui, sans-serif; background: #222; color: #eee; }
  header { display: flex; gap: 8px; align-items: center; padding: 6px 8px; background: #333; }
  header form { display: flex; flex: 1; gap: 4px; }
  #address { flex: 1; font: inherit; padding: 3px 6px; }
  button { font: inherit; padding: 3px 10px; cursor: pointer; }
  #save { background: #2a7; color: #fff; border: 0; border-radius: 3px; font-weight: bold; }
  #status { min-width: 12em; }
  main { padding: 8px; }
  #screen { display: block; max-width: 100%; outline: none; cursor: default; user-select: none; border: 1px solid #555; }
  #screen:focus { border-color: #2a7; }
  #waiting { padding: 2em; color: #aaa; }
</style>
</head>
<body>
<header>
  <form id="go"><input id="address" name="url" placeholder="https://..." autocomplete="off"><button type="submit">Go</button></form>
  <button id="save" type="button">Save profile</button>
  <span id="status">connecting...</span>
</header>
<main>
  <div id="waiting">Waiting for the browser's picture...</div>
  <img id="screen" tabindex="0" draggable="false" alt="the remote browser" hidden>
</main>
<script>
"use strict";
const query = "?token=" + encodeURIComponent(new URLSearchParams(location.search).get("token") || "");
const screen = document.getElementById("screen");
const status = document.getElementById("status");
const address = document.getElementById("address");
let frameWidth = 0, frameHeight = 0, saved = false;
const stream = new EventSource("/stream" + query);
stream.addEventListener("frame", (event) => {
  const frame = JSON.parse(event.data);
  frameWidth = frame.width; frameHeight = frame.height;
  screen.dataset.width = String(frame.width); screen.dataset.height = String(frame.height);
  screen.src = "data:image/jpeg;base64," + frame.data;
  screen.hidden = false;
  document.getElementById("waiting").hidden = true;
});
stream.addEventListener("url", (event) => {
  const { url } = JSON.parse(event.data);
  if (document.activeElement !== address) address.value = url;
  if (!saved) status.textContent = "";
});
stream.onerror = () => { if (!saved) status.textContent = "disconnected"; };
// Inputs are sent one after another: a key must not overtake the click before it.
let queue = Promise.resolve();
function post(path, body) {
  queue = queue.then(() => fetch(path + query, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).catch(() => undefined));
  return queue;
}
function at(event) {
  const box = screen.getBoundingClientRect();
  return { x: (event.clientX - box.left) * frameWidth / box.width, y: (event.clientY - box.top) * frameHeight / box.height };
}
const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
const BUTTONS = ["left", "middle", "right"];
screen.addEventListener("mousedown", (e) => {
  e.preventDefault(); screen.focus();
  post("/input", { kind: "mouse", type: "mousePressed", ...at(e), button: BUTTONS[e.button] || "left", clickCount: e.detail || 1, modifiers: modifiers(e) });
});
screen.addEventListener("mouseup", (e) => {
  e.preventDefault();
  post("/input", { kind: "mouse", type: "mouseReleased", ...at(e), button: BUTTONS[e.button] || "left", clickCount: e.detail || 1, modifiers: modifiers(e) });
});
let lastMove = 0;
screen.addEventListener("mousemove", (e) => {
  const now = Date.now();
  if (now - lastMove < 80) return;
  lastMove = now;
  post("/input", { kind: "mouse", type: "mouseMoved", ...at(e), button: e.buttons & 1 ? "left" : "none", modifiers: modifiers(e) });
});
screen.addEventListener("wheel", (e) => { e.preventDefault(); post("/input", { kind: "wheel", ...at(e), deltaX: e.deltaX, deltaY: e.deltaY, modifiers: modifiers(e) }); }, { passive: false });
screen.addEventListener("contextmenu", (e) => e.preventDefault());
const KEY_TEXT = { Enter: "\\r", Tab: "\\t" };
function key(e, type) {
  const text = e.key.length === 1 && !e.ctrlKey && !e.metaKey ? e.key : KEY_TEXT[e.key];
  return { kind: "key", type, key: e.key, code: e.code, keyCode: e.keyCode, text, modifiers: modifiers(e) };
}
const pasting = (e) => (e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "v";
screen.addEventListener("keydown", (e) => { if (pasting(e)) return; e.preventDefault(); post("/input", key(e, "keyDown")); });
screen.addEventListener("keyup", (e) => { if (pasting(e)) return; e.preventDefault(); post("/input", key(e, "keyUp")); });
document.addEventListener("paste", (e) => {
  if (document.activeElement !== screen) return;
  e.preventDefault();
  post("/input", { kind: "text", text: e.clipboardData.getData("text/plain") });
});
document.getElementById("go").addEventListener("submit", (e) => {
  e.preventDefault();
  post("/navigate", { url: address.value.trim() });
  screen.focus();
});
document.getElementById("save").addEventListener("click", async () => {
  status.textContent = "saving...";
  await queue;
  const response = await fetch("/save" + query, { method: "POST" }).catch(() => null);
  const answer = response ? await response.json().catch(() => ({})) : {};
  saved = !!(response && response.ok);
  status.textContent = saved ? "Profile saved: " + answer.saved + ". You may close this page." : "not saved: " + (answer.error || "no answer");
  if (saved) stream.close();
});
setInterval(() => { if (!saved) fetch("/ping" + query).catch(() => undefined); }, 10000);
</script>
</body>
</html>
`;
