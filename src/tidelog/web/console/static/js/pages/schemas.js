// Schemas: the schema registry's subjects (docs/schema-registry.md), those the console's user may describe.
import { api, enc } from "../api.js";
import { badge, errorBox, h, replace, table } from "../dom.js";

export async function render(main) {
  const holder = h("section", { class: "panel" });
  main.append(h("h1", {}, "Schemas"), holder);
  try {
    const { subjects } = await api("/schemas");
    replace(holder, table([
      { label: "Subject", cell: (s) => h("a", { href: "#/schemas/" + enc(s.subject), "data-testid": "subject-link" },
        s.subject) },
      { label: "Versions", cell: (s) => s.versions.join(", "), class: "num" },
      { label: "Latest id", cell: (s) => String(s.latest_id), class: "num" },
      { label: "Type", cell: (s) => badge(s.type, "info") },
      { label: "Compatibility", cell: (s) => s.compatibility },
    ], subjects, { empty: "No subjects yet.", testid: "subjects" }));
  } catch (e) {
    replace(holder, errorBox(e));
  }
}
