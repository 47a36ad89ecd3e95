// Users: the broker's SCRAM users and their mechanisms (DescribeUserScramCredentials), read-only.
import { api } from "../api.js";
import { errorBox, h, num, replace, table } from "../dom.js";

export async function render(main) {
  const holder = h("section", { class: "panel" });
  main.append(h("h1", {}, "Users"), holder);
  try {
    const { users } = await api("/users");
    replace(holder, table([
      { label: "User", cell: (u) => u.user },
      { label: "SCRAM mechanisms", cell: (u) => u.credentials.map((c) => c.mechanism).join(", ") },
      { label: "Iterations", cell: (u) => u.credentials.map((c) => num(c.iterations)).join(", "), class: "num" },
    ], users, { empty: "No SCRAM users.", testid: "users" }));
  } catch (e) {
    replace(holder, errorBox(e));
  }
}
