// Topics: the list with a search box, and creating a topic.
import { api, enc } from "../api.js";
import { badge, bytes, confirmAction, errorBox, h, num, parsePairs, replace, table, toast } from "../dom.js";

export async function render(main, _params, ctx) {
  const list = h("div", { class: "panel-body" });
  const search = h("input", { type: "search", placeholder: "Search topics", "data-testid": "topic-search",
    value: sessionStorage.getItem("topic-search") || "" });
  const showInternal = h("input", { type: "checkbox", id: "show-internal" });
  let timer = null;
  const load = async () => {
    sessionStorage.setItem("topic-search", search.value);
    try {
      const q = "?search=" + enc(search.value) + "&internal=" + showInternal.checked;
      const { topics } = await api("/topics" + q);
      replace(list, table([
        { label: "Topic", cell: (t) => h("a", { href: "#/topics/" + enc(t.name), "data-testid": "topic-link" }, t.name,
          t.internal ? [" ", badge("internal")] : []) },
        { label: "Partitions", cell: (t) => num(t.partitions), class: "num" },
        { label: "Replication", cell: (t) => num(t.replication_factor), class: "num" },
        { label: "Messages", cell: (t) => num(t.messages), class: "num" },
        { label: "Size", cell: (t) => bytes(t.size_bytes), class: "num" },
        { label: "Under-replicated", cell: (t) => t.under_replicated ? badge(num(t.under_replicated), "warn") : "0", class: "num" },
      ], topics, { empty: search.value ? "No topic matches." : "No topics yet.", testid: "topics" }));
    } catch (e) {
      replace(list, errorBox(e));
    }
  };
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(load, 200); });
  showInternal.addEventListener("change", load);
  main.append(h("h1", {}, "Topics"),
    h("div", { class: "toolbar" }, search, h("label", {}, showInternal, " internal topics")),
    h("section", { class: "panel" }, list),
    createForm(ctx, load));
  await load();
  return () => clearTimeout(timer);
}

function createForm(ctx, reload) {
  const name = h("input", { name: "name", required: true, pattern: "[a-zA-Z0-9._-]+", maxlength: 249,
    placeholder: "orders", "data-testid": "new-topic-name" });
  const partitions = h("input", { name: "partitions", type: "number", min: 1, value: "1", "data-testid": "new-topic-partitions" });
  const rf = h("input", { name: "replication_factor", type: "number", min: 1, value: "1", "data-testid": "new-topic-rf" });
  const configs = h("textarea", { name: "configs", rows: 3, placeholder: "retention.ms=86400000\ncleanup.policy=compact",
    "data-testid": "new-topic-configs" });
  const out = h("div");
  const disabled = ctx.read_only;
  const form = h("form", { class: "panel form", "data-testid": "create-topic" },
    h("h2", {}, "Create a topic"),
    disabled ? h("p", { class: "muted" }, "Read-only console: creating topics is disabled.") : null,
    h("div", { class: "row" },
      h("label", {}, "Name", name), h("label", {}, "Partitions", partitions), h("label", {}, "Replication factor", rf)),
    h("label", {}, "Configs (key=value per line, optional)", configs),
    h("div", {}, h("button", { type: "submit", disabled, "data-testid": "create-topic-submit" }, "Create topic")),
    out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    replace(out);
    let body;
    try {
      body = { name: name.value.trim(), partitions: Number(partitions.value), replication_factor: Number(rf.value),
        configs: parsePairs(configs.value) };
    } catch (e) {
      replace(out, errorBox({ code: "INVALID_CONFIG", message: e.message }));
      return;
    }
    const detail = h("p", {}, "Create topic ", h("strong", {}, body.name), ` with ${body.partitions} partition(s), ` +
      `replication factor ${body.replication_factor}` + (Object.keys(body.configs).length ? ` and ${Object.keys(body.configs).length} config(s)` : "") + "?");
    if (!(await confirmAction("Create topic", detail, "Create"))) return;
    try {
      await api("/topics", { method: "POST", body });
      toast("Topic " + body.name + " created");
      location.hash = "#/topics/" + enc(body.name);
    } catch (e) {
      replace(out, errorBox(e));
      reload();
    }
  });
  return form;
}
