// histoscope: numbers, ticks, colours, sections and the URL state, shared by the viewer and the report.

export const SVG_NS = "http://www.w3.org/2000/svg";

export function formatValue(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "none";
  if (!Number.isFinite(x)) return x > 0 ? "infinity" : "minus infinity";
  const size = Math.abs(x);
  if (size !== 0 && (size >= 1e5 || size < 1e-3)) return x.toExponential(2);
  return String(Number(x.toPrecision(3)));
}

// "Nice" tick values over [lo, hi]: multiples of 1, 2 or 5 times a power of ten, about
// `count` of them, so the axis reads -8, -4, 0, 4, 8 rather than the data's raw extremes.
export function niceTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const rough = (hi - lo) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(rough)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= rough) || 10 * power;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  }
  return ticks;
}

export function svgElement(name, attributes, parent) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
}

const hues = new Map();

// A run's hue, fixed by the order runs are first seen (golden-angle steps around the wheel).
export function runHue(run) {
  if (!hues.has(run)) hues.set(run, Math.round((hues.size * 137.508 + 210) % 360));
  return hues.get(run);
}

export function runColour(run, lightness) {
  return "hsl(" + runHue(run) + " 75% " + (lightness || "var(--run-lightness)") + ")";
}

// Viridis, a colour-blind-safe scale that stays ordered in greyscale; 0 dark blue to 1 yellow.
const VIRIDIS = [[68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];

export function viridis(level) {
  const x = Math.min(1, Math.max(0, level)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  return VIRIDIS[i].map((c, k) => Math.round(c + (VIRIDIS[i + 1][k] - c) * f));
}

export function rgb(triple) {
  return "rgb(" + triple.join(" ") + ")";
}

// A glob (`*` any run of characters, `?` one) as an anchored regular expression.
export function globToRegExp(glob) {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp("^" + body + "$");
}

// Where a key goes: the section `define_metric` declared (the last matching declaration
// wins), else the prefix before its first "/"; and whether it was declared hidden.
export function placeKey(tag, layout) {
  let section = tag.includes("/") ? tag.slice(0, tag.indexOf("/")) : "(top level)";
  let hidden = false;
  for (const declared of layout) {
    if (!declared.regexp) declared.regexp = globToRegExp(declared.pattern);
    if (!declared.regexp.test(tag)) continue;
    if (declared.section) section = declared.section;
    hidden = Boolean(declared.hidden);
  }
  return { section, hidden };
}

// The filter as typed: a regular expression when it is one, else a plain substring; case
// is ignored either way.
export function keyMatcher(text) {
  if (!text) return () => true;
  try {
    const pattern = new RegExp(text, "i");
    return (tag) => pattern.test(tag);
  } catch (error) {
    const lower = text.toLowerCase();
    return (tag) => tag.toLowerCase().includes(lower);
  }
}

// The view state kept in the URL's fragment, so a view can be bookmarked and shared, from
// a server or from a report opened as a file.
export function readUrlState() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const number = (name) => (params.has(name) && params.get(name) !== "" && Number.isFinite(Number(params.get(name)))
    ? Number(params.get(name)) : null);
  return {
    filter: params.get("filter") || "",
    runs: params.has("runs") ? params.get("runs").split(",").filter(Boolean) : null,
    step: number("step"),
    view: params.get("view"),
    log: params.get("log") === "1",
    from: number("from"),
    to: number("to"),
  };
}

export function writeUrlState(state) {
  const params = new URLSearchParams();
  if (state.filter) params.set("filter", state.filter);
  params.set("runs", [...state.shown].join(","));
  if (state.step !== null && !state.following) params.set("step", String(state.step));
  params.set("view", state.view);
  if (state.log) params.set("log", "1");
  if (state.from !== null) params.set("from", String(state.from));
  if (state.to !== null) params.set("to", String(state.to));
  const hash = "#" + params.toString();
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// The last index of `steps` (sorted) at or before `step`, -1 if none.
export function positionAt(steps, step) {
  let lo = 0, hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] <= step) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
