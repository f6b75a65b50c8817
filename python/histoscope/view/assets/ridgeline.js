// histoscope: the ridgeline, drawn by this one module on every page: a card's panel in the
// viewer and the report, and the figure of one chart's page (render, save_html and show).
// One ridge per step, the step's counts as flat tops over the equal bins; the ridges are
// drawn from the farthest to the nearest, so that nearer ones cover those behind them.

import { runHue, svgElement } from "./format.js";
import { PANEL, axisLine, countLevel, leftLabel, panel, plotWidth, spread, topCount, valueAxis, valueTick } from "./axes.js";

// A card's steps run down the panel, as its heatmap's rows do: the earliest at the top, at
// the back. The figure's run up, the way Up moves the cursor: the earliest at the bottom,
// in front. A card's ridges take a share of the plot; the figure's rise `ridge` at most.
const CARD = { ...PANEL, height: 160, ridgeShare: 0.45, up: false };
const FIGURE = { width: 800, height: 500, left: 84, right: 24, top: 16, bottom: 60,
  ticks: 6, tick: 6, label: 22, steps: 6, ridge: 120, up: true };

// A tenth of a unit is finer than a pixel; "-0" is written "0".
function px(value) {
  return String(Math.round(value * 10) / 10);
}

// Where the ridges of `rows` steps over `bins` equal bins stand in `box`, and how far a
// count rises above its ridge's baseline (`level` maps it from 0 to 1).
function layout(box, rows, bins, level) {
  const bottom = box.height - box.bottom;
  const plot = bottom - box.top;
  const ridge = box.ridge || (rows > 1 ? plot * box.ridgeShare : plot);
  const gap = rows > 1 ? (plot - ridge) / (rows - 1) : 0;
  const binWidth = plotWidth(box) / Math.max(bins, 1);
  return {
    bottom,
    baseOf: box.up ? (i) => bottom - i * gap : (i) => box.top + ridge + i * gap,
    edge: (i) => box.left + i * binWidth,
    centre: (i) => box.left + (i + 0.5) * binWidth,
    rise: (count) => level(count) * ridge,
  };
}

// The outline of one histogram over equal bins standing on y = 0, to be moved onto a
// baseline: `edge(i)` is where bin i starts, `rise(count)` how high a count reaches.
export function ridgePath(counts, edge, rise) {
  let d = "M" + px(edge(0)) + " 0";
  counts.forEach((count, i) => { d += "V" + px(-rise(count)) + "H" + px(edge(i + 1)); });
  return d + "V0Z";
}

function ridge(parent, counts, place, base, attributes) {
  return svgElement("path", {
    d: ridgePath(counts, place.edge, place.rise), transform: "translate(0 " + px(base) + ")", ...attributes,
  }, parent);
}

// Every step's ridge, the farthest (highest on the page) first; returns the paths by step.
function drawRidges(parent, rows, steps, place, fill) {
  const order = rows.map((row, i) => i).sort((a, b) => place.baseOf(a) - place.baseOf(b));
  const paths = [];
  for (const i of order) {
    const colour = fill ? { fill: fill(i) } : {};
    paths[i] = ridge(parent, rows[i], place, place.baseOf(i), { class: "ridge", "data-step": String(steps[i]), ...colour });
  }
  return paths;
}

function stepLabels(axis, box, steps, baseOf) {
  for (const i of spread(steps.length, box.steps)) leftLabel(axis, baseOf(i), String(steps[i]), box);
}

// A card's ridgeline of one run, the earliest step darkest; the chosen step is drawn over
// the ridges in the accent colour and the step before it as a dashed outline.
export function drawRidgeline(tag, edges, entry, view) {
  const rows = entry.counts, steps = entry.steps;
  const current = entry.current, previous = entry.previous;
  const top = topCount(rows.concat(current ? [current.counts] : [], previous ? [previous.counts] : []));
  const place = layout(CARD, rows.length, edges.length - 1, (c) => countLevel(c, top, view.log));
  const label = tag + ", " + entry.run + ", ridgeline of " + steps.length + " steps" +
    (current ? ", step " + current.step + " marked" : "");
  const svg = panel(entry.run, label, CARD.height);
  const axis = valueAxis(svg, edges[0], edges[edges.length - 1], place.bottom);
  const hue = runHue(entry.run);
  const lightness = (i) => (rows.length > 1 ? 22 + (40 * i) / (rows.length - 1) : 40).toFixed(0);
  drawRidges(svg, rows, steps, place, (i) => "hsl(" + hue + " 60% " + lightness(i) + "%)");
  if (steps.length) {
    stepLabels(axis, CARD, steps, place.baseOf);
    const title = svgElement("text", { x: 4, y: 12 }, axis);
    title.textContent = view.log ? "step (log count)" : "step";
  }
  // The chosen step stands where its step falls between the drawn ridges.
  let chosenBase = place.bottom;
  if (current && steps.length > 1) {
    const span = steps[steps.length - 1] - steps[0] || 1;
    const at = Math.min(1, Math.max(0, (current.step - steps[0]) / span));
    chosenBase = place.baseOf(at * (steps.length - 1));
  }
  if (previous) ridge(svg, previous.counts, place, chosenBase, { class: "previous", "data-step": String(previous.step) });
  if (current) ridge(svg, current.counts, place, chosenBase, { class: "current chosen", "data-step": String(current.step) });
  svg.dataset.step = current ? String(current.step) : "";
  return { svg, x: place.centre, y: (c) => chosenBase - place.rise(c) };
}

// The figure of one chart's page: `rows` of counts, one per step of `steps`, over the equal
// bins between `edges` (null where not finite; then the bins' `labels` mark the axis). It
// is hidden from screen readers: the page's chart element speaks for it.
export function drawFigure(edges, labels, steps, rows) {
  const box = FIGURE;
  const top = topCount(rows);
  const place = layout(box, rows.length, labels.length - 1, (c) => countLevel(c, top, false));
  const svg = svgElement("svg", { viewBox: "0 0 " + box.width + " " + box.height, "aria-hidden": "true", focusable: "false" });
  const lo = edges[0], hi = edges[edges.length - 1];
  let axis;
  if (Number.isFinite(lo) && Number.isFinite(hi) && hi > lo) {
    axis = valueAxis(svg, lo, hi, place.bottom, null, false, box);
  } else {
    axis = axisLine(svg, place.bottom, box);
    for (const i of spread(labels.length, box.ticks + 1)) valueTick(axis, box, place.edge(i), place.bottom, labels[i]);
  }
  stepLabels(axis, box, steps, place.baseOf);
  const middle = (box.top + place.bottom) / 2;
  const value = svgElement("text", { class: "axis-title", x: box.left + plotWidth(box) / 2, y: box.height - 8, "text-anchor": "middle" }, axis);
  value.textContent = "Value";
  const step = svgElement("text", { class: "axis-title", transform: "translate(18 " + middle + ") rotate(-90)", "text-anchor": "middle" }, axis);
  step.textContent = "Step";
  const group = svgElement("g", { id: "ridges" }, svg);
  const paths = drawRidges(group, rows, steps, place);
  return { svg, ridges: group, paths, x: place.centre, baseOf: place.baseOf, rise: place.rise };
}
