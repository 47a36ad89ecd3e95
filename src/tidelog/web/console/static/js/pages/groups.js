// Consumer groups: every group with its type, state and (sampled) lag.
import { api, enc } from "../api.js";
import { badge, errorBox, every, h, num, refreshMs, replace, table } from "../dom.js";

export function stateBadge(state) {
  const s = state.toLowerCase();
  return badge(state, s === "stable" ? "good" : s === "empty" || s === "dead" ? "" : "warn");
}

export async function render(main, _params, ctx) {
  const holder = h("section", { class: "panel" });
  main.append(h("h1", {}, "Consumer groups"), holder);
  return every(refreshMs(ctx), async () => {
    try {
      const { groups } = await api("/groups");
      replace(holder, table([
        { label: "Group", cell: (g) => h("a", { href: "#/groups/" + enc(g.group_id), "data-testid": "group-link" }, g.group_id) },
        { label: "Type", cell: (g) => g.type || g.protocol_type || "–" },
        { label: "State", cell: (g) => stateBadge(g.state) },
        { label: "Lag", cell: (g) => num(g.lag), class: "num" },
      ], groups, { empty: "No consumer groups yet.", testid: "groups" }));
    } catch (e) {
      replace(holder, errorBox(e));
    }
  });
}
