// The console's JSON API (docs/console.md): every call goes through here, errors become ApiError.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch("/api/v1" + path, init);
  } catch (e) {
    throw new ApiError(0, "UNREACHABLE", "the broker does not answer (" + e.message + ")");
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.status === 401 && data && data.code === "AUTHENTICATION_REQUIRED") {
    location.reload();  // the session ended (logout elsewhere, expiry, broker restart): back to the login page
  }
  if (!response.ok) {
    throw new ApiError(response.status, (data && data.code) || "HTTP_" + response.status,
      (data && data.error) || response.statusText);
  }
  return data;
}

export const enc = encodeURIComponent;
