// A topic's Messages tab: every partition merged by timestamp (or one partition), from the newest, the
// earliest, an offset or a time; search by key, value or header (on the broker, over a bounded scan);
// a live tail that polls for what came since.
import { api, enc } from "../api.js";
import { badge, bytes, errorBox, h, num, refreshMs, replace, table, time } from "../dom.js";

const MAX_ROWS = 500; // the live tail keeps this many rows, dropping the oldest

// A rendered field as text: JSON from its exact text when the broker sent one (integers beyond 2^53),
// else from the parsed value; text and hex as they are.
export function fieldText(f, indent) {
  if (f.format !== "json") return f.data;
  if (f.exact !== undefined) return f.exact;
  return JSON.stringify(f.data, null, indent);
}

function rendered(f) {
  if (f === null || f === undefined) return h("span", { class: "muted" }, "null");
  return h("div", { class: "field" }, h("pre", { class: "value " + f.format }, fieldText(f, 2)),
    h("span", { class: "fmt" }, f.format + (f.truncated ? `, first 64 KiB of ${bytes(f.size)}` : "")));
}

function headerList(headers) {
  if (!headers.length) return "";
  return h("ul", { class: "headers" }, headers.map((x) => h("li", {}, h("code", {}, x.key), ": ",
    x.value === null ? h("span", { class: "muted" }, "null")
      : h("code", { class: "header-value " + x.value.format }, fieldText(x.value)))));
}

export function messages(body, t, ctx) {
  const partition = h("select", { "data-testid": "browse-partition" }, h("option", { value: "" }, "All partitions"),
    Array.from({ length: t.partitions }, (_, i) => h("option", { value: String(i) }, "Partition " + i)));
  const mode = h("select", { "data-testid": "browse-mode" },
    h("option", { value: "newest" }, "Newest"), h("option", { value: "earliest" }, "Earliest"),
    h("option", { value: "offset" }, "From offset"), h("option", { value: "timestamp" }, "From time"));
  const offset = h("input", { type: "number", min: 0, value: "0", "data-testid": "browse-offset" });
  const when = h("input", { type: "datetime-local", step: 1, "data-testid": "browse-time" });
  const limit = h("input", { type: "number", min: 1, max: 500, value: "50", "data-testid": "browse-limit" });
  const format = h("select", { "data-testid": "browse-format" }, ["auto", "text", "json", "hex"].map((f) => h("option", { value: f }, f)));
  const searchIn = h("select", { "data-testid": "search-in" },
    h("option", { value: "q" }, "Key, value or headers"), h("option", { value: "key" }, "Key"),
    h("option", { value: "value" }, "Value"), h("option", { value: "header" }, "Header (name or name=text)"));
  const search = h("input", { type: "search", placeholder: "contains… (case-insensitive)", "data-testid": "search-text" });
  const maxScan = h("input", { type: "number", min: 1, max: 100000, value: "10000", "data-testid": "search-max-scan" });
  const live = h("input", { type: "checkbox", "data-testid": "browse-live" });
  const status = h("div");
  const results = h("div");
  let rows = [];
  let cursor = null;
  let timer = null;
  let generation = 0; // a new Load makes the answers of older requests moot

  const query = () => {
    const q = new URLSearchParams({ limit: limit.value, format: format.value });
    if (partition.value !== "") q.set("partition", partition.value);
    if (search.value.trim()) {
      q.set(searchIn.value, search.value.trim());
      q.set("max_scan", maxScan.value);
    }
    return q;
  };
  const draw = (r, all) => {
    const columns = [
      all ? { label: "Partition", cell: (m) => String(m.partition), class: "num" } : null,
      { label: "Offset", cell: (m) => String(m.offset), class: "num" },
      { label: "Timestamp", cell: (m) => time(m.timestamp), class: "msg-time" },
      { label: "Key", cell: (m) => rendered(m.key), class: "msg-key" },
      { label: "Value", cell: (m) => rendered(m.value), class: "msg-value" },
      { label: "Headers", cell: (m) => headerList(m.headers), class: "msg-headers" },
    ].filter(Boolean);
    const parts = r.partitions.filter((p) => !p.error);
    const more = parts.some((p) => p.next_offset < p.end_offset);
    const where = all ? `from ${parts.length} partition(s), by timestamp`
      : `from offset ${parts.length ? parts[0].from_offset : "–"} · partition offsets ` +
        (parts.length ? `${parts[0].start_offset}..${parts[0].end_offset}` : "–");
    const filters = Object.entries(r.filters).map(([k, v]) => `${k} contains "${v}"`).join(", ");
    replace(results,
      h("p", { class: "muted", "data-testid": "browse-summary" },
        `${rows.length} message(s) ${where}` + (filters ? ` · ${filters}, ${num(r.scanned)} scanned` : "")),
      r.scan_limited ? h("p", { class: "banner-inline", "data-testid": "scan-limited" }, badge("scan limit", "warn"),
        r.newest ? ` Searched the newest ${num(r.scanned)} records only (at most ${num(r.max_scan)} per search): ` +
          "start from Earliest or a time to search older ones."
          : ` Stopped after looking at ${num(r.scanned)} records (at most ${num(r.max_scan)} per search): ` +
          "Next page searches on from there.") : null,
      r.partitions.filter((p) => p.error).map((p) => h("p", { class: "muted" }, badge(p.error, "warn"),
        ` partition ${p.partition} is not led by this broker: not shown.`)),
      table(columns, rows, { empty: "No messages at this position.", testid: "messages" }),
      more && !timer ? h("button", { type: "button", "data-testid": "browse-next", onclick: () => load(cursor) }, "Next page") : null);
  };
  const load = async (from) => {
    const mine = ++generation;
    const q = query();
    if (from !== undefined) q.set("cursor", from);
    else if (mode.value === "earliest") q.set("position", "earliest");
    else if (mode.value === "offset") {
      if (partition.value === "") { replace(results, errorBox({ code: "INVALID_REQUEST", message: "pick a partition to start from an offset" })); return; }
      q.set("offset", offset.value);
    } else if (mode.value === "timestamp") {
      const ms = new Date(when.value).getTime();
      if (!when.value || Number.isNaN(ms)) { replace(results, errorBox({ code: "INVALID_REQUEST", message: "pick a time" })); return; }
      q.set("timestamp", String(ms));
    }
    try {
      const r = await api(`/topics/${enc(t.name)}/messages?${q}`);
      if (mine !== generation) return;
      rows = r.messages;
      cursor = r.cursor;
      follow();
      draw(r, partition.value === "");
    } catch (e) {
      replace(results, errorBox(e));
    }
  };
  // The live tail: ask for what came since the last answer's cursor, append it, keep the newest rows.
  const poll = async () => {
    const mine = generation;
    const q = query();
    q.set("cursor", cursor);
    q.set("limit", "500");
    try {
      const r = await api(`/topics/${enc(t.name)}/messages?${q}`);
      if (mine !== generation || !timer) return;
      rows = rows.concat(r.messages).slice(-MAX_ROWS);
      cursor = r.cursor;
      replace(status, liveNote());
      draw(r, partition.value === "");
    } catch (e) {
      replace(status, liveNote(), errorBox(e));
    }
    if (mine === generation && timer) timer = setTimeout(poll, refreshMs(ctx));
  };
  const follow = () => {
    clearTimeout(timer);
    timer = null;
    if (live.checked && cursor !== null) timer = setTimeout(poll, refreshMs(ctx));
    replace(status, live.checked ? liveNote() : null);
  };
  const liveNote = () => h("p", { class: "ok", "data-testid": "live-status" },
    "Live: new messages appear below as they arrive (the newest ", String(MAX_ROWS), " kept).");
  live.addEventListener("change", () => (cursor === null ? load() : follow()));
  const form = h("form", { class: "form" },
    h("div", { class: "row" },
      h("label", {}, "Partition", partition), h("label", {}, "Start", mode), h("label", {}, "Offset", offset),
      h("label", {}, "Time", when), h("label", {}, "Limit", limit), h("label", {}, "Show as", format)),
    h("div", { class: "row" },
      h("label", {}, "Search in", searchIn), h("label", { class: "grow" }, "Text", search),
      h("label", {}, "Scan at most", maxScan),
      h("label", { class: "check" }, h("span", {}, "Live tail"), live),
      h("button", { type: "submit", "data-testid": "browse-load" }, "Load")));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  body.append(h("div", { class: "panel" }, form, status, results));
  return () => { generation++; clearTimeout(timer); timer = null; };
}
