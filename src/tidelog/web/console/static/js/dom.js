// Building the page: elements (text is always set as text, never parsed as HTML), tables, the
// confirmation dialog, toasts and number formats.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// columns: [{label, cell: row => node|string, class}]
export function table(columns, rows, { empty = "Nothing here yet.", testid } = {}) {
  if (!rows.length) return h("p", { class: "muted", "data-testid": testid && testid + "-empty" }, empty);
  return h("table", { class: "grid", "data-testid": testid },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.class }, c.label)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, columns.map((c) => h("td", { class: c.class }, c.cell(r)))))));
}

export function card(label, value, testid) {
  return h("div", { class: "card" }, h("div", { class: "card-label" }, label),
    h("div", { class: "card-value", "data-testid": testid }, value));
}

// Every action that changes data asks first: resolves true only on "Confirm".
export function confirmAction(title, detail, confirmLabel = "Confirm") {
  const dialog = document.getElementById("confirm");
  replace(document.getElementById("confirm-title"), title);
  replace(document.getElementById("confirm-detail"), detail);
  document.getElementById("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

export function toast(message, kind = "info") {
  const el = h("div", { class: "toast " + kind, role: kind === "error" ? "alert" : "status" }, message);
  document.getElementById("toasts").append(el);
  setTimeout(() => el.remove(), kind === "error" ? 8000 : 4000);
}

export function errorBox(e) {
  return h("div", { class: "error", role: "alert", "data-testid": "error" },
    h("strong", {}, e.code || "ERROR"), " ", e.message);
}

const nf = new Intl.NumberFormat();
export const num = (n) => (n === null || n === undefined ? "–" : nf.format(n));

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

export const time = (ms) => (ms < 0 ? "–" : new Date(ms).toLocaleString());

export function badge(text, kind = "") {
  return h("span", { class: "badge " + kind }, text);
}

// key=value lines (blank lines and # comments ignored) -> object
export function parsePairs(text) {
  const out = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const i = line.indexOf("=");
    if (i <= 0) throw new Error("'" + line + "' is not key=value");
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

// Run fn now and every ms until the returned stop function is called (the page's cleanup).
export function every(ms, fn) {
  let stopped = false;
  let timer = null;
  const tick = async () => {
    try { await fn(); } catch (e) { console.warn(e); }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

export const refreshMs = (ctx) => Math.max(500, Math.min(ctx.sample_interval_ms, 5000));
