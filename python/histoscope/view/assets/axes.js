// histoscope: the frame a chart is drawn in: a card's panel and its sizes, the count scale
// (linear or log), the value axis along the bottom and the step labels down the left.

import { formatValue, niceTicks, svgElement } from "./format.js";
import { elide } from "./names.js";

// A card's panel, in the units of its viewBox, which a card of a 1400-pixel-wide page draws
// at about a pixel a unit (so its 11-unit labels read as 11-pixel text): the run's name
// along the top, about `ticks` value ticks along the bottom, marks `tick` long with their
// labels `label` below the axis, and labels of steps or values down the left.
export const PANEL = { width: 320, left: 56, right: 12, top: 24, bottom: 26, ticks: 4, tick: 4, label: 16 };

// Roughly how wide a character of the panel's 12-unit title is, to fit names in their room.
const TITLE_CHAR = 6.6;

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

// A card's panel of `run`, read by a screen reader as an image called `label` (which says
// the run's full name). Along its top: a swatch of the run's `colour`, if given, and its
// `title`, elided in the middle to fit beside `aside` (drawn at the right), the full name
// on hover.
export function panel(run, label, height, title, colour, aside) {
  const svg = svgElement("svg", {
    viewBox: "0 0 " + PANEL.width + " " + height, class: "panel", "data-run": run,
    role: "img", "aria-label": label,
  });
  let x = 4;
  if (colour) {
    const swatch = svgElement("rect", { x, y: 5, width: 10, height: 10, rx: 2, class: "swatch" }, svg);
    swatch.style.fill = colour;
    x += 15;
  }
  const right = aside ? svgElement("text", { x: PANEL.width - PANEL.right, y: 14, "text-anchor": "end", class: "panel-aside" }, svg) : null;
  if (right) right.textContent = aside;
  const room = PANEL.width - PANEL.right - x - (aside ? aside.length * TITLE_CHAR + 10 : 0);
  const text = svgElement("text", { x, y: 14, class: "panel-title" }, svg);
  const full = title === undefined ? run : title;
  text.textContent = elide(full, Math.max(4, Math.floor(room / TITLE_CHAR)));
  if (text.textContent !== full) svgElement("title", {}, text).textContent = full;
  return svg;
}

// Round steps to label a ridgeline's steps by: whole numbers, at least three where three
// steps or more are drawn (fewer are each labelled), inside the steps drawn.
export function stepTicks(steps) {
  if (steps.length < 3) return [...new Set(steps)];
  const lo = steps[0], hi = steps[steps.length - 1];
  for (let want = 4; want <= 12; want++) {
    const ticks = niceTicks(lo, hi, want).filter((t) => Number.isInteger(t) && t >= lo && t <= hi);
    if (ticks.length >= 3) return ticks;
  }
  return [lo, steps[steps.length >> 1], hi];
}

// Where `step` falls among the (sorted) `steps` drawn, as a fractional position: 2.5 is
// halfway between the third and the fourth.
export function positionOf(steps, step) {
  if (steps.length < 2 || step <= steps[0]) return 0;
  for (let i = 1; i < steps.length; i++) {
    if (step <= steps[i]) return i - 1 + (step - steps[i - 1]) / (steps[i] - steps[i - 1] || 1);
  }
  return steps.length - 1;
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
