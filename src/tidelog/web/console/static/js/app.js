// The single-page app: a hash router over the pages, the header and the read-only banner.
import { api } from "./api.js";
import { errorBox, h, replace } from "./dom.js";
import * as overview from "./pages/overview.js";
import * as topics from "./pages/topics.js";
import * as topic from "./pages/topic.js";
import * as groups from "./pages/groups.js";
import * as group from "./pages/group.js";
import * as login from "./pages/login.js";
import * as users from "./pages/users.js";
import * as acls from "./pages/acls.js";
import * as transactions from "./pages/transactions.js";
import * as transaction from "./pages/transaction.js";
import * as schemas from "./pages/schemas.js";
import * as schema from "./pages/schema.js";
import * as clients from "./pages/clients.js";
import * as client from "./pages/client.js";

const routes = [
  [/^\/$/, overview, "overview"],
  [/^\/topics$/, topics, "topics"],
  [/^\/topics\/(.+)$/, topic, "topics"],
  [/^\/groups$/, groups, "groups"],
  [/^\/groups\/(.+)$/, group, "groups"],
  [/^\/transactions$/, transactions, "transactions"],
  [/^\/transactions\/(.+)$/, transaction, "transactions"],
  [/^\/users$/, users, "users"],
  [/^\/acls$/, acls, "acls"],
  [/^\/schemas$/, schemas, "schemas"],
  [/^\/schemas\/(.+)$/, schema, "schemas"],
  [/^\/clients$/, clients, "clients"],
  [/^\/clients\/(.+)$/, client, "clients"],
];

let cleanup = null;
let ctx = null;

async function show() {
  if (cleanup) { cleanup(); cleanup = null; }
  const path = location.hash.replace(/^#/, "") || "/";
  const main = document.getElementById("main");
  for (const [pattern, page, nav] of routes) {
    const m = path.match(pattern);
    if (!m) continue;
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === nav);
    replace(main);
    try {
      cleanup = (await page.render(main, m.slice(1).map(decodeURIComponent), ctx)) || null;
    } catch (e) {
      replace(main, errorBox(e));
    }
    return;
  }
  replace(main, errorBox({ code: "NOT_FOUND", message: "no page " + path }));
}

async function start() {
  try {
    ctx = await api("/console");
  } catch (e) {
    replace(document.getElementById("main"), errorBox(e));
    return;
  }
  const who = document.getElementById("who");
  if (ctx.authentication === "sasl" && !ctx.principal) {
    document.getElementById("nav").hidden = true;
    who.textContent = "Tidelog " + ctx.version;
    login.render(document.getElementById("main"), () => location.reload());
    return;
  }
  replace(who, "cluster ", h("code", { "data-testid": "header-cluster-id", title: "cluster id" }, ctx.cluster_id),
    " · as ", h("span", { "data-testid": "principal" }, ctx.principal), " · Tidelog " + ctx.version);
  if (ctx.authentication === "sasl") {
    who.append(" ", h("button", { class: "small", "data-testid": "logout", onclick: async () => {
      try { await api("/logout", { method: "POST", body: {} }); } finally { location.hash = "#/"; location.reload(); }
    } }, "Log out"));
  }
  if (ctx.cluster_operations.includes("DESCRIBE")) {
    document.getElementById("nav").append(
      h("a", { href: "#/users", "data-page": "users" }, "Users"),
      h("a", { href: "#/acls", "data-page": "acls" }, "ACLs"));
  }
  const banner = document.getElementById("banner");
  if (ctx.read_only) {
    banner.hidden = false;
    banner.setAttribute("data-testid", "read-only-banner");
    banner.textContent = "Read-only console: browsing only. Set console.read.only=false in the broker's " +
      "configuration to create or delete topics, change configs, produce messages or reset offsets.";
  }
  try {  // the Schemas page, when the broker serves a schema registry (docs/schema-registry.md)
    await api("/schemas");
    document.getElementById("nav").append(h("a", { href: "#/schemas", "data-page": "schemas" }, "Schemas"));
  } catch {
    // no registry here (404), or not ready yet: no link
  }
  try {  // the Clients page, when the broker takes client telemetry (telemetry.enable; docs/telemetry.md)
    if ((await api("/client-metrics")).enabled) {
      document.getElementById("nav").append(h("a", { href: "#/clients", "data-page": "clients" }, "Clients"));
    }
  } catch {
    // not allowed to list config resources: no link
  }
  window.addEventListener("hashchange", show);
  await show();
}

start();
