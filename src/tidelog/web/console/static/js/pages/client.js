// One client id's telemetry: each client instance and the latest value of every series it pushed.
import { api, enc } from "../api.js";
import { errorBox, every, h, refreshMs, replace, table } from "../dom.js";
import { ago } from "./clients.js";

function labels(l) {
  return Object.entries(l).map(([k, v]) => k + "=" + v).join(", ");
}

export async function render(main, [clientId], ctx) {
  const holder = h("div");
  main.append(h("h1", {}, "Client ", clientId), holder);
  const load = async () => {
    try {
      const { instances } = await api("/client-metrics/clients/" + enc(clientId));
      replace(holder, ...instances.map((i) => h("section", { class: "panel", "data-testid": "client-instance" },
        h("h2", {}, i.client_instance_id),
        h("p", { class: "muted" }, [i.software, i.source, i.pushes + " pushes", "last " + ago(i.last_push_ms)]
          .filter(Boolean).join(" · ")),
        table([
          { label: "Metric", cell: (s) => s.name },
          { label: "Labels", cell: (s) => labels(s.labels) },
          { label: "Kind", cell: (s) => s.kind },
          { label: "Value", cell: (s) => String(s.value), class: "num" },
        ], i.series, { empty: "No series pushed.", testid: "client-series" }))));
    } catch (e) {
      replace(holder, errorBox(e));
    }
  };
  return every(refreshMs(ctx), load);
}
