package main

// pageHTML is the page at /: the keys, a form that sets and deletes one,
// and a WebSocket on /ws/watch that keeps the list up to date.
const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>webkv</title>
<style>
body { font-family: sans-serif; margin: 2em; }
#keys li { font-family: monospace; }
#status { color: #666; }
</style>
</head>
<body>
<h1>webkv</h1>
<form id="form" onsubmit="return false">
<input id="key" placeholder="key" autocomplete="off">
<input id="value" placeholder="value" autocomplete="off">
<button id="set" type="button">set</button>
<button id="del" type="button">delete</button>
</form>
<p id="status">connecting…</p>
<ul id="keys">{{range .}}<li data-key="{{.}}">{{.}}</li>{{end}}</ul>
<script>
const list = document.getElementById("keys");
const status = document.getElementById("status");
function item(k) {
  for (const li of list.children) if (li.dataset.key === k) return li;
  return null;
}
function put(k) {
  if (item(k)) return;
  const li = document.createElement("li");
  li.dataset.key = k;
  li.textContent = k;
  const after = [...list.children].find(x => x.dataset.key > k);
  list.insertBefore(li, after || null);
}
function del(k) {
  const li = item(k);
  if (li) li.remove();
}
function watch() {
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/watch");
  ws.onopen = () => { status.textContent = "live"; };
  ws.onmessage = (e) => {
    const sp = e.data.indexOf(" ");
    const op = e.data.slice(0, sp), k = e.data.slice(sp + 1);
    if (op === "put") put(k); else if (op === "del") del(k);
  };
  ws.onclose = () => { status.textContent = "disconnected"; setTimeout(watch, 1000); };
}
watch();
function path() { return "/kv/" + encodeURIComponent(document.getElementById("key").value); }
document.getElementById("set").onclick = () =>
  fetch(path(), {method: "PUT", body: document.getElementById("value").value})
    .then(r => { status.textContent = "set: " + r.status; });
document.getElementById("del").onclick = () =>
  fetch(path(), {method: "DELETE"}).then(r => { status.textContent = "delete: " + r.status; });
</script>
</body>
</html>
`
