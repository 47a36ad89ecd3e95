// The login page (console.authentication=sasl): a SASL user's name and password, checked by the broker
// against its SCRAM credentials; on success the broker sets the session cookie and the app starts over.
import { api } from "../api.js";
import { errorBox, h, replace } from "../dom.js";

export function render(main, onDone) {
  const user = h("input", { name: "username", autocomplete: "username", required: true, "data-testid": "login-user" });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true,
    "data-testid": "login-password" });
  const status = h("div");
  const form = h("form", { class: "form panel login", "data-testid": "login-form" },
    h("h1", {}, "Log in"),
    h("p", { class: "muted" }, "This console requires a SASL user of the broker."),
    h("label", {}, "User name", user),
    h("label", {}, "Password", password),
    status,
    h("button", { type: "submit", "data-testid": "login-submit" }, "Log in"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    replace(status);
    try {
      await api("/login", { method: "POST", body: { username: user.value, password: password.value } });
    } catch (e) {
      password.value = "";
      replace(status, errorBox(e));
      return;
    }
    password.value = "";
    onDone();
  });
  replace(main, form);
  user.focus();
}
