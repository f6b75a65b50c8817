// histoscope: the frame a chart is drawn in: a card's panel and its sizes, the count scale
// (linear or log), the value axis along the bottom and the step labels down the left.

import { formatValue, niceTicks, svgElement } from "./format.js";

// A card's panel, in the units of its viewBox: about `ticks` value ticks, marks `tick` long
// with their labels `label` below the axis, and at most `steps` step labels.
export const PANEL = { width: 400, left: 46, right: 14, top: 18, bottom: 24, ticks: 4, tick: 4, label: 15, steps: 2 };

export function plotWidth(box) {
  return box.width - box.left - box.right;
}

// Fraction (0 to 1) of the axis a count reaches; on a log axis counts below `floor` sit at 0.
export function countLevel(count, top, log) {
  if (!(top > 0) || !(count > 0)) return 0;
  if (!log) return Math.min(1, count / top);
  const floor = top >= 10 ? 1 : top / 1000;
  if (count <= floor) return 0;
  return Math.min(1, Math.log10(count / floor) / Math.log10(top / floor));
}

export function topCount(rows) {
  let top = 0;
  for (const row of rows) for (const c of row) if (c > top) top = c;
  return top;
}

// A card's panel of `run`, read by a screen reader as an image called `label`.
export function panel(run, label, height, title) {
  const svg = svgElement("svg", {
    viewBox: "0 0 " + PANEL.width + " " + height, class: "panel", "data-run": run,
    role: "img", "aria-label": label,
  });
  const text = svgElement("text", { x: PANEL.width - PANEL.right, y: 12, "text-anchor": "end", class: "panel-title" }, svg);
  text.textContent = title === undefined ? run : title;
  return svg;
}

// Up to `most` of `count` positions, evenly spread, the first and the last among them.
export function spread(count, most) {
  const shown = Math.min(count, most);
  if (shown < 2) return shown ? [0] : [];
  const positions = [];
  for (let k = 0; k < shown; k++) positions.push(Math.round((k * (count - 1)) / (shown - 1)));
  return [...new Set(positions)];
}

// Tick labels near an end are anchored inward so none is clipped at the panel's edge.
function anchorFor(x, box) {
  if (x - box.left < 24) return "start";
  if (box.width - box.right - x < 24) return "end";
  return "middle";
}

// The axis line along the bottom of `box`'s plot, in a group its labels go into.
export function axisLine(svg, bottom, box) {
  const group = svgElement("g", { class: "axis", "aria-hidden": "true" }, svg);
  svgElement("line", { x1: box.left, x2: box.width - box.right, y1: bottom, y2: bottom }, group);
  return group;
}

export function valueTick(group, box, x, bottom, text) {
  svgElement("line", { x1: x, x2: x, y1: bottom, y2: bottom + box.tick }, group);
  const label = svgElement("text", { x, y: bottom + box.label, "text-anchor": anchorFor(x, box), class: "tick" }, group);
  label.textContent = text;
}

// Round values from `lo` to `hi` along the bottom. `whole`: ticks at whole numbers only, as
// steps are, so a range of a few steps is not labelled 9, 9, 10, 10.
export function valueAxis(svg, lo, hi, bottom, format, whole, box = PANEL) {
  const group = axisLine(svg, bottom, box);
  const x = (v) => box.left + ((v - lo) / (hi - lo || 1)) * plotWidth(box);
  for (const v of niceTicks(lo, hi, box.ticks).filter((t) => !whole || Number.isInteger(t))) {
    valueTick(group, box, x(v), bottom, (format || formatValue)(v));
  }
  return group;
}

export function leftLabel(group, y, text, box = PANEL) {
  const label = svgElement("text", { x: box.left - 5, y: y + 4, "text-anchor": "end" }, group);
  label.textContent = text;
}
