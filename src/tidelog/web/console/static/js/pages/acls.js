// ACLs: every ACL of the authorizer (DescribeAcls), read-only.
import { api } from "../api.js";
import { badge, errorBox, h, replace, table } from "../dom.js";

export async function render(main) {
  const holder = h("section", { class: "panel" });
  main.append(h("h1", {}, "ACLs"), holder);
  try {
    const { authorizer, acls } = await api("/acls");
    if (!authorizer) {
      replace(holder, h("p", { class: "muted" }, "The broker has no authorizer (authorizer.class.name): no ACLs apply."));
      return;
    }
    replace(holder, table([
      { label: "Principal", cell: (a) => a.principal },
      { label: "Permission", cell: (a) => badge(a.permission, a.permission === "ALLOW" ? "good" : "warn") },
      { label: "Operation", cell: (a) => a.operation },
      { label: "Resource", cell: (a) => a.resource_type + ":" + a.resource_name },
      { label: "Pattern", cell: (a) => a.pattern_type },
      { label: "Host", cell: (a) => a.host },
    ], acls, { empty: "No ACLs.", testid: "acls" }));
  } catch (e) {
    replace(holder, errorBox(e));
  }
}
