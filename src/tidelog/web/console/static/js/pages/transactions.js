// Transactions: the transactional ids this broker coordinates (ListTransactions), filtered by state.
import { api, enc } from "../api.js";
import { badge, errorBox, every, h, refreshMs, replace, table } from "../dom.js";

export const STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
  "Dead", "PrepareEpochFence"];

export function txnBadge(state) {
  return badge(state, state === "CompleteCommit" ? "good" : state === "Empty" || state === "CompleteAbort" ? "" : "warn");
}

export async function render(main, _params, ctx) {
  const holder = h("section", { class: "panel" });
  const state = h("select", { "data-testid": "txn-state-filter" },
    h("option", { value: "" }, "all states"), STATES.map((s) => h("option", { value: s }, s)));
  main.append(h("h1", {}, "Transactions"), h("div", { class: "toolbar" }, h("label", {}, "State ", state)), holder);
  const load = async () => {
    const asked = state.value;
    try {
      const { transactions } = await api("/transactions" + (asked ? "?state=" + enc(asked) : ""));
      if (asked !== state.value) return;  // the filter changed meanwhile: a newer load draws
      replace(holder, table([
        { label: "Transactional id", cell: (t) => h("a", { href: "#/transactions/" + enc(t.transactional_id),
          "data-testid": "txn-link" }, t.transactional_id) },
        { label: "State", cell: (t) => txnBadge(t.state) },
        { label: "Producer id", cell: (t) => String(t.producer_id), class: "num" },
      ], transactions, { empty: asked ? "No " + asked + " transactions." : "No transactional ids yet.",
        testid: "transactions" }));
    } catch (e) {
      if (asked === state.value) replace(holder, errorBox(e));
    }
  };
  state.addEventListener("change", load);
  return every(refreshMs(ctx), load);
}
