// histoscope: one section's grid of the overview, drawn: a row per key (or per group of
// keys, past about sixty), labelled with the key's name as text, a cell per step coloured
// by a statistic, a step axis below with round ticks, and each row's findings marked by a
// triangle and a word. A group's row holds, at each step, the worst of its keys' cells.

import { formatValue, niceTicks, rgb, svgElement, viridis } from "./format.js";
import { elide, keysUnder } from "./names.js";
import { positionOf } from "./axes.js";
import { stepText } from "./ridgeline.js";

export const ROW_PX = 18; // a row is a line of text high, so each has its label beside it
const PLOT_PX = 190; // the cells' width, whatever the number of steps
const LABEL_CHARS = 16; // the label column's width, in characters (16ch in viewer.css)
const AXIS_PX = 22;

// What a group's cell shows: the largest value of its keys at that step (the largest in
// size, for the mean), and which key holds it.
export function worstOf(values, stat) {
  let worst = null, at = -1;
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) return;
    const size = stat === "mean" ? Math.abs(v) : v;
    if (worst === null || size > worst) { worst = size; at = i; }
  });
  return { value: at < 0 ? null : values[at], at };
}

// Colour levels (0 to 1) of a section's values: on a log scale when they span more than two
// orders of magnitude, as spreads and gradients of a deep network do.
export function levels(values) {
  const finite = values.filter((v) => v !== null && Number.isFinite(v));
  const positive = finite.filter((v) => v > 0);
  let lo = Math.min(...finite), hi = Math.max(...finite);
  const log = positive.length === finite.length && positive.length > 0 && hi / lo > 100;
  if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
  const level = (v) => {
    if (v === null || !Number.isFinite(v)) return null;
    const x = log ? Math.log10(v) : v;
    return hi > lo ? (x - lo) / (hi - lo) : 0.5;
  };
  return { level, log, lo: finite.length ? Math.min(...finite) : null, hi: finite.length ? Math.max(...finite) : null };
}

// The rows shown of a section's tree: every top-level row, and the rows of each group in
// `open` (group labels), indented under it. A group row's `values` are its worst cells.
export function visibleRows(tree, open, answer, findingsOf) {
  const out = [];
  const visit = (nodes, depth, path) => {
    for (const node of nodes) {
      if (node.group === undefined) {
        out.push({ kind: "key", tag: node.tag, label: node.label, depth, values: answer.rows[node.tag] || [],
          findings: findingsOf(node.tag) });
        continue;
      }
      const id = path + "/" + node.group;
      const keys = keysUnder(node);
      const columns = answer.steps.map((step, c) => worstOf(keys.map((k) => (answer.rows[k.tag] || [])[c] ?? null), answer.stat));
      out.push({ kind: "group", id, label: node.group, depth, keys, open: open.has(id),
        values: columns.map((w) => w.value), worst: columns.map((w) => (w.at < 0 ? null : keys[w.at].tag)),
        findings: keys.flatMap((k) => findingsOf(k.tag)) });
      if (open.has(id)) visit(node.rows, depth + 1, id);
    }
  };
  visit(tree, 0, "");
  return out;
}

// A row's label: a triangle for a group (pointing down when open), the name elided to
// fit, a finding's mark and word; screen readers and hovering get the full name.
function labelOf(row) {
  const item = document.createElement("div");
  item.className = "overview-label " + row.kind;
  item.style.paddingLeft = row.depth * 0.8 + "em";
  const full = row.kind === "group" ? row.label + " (" + row.keys.length + " keys)" : row.tag;
  item.title = full + (row.findings.length ? "; " + row.findings.map((f) => f.kind + " (" + f.severity + ")").join(", ") : "");
  const marks = row.findings.length ? 8 : 0;
  const count = row.kind === "group" ? " (" + row.keys.length + ")" : "";
  const shown = document.createElement("span");
  shown.setAttribute("aria-hidden", "true");
  shown.textContent = (row.kind === "group" ? (row.open ? "\u25BE " : "\u25B8 ") : "") +
    elide(row.label, LABEL_CHARS - marks - count.length - row.depth - (row.kind === "group" ? 2 : 0)) + count;
  const heard = document.createElement("span");
  heard.className = "visually-hidden";
  heard.textContent = full;
  item.append(shown, heard);
  if (row.findings.length) {
    const mark = document.createElement("span");
    mark.className = "row-finding";
    const worst = row.findings[0];
    mark.textContent = "\u25B2 " + (row.kind === "group" ? row.findings.length : worst.severity);
    item.appendChild(mark);
  }
  return item;
}

// The section's block: heading, colour legend, labels beside the cells, the step axis.
export function drawBlock(section, answer, rows, scale) {
  const block = document.createElement("div");
  block.className = "overview-block";
  block.dataset.section = section.name;
  const heading = document.createElement("h3");
  heading.textContent = section.name + " ";
  const size = document.createElement("span");
  size.className = "muted";
  size.textContent = section.tags.length + (section.tags.length === 1 ? " key" : " keys");
  heading.appendChild(size);
  const node = document.createElement("div");
  node.className = "overview-grid";
  node.tabIndex = 0;
  node.setAttribute("role", "application");
  node.setAttribute("aria-roledescription", "overview grid");
  node.dataset.section = section.name;
  const body = document.createElement("div");
  body.className = "overview-body";
  const labels = document.createElement("div");
  labels.className = "overview-labels";
  const plot = document.createElement("div");
  plot.className = "overview-plot";
  const canvas = document.createElement("canvas");
  canvas.setAttribute("aria-hidden", "true");
  const cursor = document.createElement("div");
  cursor.className = "overview-cursor";
  cursor.hidden = true;
  plot.append(canvas, cursor, stepAxis(answer.steps));
  body.append(labels, plot);
  node.append(body);
  block.append(heading, legendOf(scale), node);
  const grid = { block, node, labels, canvas, cursor, section, rows, scale };
  paint(grid, answer);
  return grid;
}

// The cells, a canvas pixel each, stretched to the plot's size; the labels beside them.
export function paint(grid, answer) {
  const { canvas, rows, scale } = grid;
  const steps = answer.steps.length;
  canvas.width = Math.max(1, steps);
  canvas.height = Math.max(1, rows.length);
  canvas.style.width = PLOT_PX + "px";
  canvas.style.height = rows.length * ROW_PX + "px";
  const context = canvas.getContext("2d");
  const image = context.createImageData(canvas.width, canvas.height);
  const grey = [128, 128, 128]; // before a key's first step; the legend says so
  rows.forEach((row, r) => row.values.forEach((v, c) => {
    const level = scale.level(v);
    image.data.set([...(level === null ? grey : viridis(level)), 255], 4 * (r * canvas.width + c));
  }));
  context.putImageData(image, 0, 0);
  grid.labels.replaceChildren(...rows.map(labelOf));
}

// The cursor's box over cell (`row`, `col`), shown while the grid has the focus.
export function placeCursor(grid, row, col, steps, shown) {
  const width = PLOT_PX / Math.max(1, steps);
  Object.assign(grid.cursor.style, { left: col * width + "px", top: row * ROW_PX + "px",
    width: width + "px", height: ROW_PX + "px" });
  grid.cursor.hidden = !shown;
  grid.node.dataset.row = String(row);
  grid.node.dataset.col = String(col);
  [...grid.labels.children].forEach((label, i) => label.classList.toggle("current", shown && i === row));
}

// The cell under a pointer at (`x`, `y`) pixels from the plot's corner.
export function cellAt(grid, x, y, steps) {
  return {
    row: Math.min(grid.rows.length - 1, Math.max(0, Math.floor(y / ROW_PX))),
    col: Math.min(steps - 1, Math.max(0, Math.floor((x / PLOT_PX) * steps))),
  };
}

// Round steps under the cells, each at its step's column.
function stepAxis(steps) {
  const svg = svgElement("svg", { class: "overview-axis", viewBox: "0 0 " + (PLOT_PX + 24) + " " + AXIS_PX,
    width: PLOT_PX + 24, height: AXIS_PX, "aria-hidden": "true" });
  if (!steps.length) return svg;
  const width = PLOT_PX / steps.length;
  // A few columns are each labelled; more, by round steps.
  const ticks = steps.length <= 6 ? steps : niceTicks(steps[0], steps[steps.length - 1], 4).filter(Number.isInteger);
  for (const step of ticks) {
    if (step < steps[0] || step > steps[steps.length - 1]) continue;
    const x = (positionOf(steps, step) + 0.5) * width;
    svgElement("line", { x1: x, x2: x, y1: 0, y2: 4 }, svg);
    const text = svgElement("text", { x, y: 15, "text-anchor": "middle" }, svg);
    text.textContent = stepText(step);
  }
  return svg;
}

// The colour scale: its lowest value, ten swatches, its highest; the statistic is named
// by the overview's "Colour by" and in each grid's accessible name.
function legendOf(scale) {
  const box = document.createElement("div");
  box.className = "overview-legend";
  const low = document.createElement("span");
  low.textContent = formatValue(scale.lo);
  const svg = svgElement("svg", { viewBox: "0 0 80 10", width: 80, height: 10, "aria-hidden": "true" });
  for (let i = 0; i < 10; i++) svgElement("rect", { x: i * 8, y: 0, width: 8.5, height: 10, fill: rgb(viridis(i / 9)) }, svg);
  const high = document.createElement("span");
  high.textContent = formatValue(scale.hi) + (scale.log ? " (log scale)" : "");
  box.append(low, svg, high);
  return box;
}
