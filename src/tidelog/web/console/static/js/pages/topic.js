// One topic: its partitions, configs, a message browser (pages/messages.js), producing a test message, deleting it.
import { api, enc } from "../api.js";
import { badge, bytes, confirmAction, errorBox, every, h, num, parsePairs, refreshMs, replace, table, toast }
  from "../dom.js";
import { messages } from "./messages.js";

export async function render(main, [name], ctx) {
  const t = await api("/topics/" + enc(name));
  const tabs = { partitions: "Partitions", configs: "Configs", messages: "Messages", produce: "Produce" };
  const body = h("div");
  const nav = h("div", { class: "tabs", role: "tablist" });
  let stop = null;
  const open = (tab) => {
    if (stop) { stop(); stop = null; }
    for (const b of nav.children) b.classList.toggle("active", b.dataset.tab === tab);
    replace(body);
    stop = { partitions, configs, messages, produce }[tab](body, t, ctx) || null;
  };
  for (const [key, label] of Object.entries(tabs)) {
    nav.append(h("button", { type: "button", "data-tab": key, "data-testid": "tab-" + key, onclick: () => open(key) }, label));
  }
  const del = h("button", { type: "button", class: "danger", disabled: ctx.read_only, "data-testid": "delete-topic",
    title: ctx.read_only ? "read-only console" : null }, "Delete topic");
  del.addEventListener("click", async () => {
    const ok = await confirmAction("Delete topic",
      h("p", {}, "Delete ", h("strong", {}, name), " and all its ", num(t.messages), " messages? This cannot be undone."),
      "Delete");
    if (!ok) return;
    try {
      await api("/topics/" + enc(name), { method: "DELETE" });
      toast("Topic " + name + " deleted");
      location.hash = "#/topics";
    } catch (e) {
      toast(e.message, "error");
    }
  });
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/topics" }, "Topics"), " / "),
    h("div", { class: "title-row" }, h("h1", { "data-testid": "topic-title" }, name, t.internal ? [" ", badge("internal")] : []), del),
    h("p", { class: "muted" }, `${t.partitions} partition(s) · replication factor ${t.replication_factor} · ` +
      `${num(t.messages)} messages · ${bytes(t.size_bytes)} · id ${t.topic_id}`),
    nav, body);
  open("partitions");
  return () => { if (stop) stop(); };
}

function partitions(body, t, ctx) {
  const holder = h("div", { class: "panel" });
  body.append(holder);
  return every(refreshMs(ctx), async () => {
    const fresh = await api("/topics/" + enc(t.name));
    replace(holder, table([
      { label: "Partition", cell: (p) => String(p.partition), class: "num" },
      { label: "Leader", cell: (p) => p.offline ? badge("offline", "bad") : String(p.leader), class: "num" },
      { label: "Replicas", cell: (p) => p.replicas.join(", ") },
      { label: "ISR", cell: (p) => [p.isr.join(", "), p.under_replicated ? [" ", badge("under-replicated", "warn")] : []] },
      { label: "Start offset", cell: (p) => num(p.start_offset), class: "num" },
      { label: "End offset", cell: (p) => num(p.end_offset), class: "num" },
      { label: "Messages", cell: (p) => p.end_offset === null ? "–" : num(p.end_offset - p.start_offset), class: "num" },
      { label: "Size", cell: (p) => bytes(p.size_bytes), class: "num" },
    ], fresh.partition_table, { testid: "partitions" }));
  });
}

function configs(body, t, ctx) {
  const holder = h("div", { class: "panel" });
  const out = h("div");
  const key = h("input", { placeholder: "retention.ms", "data-testid": "config-name" });
  const value = h("input", { placeholder: "value", "data-testid": "config-value" });
  const change = async (changes, what) => {
    if (!(await confirmAction("Change config", h("p", {}, what + " on topic ", h("strong", {}, t.name), "?"), "Apply"))) return;
    try {
      const r = await api("/topics/" + enc(t.name) + "/configs", { method: "PATCH", body: { configs: changes } });
      toast("Configs of " + t.name + " changed");
      draw(r.configs);
    } catch (e) {
      replace(out, errorBox(e));
    }
  };
  const draw = (list) => replace(holder, table([
    { label: "Name", cell: (c) => h("code", { title: c.documentation || "" }, c.name) },
    { label: "Value", cell: (c) => c.sensitive ? badge("sensitive") : h("code", {}, c.value === null ? "null" : c.value) },
    { label: "Source", cell: (c) => c.source === "DYNAMIC_TOPIC_CONFIG" ? badge("topic override", "info") : h("span", { class: "muted" }, c.source) },
    { label: "", cell: (c) => c.source === "DYNAMIC_TOPIC_CONFIG" && !ctx.read_only
      ? h("button", { type: "button", class: "small", onclick: () => change({ [c.name]: null }, `Reset ${c.name} to its default`) }, "Reset")
      : (ctx.read_only || c.read_only ? "" : h("button", { type: "button", class: "small",
        onclick: () => { key.value = c.name; value.value = c.value || ""; value.focus(); } }, "Edit")) },
  ], list, { testid: "configs" }));
  const form = h("form", { class: "row form" }, key, value,
    h("button", { type: "submit", disabled: ctx.read_only, "data-testid": "config-set" }, "Set config"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    replace(out);
    if (key.value.trim()) change({ [key.value.trim()]: value.value }, `Set ${key.value.trim()}=${value.value}`);
  });
  body.append(h("div", { class: "panel" }, h("h2", {}, "Override a config"), form, out), holder);
  api("/topics/" + enc(t.name) + "/configs").then((r) => draw(r.configs), (e) => replace(holder, errorBox(e)));
}

function partitionSelect(t, testid) {
  return h("select", { "data-testid": testid }, Array.from({ length: t.partitions }, (_, i) => h("option", { value: String(i) }, "Partition " + i)));
}

function produce(body, t, ctx) {
  const partition = partitionSelect(t, "produce-partition");
  const key = h("input", { placeholder: "key (optional)", "data-testid": "produce-key" });
  const value = h("textarea", { rows: 4, placeholder: '{"hello": "world"}', "data-testid": "produce-value" });
  const headers = h("textarea", { rows: 2, placeholder: "source=console", "data-testid": "produce-headers" });
  const format = h("select", { "data-testid": "produce-format" }, ["text", "json", "hex"].map((f) => h("option", { value: f }, f)));
  const out = h("div");
  const form = h("form", { class: "panel form" },
    ctx.read_only ? h("p", { class: "muted" }, "Read-only console: producing is disabled.") : null,
    h("div", { class: "row" }, h("label", {}, "Partition", partition), h("label", {}, "Format", format), h("label", { class: "grow" }, "Key", key)),
    h("label", {}, "Value", value), h("label", {}, "Headers (key=value per line)", headers),
    h("div", {}, h("button", { type: "submit", disabled: ctx.read_only, "data-testid": "produce-submit" }, "Produce")), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    replace(out);
    let msg;
    try {
      const parse = (s) => (format.value === "json" ? JSON.parse(s) : s);
      msg = { partition: Number(partition.value), format: format.value, key: key.value === "" ? null : parse(key.value),
        value: parse(value.value), headers: parsePairs(headers.value) };
    } catch (e) {
      replace(out, errorBox({ code: "INVALID_REQUEST", message: e.message }));
      return;
    }
    if (!(await confirmAction("Produce a message", h("p", {}, `Append this message to ${t.name}-${msg.partition}?`), "Produce"))) return;
    try {
      const r = await api("/topics/" + enc(t.name) + "/messages", { method: "POST", body: msg });
      replace(out, h("p", { class: "ok", "data-testid": "produce-result" }, `Written at offset ${r.offset} of partition ${r.partition}.`));
    } catch (e) {
      replace(out, errorBox(e));
    }
  });
  body.append(form);
}
