// One subject: its versions, a version's schema, and a line diff between two versions.
import { api, enc } from "../api.js";
import { badge, errorBox, h, replace, table } from "../dom.js";

function diffLine(line) {
  const kind = line.startsWith("+") && !line.startsWith("+++") ? "diff-add"
    : line.startsWith("-") && !line.startsWith("---") ? "diff-del" : line.startsWith("@@") ? "diff-hunk" : "";
  return h("span", { class: kind }, line + "\n");
}

export async function render(main, [subject]) {
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/schemas" }, "Schemas"), " / "));
  let info;
  try {
    info = await api("/schemas/" + enc(subject));
  } catch (e) {
    main.append(h("h1", {}, subject), errorBox(e));
    return;
  }
  const versions = info.versions;
  const latest = versions[versions.length - 1];
  const shown = h("pre", { class: "schema", "data-testid": "schema-text" });
  const options = (selected) => versions.map((v) => h("option", { value: v.version, selected: v === selected },
    "version " + v.version));
  const view = h("select", { "data-testid": "schema-version" }, options(latest));
  const from = h("select", { "data-testid": "diff-from" }, options(versions[Math.max(0, versions.length - 2)]));
  const to = h("select", { "data-testid": "diff-to" }, options(latest));
  const diff = h("pre", { class: "schema diff", "data-testid": "schema-diff" });
  const showVersion = () => {
    const v = versions.find((x) => String(x.version) === view.value);
    replace(shown, v.text);
  };
  const showDiff = async () => {
    try {
      const answer = await api(`/schemas/${enc(subject)}/diff?from=${from.value}&to=${to.value}`);
      replace(diff, answer.diff.length ? answer.diff.map(diffLine) : "The two versions are the same text.");
    } catch (e) {
      replace(diff, errorBox(e));
    }
  };
  view.addEventListener("change", showVersion);
  from.addEventListener("change", showDiff);
  to.addEventListener("change", showDiff);
  main.append(
    h("div", { class: "title-row inline" }, h("h1", { "data-testid": "subject-title" }, subject),
      badge(latest.type, "info")),
    h("p", { class: "muted" }, "compatibility " + info.compatibility),
    h("section", { class: "panel" }, h("h2", {}, "Versions"), table([
      { label: "Version", cell: (v) => String(v.version), class: "num" },
      { label: "Id", cell: (v) => String(v.id), class: "num" },
      { label: "Type", cell: (v) => v.type },
      { label: "References", cell: (v) => v.references.map((r) => `${r.name} (${r.subject} v${r.version})`).join(", ") },
    ], versions, { testid: "schema-versions" })),
    h("section", { class: "panel" }, h("div", { class: "toolbar" }, h("label", {}, "Schema of ", view)), shown),
    h("section", { class: "panel" }, h("h2", {}, "Diff"),
      h("div", { class: "toolbar" }, h("label", {}, "from ", from), h("label", {}, " to ", to)), diff));
  showVersion();
  await showDiff();
}
