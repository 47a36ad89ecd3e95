// Overview: the cluster id, brokers, topic and partition counts, under-replicated and offline partitions, disk use per
// log dir, and the live message rate.
import { api } from "../api.js";
import { bytes, card, errorBox, every, h, num, refreshMs, replace, table } from "../dom.js";
import { lineChart } from "../chart.js";

export async function render(main, _params, ctx) {
  const cards = h("div", { class: "cards" });
  const chart = h("div", { class: "panel-body" });
  const brokers = h("div", { class: "panel-body" });
  const dirs = h("div", { class: "panel-body" });
  const status = h("div");
  const identity = h("p", { class: "muted" });
  main.append(h("h1", {}, "Overview"), identity, status, cards,
    h("section", { class: "panel" }, h("h2", {}, "Messages in per second"), chart),
    h("div", { class: "columns" },
      h("section", { class: "panel" }, h("h2", {}, "Brokers"), brokers),
      h("section", { class: "panel" }, h("h2", {}, "Disk use per log dir"), dirs)));
  return every(refreshMs(ctx), async () => {
    let o, rates;
    try {
      [o, rates] = await Promise.all([api("/cluster"), api("/cluster/rates")]);
      replace(status);
    } catch (e) {
      replace(status, errorBox(e));
      return;
    }
    replace(identity, "Cluster id ", h("code", { "data-testid": "cluster-id" }, o.cluster_id),
      " · this is broker ", String(o.broker_id), " · controller ", o.controller_id === null || o.controller_id < 0 ? "–" : String(o.controller_id));
    replace(cards,
      card("Brokers", num(o.brokers.length), "brokers"),
      card("Topics", num(o.topics), "topic-count"),
      card("Partitions", num(o.partitions), "partition-count"),
      card("Under-replicated", num(o.under_replicated_partitions), "under-replicated"),
      card("Offline", num(o.offline_partitions), "offline"),
      card("Messages in/s", o.records_per_sec === null ? "–" : num(o.records_per_sec), "rate"));
    const top = topTopics(rates.samples, 4);
    replace(chart, lineChart([
      { name: "all topics", points: rates.samples.map((s) => [s.time, s.records_per_sec]) },
      ...top.map((t) => ({ name: t, points: rates.samples.map((s) => [s.time, (s.topics[t] || {}).records_per_sec || 0]) })),
    ], { testid: "rate-chart" }));
    replace(brokers, table([
      { label: "Id", cell: (b) => String(b.id) + (b.id === o.controller_id ? " (controller)" : "") },
      { label: "Host", cell: (b) => b.host + ":" + b.port },
      { label: "Rack", cell: (b) => b.rack || "–" },
    ], o.brokers));
    if (o.log_dirs === null) {
      replace(dirs, h("p", { class: "muted" }, "Not shown: needs DESCRIBE on the cluster."));
      return;
    }
    replace(dirs, table([
      { label: "Log dir", cell: (d) => h("code", {}, d.path) },
      { label: "Partitions", cell: (d) => num(d.partitions), class: "num" },
      { label: "Data", cell: (d) => bytes(d.size_bytes), class: "num" },
      { label: "Disk free", cell: (d) => d.total_bytes ? bytes(d.usable_bytes) + " of " + bytes(d.total_bytes) : "–", class: "num" },
      { label: "", cell: (d) => d.total_bytes ? usage(d) : "" },
    ], o.log_dirs, { testid: "log-dirs" }));
  });
}

function usage(d) {
  const used = 1 - d.usable_bytes / d.total_bytes;
  return h("div", { class: "meter", title: Math.round(used * 100) + "% used" },
    h("div", { class: "meter-fill", style: "width:" + (used * 100).toFixed(1) + "%" }));
}

function topTopics(samples, n) {
  const totals = {};
  for (const s of samples) for (const [t, r] of Object.entries(s.topics)) totals[t] = (totals[t] || 0) + r.records_per_sec;
  return Object.entries(totals).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).slice(0, n).map(([t]) => t);
}
