// A small SVG line chart for the live figures: time on x, values on y, one line per series.
const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#2b7bb9", "#d9822b", "#3d9970", "#b10dc9", "#e0474c", "#7f8c8d"];

function svg(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const short = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });

// series: [{name, points: [[timeMs, value], ...]}]
export function lineChart(series, { width = 1200, height = 240, unit = "", testid } = {}) {
  const pad = { left: 52, right: 12, top: 12, bottom: 26 };
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img" });
  if (testid) root.setAttribute("data-testid", testid);
  const all = series.flatMap((s) => s.points);
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  if (all.length < 2) {
    root.append(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "chart-empty" },
      "Collecting samples…"));
    return root;
  }
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]));
  const yMax = niceMax(Math.max(...all.map((p) => p[1])));
  const x = (t) => pad.left + (t1 === t0 ? plotW : ((t - t0) / (t1 - t0)) * plotW);
  const y = (v) => pad.top + plotH - (v / yMax) * plotH;
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    root.append(svg("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), class: "chart-grid" }));
    root.append(svg("text", { x: pad.left - 6, y: y(v) + 4, "text-anchor": "end", class: "chart-label" },
      short.format(v) + unit));
  }
  for (const [t, anchor] of [[t0, "start"], [(t0 + t1) / 2, "middle"], [t1, "end"]]) {
    root.append(svg("text", { x: x(t), y: height - 8, "text-anchor": anchor, class: "chart-label" }, clock(t)));
  }
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const color = COLORS[i % COLORS.length];
    const d = s.points.map(([t, v], j) => (j ? "L" : "M") + x(t).toFixed(1) + " " + y(v).toFixed(1)).join(" ");
    root.append(svg("path", { d, fill: "none", stroke: color, "stroke-width": 2, class: "chart-line" }));
    const [lt, lv] = s.points[s.points.length - 1];
    root.append(svg("circle", { cx: x(lt), cy: y(lv), r: 3, fill: color }));
  });
  if (series.length > 1) {
    let lx = pad.left + 8;
    series.forEach((s, i) => {
      root.append(svg("rect", { x: lx, y: pad.top, width: 10, height: 10, fill: COLORS[i % COLORS.length] }));
      const label = svg("text", { x: lx + 14, y: pad.top + 9, class: "chart-label" }, s.name);
      root.append(label);
      lx += 24 + s.name.length * 7;
    });
  }
  return root;
}
