// Client telemetry (KIP-714): the client-metrics subscriptions and the client ids that pushed metrics.
import { api, enc } from "../api.js";
import { errorBox, every, h, refreshMs, replace, table } from "../dom.js";

export function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60 ? s + " s ago" : Math.round(s / 60) + " min ago";
}

export async function render(main, _params, ctx) {
  const subs = h("section", { class: "panel" });
  const clients = h("section", { class: "panel" });
  main.append(h("h1", {}, "Client telemetry"), h("h2", {}, "Subscriptions"), subs, h("h2", {}, "Clients"), clients);
  const load = async () => {
    try {
      const data = await api("/client-metrics");
      replace(subs, table([
        { label: "Name", cell: (s) => s.name },
        { label: "Metrics", cell: (s) => s.configs.metrics || "(none)" },
        { label: "Interval (ms)", cell: (s) => s.configs["interval.ms"], class: "num" },
        { label: "Match", cell: (s) => s.configs.match || "every client" },
      ], data.subscriptions, { empty: "No subscriptions: clients push nothing. Add one with tidelog client-metrics alter.",
        testid: "subscriptions" }));
      replace(clients, table([
        { label: "Client id", cell: (c) => h("a", { href: "#/clients/" + enc(c.client_id), "data-testid": "client-link" },
          c.client_id || "(empty)") },
        { label: "Instances", cell: (c) => String(c.instances), class: "num" },
        { label: "Series", cell: (c) => String(c.series), class: "num" },
        { label: "Last push", cell: (c) => ago(c.last_push_ms) },
      ], data.clients, { empty: data.enabled ? "No client pushed metrics lately."
        : "Client telemetry is off (telemetry.enable=false).", testid: "telemetry-clients" }));
    } catch (e) {
      replace(subs, errorBox(e));
    }
  };
  return every(refreshMs(ctx), load);
}
