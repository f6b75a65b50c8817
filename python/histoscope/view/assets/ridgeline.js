// histoscope: the ridgeline, drawn by this one module on every page: a card's panel in the
// viewer and the report, and the figure of one chart's page (render, save_html and show).
// As TensorBoard's offset histograms: one ridge per step, the step's density as a smooth
// filled area with a light outline, the earliest step at the back (the top) in the
// faintest shade and each later one nearer and stronger, down to the latest in front.
// The nearer ones cover those behind them. The bins as flat bars are one option away.

import { svgElement } from "./format.js";
import { runColour, shade } from "./colours.js";
import {
  PANEL, axisLine, countLevel, leftLabel, panel, plotWidth, positionOf, spread, stepTicks, topCount,
  valueAxis, valueTick,
} from "./axes.js";

// The most steps a card's ridgeline draws: about seven pixels apart, so each reads as a
// ridge (the heatmap draws more, a row each).
export const RIDGES = 24;

// A card's ridgeline has 182 units of plot (at least 160 pixels in a card of a 1400-pixel
// page); the figure of a chart's page 444. A ridge rises at most `ridgeShare` of the plot.
const CARD = { ...PANEL, height: 232, ridgeShare: 0.4 };
const FIGURE = { width: 800, height: 520, left: 84, right: 24, top: 16, bottom: 60,
  ticks: 6, tick: 6, label: 22, ridgeShare: 0.3 };

// The back ridge's share of its colour; the front one has all of it. On a dark page the
// back ridges keep more of it, or they would sink into the card.
const DARK = matchMedia("(prefers-color-scheme: dark)");
const backShare = () => (DARK.matches ? 45 : 22);

// A tenth of a unit is finer than a pixel; "-0" is written "0".
function px(value) {
  return String(Math.round(value * 10) / 10);
}

// Where the ridges of `rows` steps over `bins` equal bins stand in `box`, and how far a
// count rises above its ridge's baseline (`level` maps it from 0 to 1). Step `i` (the
// earliest is 0) stands at `baseOf(i)`, the earliest highest, at the back.
function layout(box, rows, bins, level) {
  const bottom = box.height - box.bottom;
  const plot = bottom - box.top;
  const ridge = rows > 1 ? plot * box.ridgeShare : plot;
  const gap = rows > 1 ? (plot - ridge) / (rows - 1) : 0;
  const binWidth = plotWidth(box) / Math.max(bins, 1);
  return {
    bottom,
    baseOf: (i) => box.top + ridge + i * gap,
    edge: (i) => box.left + i * binWidth,
    centre: (i) => box.left + (i + 0.5) * binWidth,
    rise: (count) => level(count) * ridge,
  };
}

// The outline of one histogram as bars over equal bins standing on y = 0, to be moved
// onto a baseline: `edge(i)` is where bin i starts, `rise(count)` how high a count reaches.
export function ridgePath(counts, edge, rise) {
  let d = "M" + px(edge(0)) + " 0";
  counts.forEach((count, i) => { d += "V" + px(-rise(count)) + "H" + px(edge(i + 1)); });
  return d + "V0Z";
}

// The same histogram as a smooth density: a curve through each bin's count at the bin's
// centre, from 0 at the first edge to 0 at the last. The curve is a monotone cubic
// (Fritsch and Butland's tangents), so it never dips below zero or bulges past a count:
// every peak it shows is a bin's.
export function densityPath(counts, edge, rise) {
  const xs = [edge(0)], ys = [0];
  counts.forEach((count, i) => { xs.push((edge(i) + edge(i + 1)) / 2); ys.push(-rise(count)); });
  xs.push(edge(counts.length));
  ys.push(0);
  const slopes = xs.slice(1).map((x, i) => (ys[i + 1] - ys[i]) / (x - xs[i]));
  const tangents = xs.map((x, i) => {
    if (i === 0) return slopes[0];
    if (i === xs.length - 1) return slopes[i - 1];
    const [a, b] = [slopes[i - 1], slopes[i]];
    if (a * b <= 0) return 0;
    const [h0, h1] = [x - xs[i - 1], xs[i + 1] - x];
    return (3 * (h0 + h1)) / ((2 * h1 + h0) / a + (h1 + 2 * h0) / b);
  });
  let d = "M" + px(xs[0]) + " 0";
  for (let i = 0; i + 1 < xs.length; i++) {
    const third = (xs[i + 1] - xs[i]) / 3;
    d += "C" + px(xs[i] + third) + " " + px(ys[i] + tangents[i] * third) + " " +
      px(xs[i + 1] - third) + " " + px(ys[i + 1] - tangents[i + 1] * third) + " " +
      px(xs[i + 1]) + " " + px(ys[i + 1]);
  }
  return d + "Z";
}

// The path of `counts` in the shape asked for: bars of the bins, or the smooth density.
export function shapePath(bars) {
  return bars ? ridgePath : densityPath;
}

function ridge(parent, d, base, attributes) {
  return svgElement("path", { d, transform: "translate(0 " + px(base) + ")", ...attributes }, parent);
}

// Every step's ridge, the farthest (the earliest, at the top) first, each in `colour` at a
// share growing from the back to the front over `background`; returns the paths by step.
function drawRidges(parent, rows, steps, place, path, colour, background) {
  const paths = [];
  rows.forEach((counts, i) => {
    const back = backShare();
    const share = rows.length > 1 ? back + ((100 - back) * i) / (rows.length - 1) : 100;
    const element = ridge(parent, path(counts, place.edge, place.rise), place.baseOf(i),
      { class: "ridge", "data-step": String(steps[i]) });
    element.style.fill = shade(colour, share, background);
    paths[i] = element;
  });
  return paths;
}

// Round steps down the left, each at the height its step falls among the steps drawn, a
// tick mark beside each, and the axis's name; returns the steps labelled.
function stepAxis(axis, box, steps, baseOf, title, titleAt) {
  const ticks = stepTicks(steps);
  for (const step of ticks) {
    const y = baseOf(positionOf(steps, step));
    svgElement("line", { x1: box.left - 4, x2: box.left, y1: px(y), y2: px(y) }, axis);
    leftLabel(axis, y, stepText(step), box);
  }
  const name = svgElement("text", { class: "axis-title", transform: "translate(" + titleAt + " " +
    px((box.top + box.height - box.bottom) / 2) + ") rotate(-90)", "text-anchor": "middle" }, axis);
  name.textContent = title;
  return ticks;
}

// A step as a tick says it: 120000 as "120k", so a long run's labels fit the margin.
export function stepText(step) {
  if (Math.abs(step) >= 1e6 && step % 1e5 === 0) return step / 1e6 + "M";
  if (Math.abs(step) >= 1e4 && step % 100 === 0) return step / 1e3 + "k";
  return String(step);
}

// A card's ridgeline of one run. The chosen step is outlined where it falls among the
// steps drawn, with a mark on the step axis, and the step before it dashed.
export function drawRidgeline(tag, edges, entry, view) {
  const rows = entry.counts, steps = entry.steps;
  const current = entry.current, previous = entry.previous;
  const top = topCount(rows.concat(current ? [current.counts] : [], previous ? [previous.counts] : []));
  const place = layout(CARD, rows.length, edges.length - 1, (c) => countLevel(c, top, view.log));
  const path = shapePath(view.bars);
  const label = tag + ", " + entry.run + ", ridgeline of " + steps.length + " steps" +
    (current ? ", step " + current.step + " marked" : "");
  const colour = runColour(entry.run);
  const svg = panel(entry.run, label, CARD.height, view.label(entry.run), colour,
    current ? "step " + current.step : "");
  const axis = valueAxis(svg, edges[0], edges[edges.length - 1], place.bottom);
  drawRidges(svg, rows, steps, place, path, colour, "var(--panel)");
  let ticks = [];
  if (steps.length) ticks = stepAxis(axis, CARD, steps, place.baseOf, view.log ? "step (log count)" : "step", 12);
  svg.dataset.ticks = ticks.join(" ");
  const chosenBase = current && steps.length ? place.baseOf(positionOf(steps, current.step)) : place.bottom;
  if (previous) ridge(svg, path(previous.counts, place.edge, place.rise), chosenBase, { class: "previous", "data-step": String(previous.step) });
  if (current) {
    ridge(svg, path(current.counts, place.edge, place.rise), chosenBase, { class: "current chosen", "data-step": String(current.step) });
    // A mark in the right margin, where no label is, points at the chosen step's ridge.
    const x = CARD.width - CARD.right, y = chosenBase;
    svgElement("path", { class: "chosen-mark", d: "M" + px(x + 8) + " " + px(y - 5) + "L" + px(x + 1) + " " + px(y) +
      "L" + px(x + 8) + " " + px(y + 5) + "Z", "data-step": String(current.step) }, svg);
  }
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
  if (steps.length) stepAxis(axis, box, steps, place.baseOf, "Step", 18);
  const value = svgElement("text", { class: "axis-title", x: box.left + plotWidth(box) / 2, y: box.height - 8, "text-anchor": "middle" }, axis);
  value.textContent = "Value";
  const group = svgElement("g", { id: "ridges" }, svg);
  const paths = drawRidges(group, rows, steps, place, densityPath, "var(--ridge-line)", "var(--page)");
  return { svg, ridges: group, paths, x: place.centre, baseOf: place.baseOf, rise: place.rise };
}
