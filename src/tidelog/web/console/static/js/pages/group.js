// One group: members and their assignment, lag per partition, lag over time, reset offsets, delete.
// A share group (KIP-932) shows per partition its share start offset, lag and in-flight records instead.
import { api, enc } from "../api.js";
import { confirmAction, errorBox, every, h, num, refreshMs, replace, table, toast } from "../dom.js";
import { lineChart } from "../chart.js";
import { stateBadge } from "./groups.js";

export async function render(main, [id], ctx) {
  const head = h("div");
  const members = h("section", { class: "panel" });
  const lag = h("section", { class: "panel" });
  const chart = h("div", { class: "panel-body" });
  const reset = h("section", { class: "panel" });
  const history = h("section", { class: "panel" }, h("h2", {}, "Lag over time"), chart);
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/groups" }, "Consumer groups"), " / "),
    head, history, lag, members, reset, deleteGroup(id, ctx));
  let group = null;
  let resetDrawn = false;
  const stop = every(refreshMs(ctx), async () => {
    try {
      const g = await api("/groups/" + enc(id));
      group = g;
      const share = g.type === "share";
      replace(head, h("div", { class: "title-row inline" }, h("h1", { "data-testid": "group-title" }, id), stateBadge(g.state)),
        h("p", { class: "muted" }, `${g.type} group · ${g.members.length} member(s) · protocol ${g.protocol || "–"} · total lag `,
          h("strong", { "data-testid": "group-lag" }, num(g.lag))));
      history.hidden = share;  // the lag sampler follows committed offsets: consumer groups only
      if (!share) {
        const points = (await api("/groups/" + enc(id) + "/lag-history")).points;
        replace(chart, lineChart([{ name: "total lag", points: points.map((p) => [p.time, p.lag]) }], { testid: "lag-chart" }));
      }
      if (share) replace(lag, h("h2", {}, "Share partitions"), shareTable(g));
      else replace(lag, h("h2", {}, "Lag per partition"), table([
        { label: "Topic", cell: (o) => h("a", { href: "#/topics/" + enc(o.topic) }, o.topic) },
        { label: "Partition", cell: (o) => String(o.partition), class: "num" },
        { label: "Committed", cell: (o) => num(o.committed_offset), class: "num" },
        { label: "End offset", cell: (o) => num(o.end_offset), class: "num" },
        { label: "Lag", cell: (o) => num(o.lag), class: "num" },
        { label: "Member", cell: (o) => o.member_id ? h("code", {}, o.member_id) : h("span", { class: "muted" }, "–") },
      ], g.offsets, { empty: "No committed offsets.", testid: "lag-table" }));
      replace(members, h("h2", {}, "Members"), table([
        { label: "Member", cell: (m) => h("code", {}, m.member_id) },
        { label: "Client", cell: (m) => m.client_id },
        { label: "Host", cell: (m) => m.client_host },
        { label: "Assignment", cell: (m) => m.assignment.map((a) => a.topic + ": " + a.partitions.join(", ")).join("; ") || "–" },
      ], g.members, { empty: "No members: the group is empty.", testid: "members" }));
      if (!resetDrawn) { drawReset(reset, id, () => group, ctx); resetDrawn = true; }
    } catch (e) {
      replace(head, h("h1", {}, id), errorBox(e));
    }
  });
  return stop;
}

function shareTable(g) {
  const flight = (key) => (o) => o.in_flight ? num(o.in_flight[key]) : h("span", { class: "muted", title: "led by another broker" }, "–");
  return table([
    { label: "Topic", cell: (o) => h("a", { href: "#/topics/" + enc(o.topic) }, o.topic) },
    { label: "Partition", cell: (o) => String(o.partition), class: "num" },
    { label: "Start offset", cell: (o) => num(o.start_offset), class: "num" },
    { label: "End offset", cell: (o) => num(o.end_offset), class: "num" },
    { label: "Lag", cell: (o) => num(o.lag), class: "num" },
    { label: "Acquired", cell: flight("acquired"), class: "num" },
    { label: "Available", cell: flight("available"), class: "num" },
    { label: "Members", cell: (o) => o.member_ids.length ? o.member_ids.map((m) => h("code", {}, m + " ")) : h("span", { class: "muted" }, "–") },
  ], g.offsets, { empty: "No share partitions yet.", testid: "share-table" });
}

function deleteGroup(id, ctx) {
  const del = h("button", { type: "button", class: "danger", disabled: ctx.read_only, "data-testid": "delete-group",
    title: ctx.read_only ? "read-only console" : null }, "Delete group");
  const out = h("div");
  del.addEventListener("click", async () => {
    replace(out);
    if (!(await confirmAction("Delete group", h("p", {}, "Delete group ", h("strong", {}, id), " and its offsets? This cannot be undone."), "Delete"))) return;
    try {
      await api("/groups/" + enc(id), { method: "DELETE" });
      toast("Group " + id + " deleted");
      location.hash = "#/groups";
    } catch (e) {
      replace(out, errorBox(e));
    }
  });
  return h("section", { class: "panel" }, h("h2", {}, "Delete"),
    h("p", { class: "muted" }, ctx.read_only ? "Read-only console: deleting is disabled."
      : "A group can be deleted only while it has no members, as in Kafka."), del, out);
}

function drawReset(holder, id, current, ctx) {
  const topic = h("input", { placeholder: "all committed topics", "data-testid": "reset-topic" });
  const to = h("select", { "data-testid": "reset-to" }, ["earliest", "latest", "offset", "timestamp"].map((v) => h("option", { value: v }, v)));
  const offset = h("input", { type: "number", min: 0, value: "0", "data-testid": "reset-offset" });
  const when = h("input", { type: "datetime-local", step: 1, "data-testid": "reset-time" });
  const out = h("div");
  const body = (dry) => {
    const b = { to: to.value, dry_run: dry };
    if (topic.value.trim()) b.topic = topic.value.trim();
    if (to.value === "offset") b.offset = Number(offset.value);
    if (to.value === "timestamp") b.timestamp = new Date(when.value).getTime();
    return b;
  };
  const plan = (r) => table([
    { label: "Topic", cell: (o) => o.topic },
    { label: "Partition", cell: (o) => String(o.partition), class: "num" },
    { label: "From", cell: (o) => num(o.previous_offset), class: "num" },
    { label: "To", cell: (o) => num(o.offset), class: "num" },
  ], r.offsets, { testid: "reset-plan" });
  const submit = h("button", { type: "submit", class: "danger", disabled: ctx.read_only, "data-testid": "reset-submit" }, "Reset offsets");
  const form = h("form", { class: "form" },
    h("p", { class: "muted" }, ctx.read_only ? "Read-only console: resetting offsets is disabled."
      : "Offsets can be reset only while the group has no members (stop its consumers first), as in Kafka."),
    h("div", { class: "row" }, h("label", {}, "Topic", topic), h("label", {}, "Reset to", to),
      h("label", {}, "Offset", offset), h("label", {}, "Time", when)),
    h("div", {}, submit), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    replace(out);
    const g = current();
    if (g && !["empty", "dead"].includes(g.state.toLowerCase())) {
      replace(out, errorBox({ code: "NON_EMPTY_GROUP", message: `the group is ${g.state}: stop its consumers first` }));
      return;
    }
    try {
      const preview = await api("/groups/" + enc(id) + "/reset-offsets", { method: "POST", body: body(true) });
      if (!(await confirmAction("Reset offsets", h("div", {}, h("p", {}, "Commit these offsets for group ", h("strong", {}, id), "?"), plan(preview)), "Reset"))) return;
      const r = await api("/groups/" + enc(id) + "/reset-offsets", { method: "POST", body: body(false) });
      toast("Offsets of " + id + " reset");
      replace(out, h("p", { class: "ok", "data-testid": "reset-result" }, `Reset ${r.offsets.length} partition(s).`));
    } catch (e) {
      replace(out, errorBox(e));
    }
  });
  replace(holder, h("h2", {}, "Reset offsets"), form);
}
