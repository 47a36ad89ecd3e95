// One transactional id (DescribeTransactions): state, producer id and epoch, timeout, start time and the
// partitions of its open transaction.
import { api, enc } from "../api.js";
import { errorBox, every, h, num, refreshMs, replace, table, time } from "../dom.js";
import { txnBadge } from "./transactions.js";

export async function render(main, [id], ctx) {
  const head = h("div");
  const partitions = h("section", { class: "panel" });
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/transactions" }, "Transactions"), " / "), head, partitions);
  return every(refreshMs(ctx), async () => {
    try {
      const t = await api("/transactions/" + enc(id));
      replace(head, h("div", { class: "title-row inline" }, h("h1", { "data-testid": "txn-title" }, id),
        h("span", { "data-testid": "txn-state" }, txnBadge(t.state))),
        h("p", { class: "muted" }, `producer id ${t.producer_id} · epoch ${t.producer_epoch} · timeout ` +
          `${num(t.timeout_ms)} ms · started ${t.start_time === null ? "–" : time(t.start_time)}`));
      replace(partitions, h("h2", {}, "Partitions in the transaction"), table([
        { label: "Topic", cell: (p) => h("a", { href: "#/topics/" + enc(p.topic) }, p.topic) },
        { label: "Partition", cell: (p) => String(p.partition), class: "num" },
      ], t.partitions, { empty: "No open transaction.", testid: "txn-partitions" }));
    } catch (e) {
      replace(head, h("h1", {}, id), errorBox(e));
      replace(partitions);
    }
  });
}
