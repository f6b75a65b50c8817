// histoscope: drawing a card's other panels (the overlay of runs, the heatmap, and the
// percentile bands over steps) as SVG; the ridgeline is ridgeline.js's.

import { formatValue, niceTicks, svgElement, viridis, rgb } from "./format.js";
import { runColour, runDash } from "./colours.js";
import { PANEL, countLevel, leftLabel, panel, plotWidth, topCount, valueAxis } from "./axes.js";
import { shapePath, stepText } from "./ridgeline.js";

const PLOT_WIDTH = plotWidth(PANEL);
export const BP_NAMES = ["minimum", "6.68th percentile", "15.87th percentile", "30.85th percentile",
  "median", "69.15th percentile", "84.13th percentile", "93.32nd percentile", "maximum"];

// The most runs an overlay draws on one panel; more would hide each other.
export const OVERLAID = 8;

// Every shown run's counts at the chosen step on the same bins (the first OVERLAID of
// them), one outline per run in its colour and dash pattern.
export function drawOverlay(tag, edges, entries, view) {
  const height = 210;
  const bottom = height - PANEL.bottom;
  const plot = bottom - PANEL.top;
  const top = topCount(entries.flatMap((e) => [e.current, e.previous].filter(Boolean).map((s) => s.counts)));
  const bins = edges.length - 1;
  const edge = (i) => PANEL.left + (i / bins) * PLOT_WIDTH;
  const rise = (c) => countLevel(c, top, view.log) * plot;
  const path = shapePath(view.bars);
  const outline = (run, counts, attributes) => {
    const element = svgElement("path", {
      d: path(counts, edge, rise), transform: "translate(0 " + bottom + ")", ...attributes }, svg);
    element.style.stroke = runColour(run);
    if (runDash(run)) element.style.strokeDasharray = runDash(run);
    return element;
  };
  const steps = entries.filter((e) => e.current).map((e) => e.run + " step " + e.current.step);
  const svg = panel("", tag + ", " + entries.length + " runs at the chosen step: " + (steps.join(", ") || "no steps"), height, "");
  svg.dataset.run = entries.map((e) => e.run).join(",");
  const axis = valueAxis(svg, edges[0], edges[edges.length - 1], bottom);
  svgElement("line", { x1: PANEL.left, x2: PANEL.left, y1: PANEL.top, y2: bottom }, axis);
  leftLabel(axis, bottom, "0");
  leftLabel(axis, PANEL.top, formatValue(top));
  const title = svgElement("text", { class: "axis-title", "text-anchor": "middle",
    transform: "translate(12 " + (PANEL.top + plot / 2) + ") rotate(-90)" }, axis);
  title.textContent = view.log ? "count (log)" : "count";
  for (const entry of entries) {
    if (entry.current) {
      outline(entry.run, entry.current.counts, { class: "overlay-run current",
        "data-run": entry.run, "data-step": String(entry.current.step) });
    }
  }
  const current = entries.find((e) => e.current);
  svg.dataset.step = current ? String(current.current.step) : "";
  return { svg, x: (i) => PANEL.left + ((i + 0.5) / bins) * PLOT_WIDTH, y: (c) => bottom - rise(c) };
}

// Steps down, value bins across, colour for the count (viridis, with its legend).
export function drawHeatmap(tag, edges, entry, view) {
  const rows = entry.counts;
  const legendHeight = 30;
  const height = 200 + legendHeight;
  const bottom = height - PANEL.bottom - legendHeight;
  const plot = bottom - PANEL.top;
  const top = topCount(rows);
  const steps = entry.steps;
  const svg = panel(entry.run, tag + ", " + entry.run + ", heatmap of " + steps.length +
    " steps by " + (edges.length - 1) + " value bins, colour for the count", height,
    view.label(entry.run), runColour(entry.run), entry.current ? "step " + entry.current.step : "");
  svg.classList.add("heatmap");
  svg.dataset.steps = steps.join(" ");
  const axis = valueAxis(svg, edges[0], edges[edges.length - 1], bottom);
  const bins = edges.length - 1;
  if (rows.length) {
    const canvas = document.createElement("canvas");
    canvas.width = bins;
    canvas.height = rows.length;
    const context = canvas.getContext("2d");
    const image = context.createImageData(bins, rows.length);
    rows.forEach((counts, r) => counts.forEach((c, b) => {
      const [red, green, blue] = viridis(countLevel(c, top, view.log));
      image.data.set([red, green, blue, 255], 4 * (r * bins + b));
    }));
    context.putImageData(image, 0, 0);
    svgElement("image", { href: canvas.toDataURL(), x: PANEL.left, y: PANEL.top, width: PLOT_WIDTH,
      height: plot, preserveAspectRatio: "none", class: "cells" }, svg);
    leftLabel(axis, PANEL.top + plot / rows.length / 2, stepText(steps[0]));
    if (rows.length > 1) leftLabel(axis, bottom - plot / rows.length / 2, stepText(steps[steps.length - 1]));
    const title = svgElement("text", { class: "axis-title", "text-anchor": "middle",
      transform: "translate(12 " + (PANEL.top + plot / 2) + ") rotate(-90)" }, axis);
    title.textContent = "step";
    // The chosen step's row (the row at or before it, rows being thinned), only where the
    // chosen step falls inside the range shown.
    const current = entry.current ? entry.current.step : null;
    let row = -1;
    if (current !== null && current <= steps[steps.length - 1]) {
      steps.forEach((s, i) => { if (s <= current) row = i; });
    }
    if (row >= 0) {
      svgElement("rect", { x: PANEL.left, y: PANEL.top + (row * plot) / rows.length, width: PLOT_WIDTH,
        height: plot / rows.length, class: "chosen-row", "data-step": String(steps[row]) }, svg);
    }
  }
  legend(svg, top, view.log, height - legendHeight + 2);
  svg.dataset.step = entry.current ? String(entry.current.step) : "";
  const rowHeight = rows.length ? plot / rows.length : plot;
  return {
    svg, rows: steps,
    x: (i) => PANEL.left + ((i + 0.5) / bins) * PLOT_WIDTH,
    rowY: (r) => PANEL.top + (r + 0.5) * rowHeight,
    // Steps run down the rows: a drag across them chooses a step range (see brush.js).
    brush: steps.length > 1 && {
      axis: "y", lo: PANEL.top, hi: bottom, across: [PANEL.left, PANEL.left + PLOT_WIDTH],
      stepAt: (y) => steps[Math.max(0, Math.min(steps.length - 1, Math.floor((y - PANEL.top) / rowHeight)))],
    },
  };
}

// The colour scale's legend: ten swatches from no count to the most, labelled at both ends.
function legend(svg, top, log, y) {
  const group = svgElement("g", { class: "legend-scale", "aria-hidden": "true" }, svg);
  const width = 160, left = PANEL.left;
  for (let i = 0; i < 10; i++) {
    svgElement("rect", { x: left + (i * width) / 10, y, width: width / 10 + 0.5, height: 9,
      fill: rgb(viridis(i / 9)) }, group);
  }
  const low = svgElement("text", { x: left, y: y + 21, "text-anchor": "start" }, group);
  low.textContent = "0";
  const high = svgElement("text", { x: left + width, y: y + 21, "text-anchor": "end" }, group);
  high.textContent = formatValue(top);
  const name = svgElement("text", { x: left + width + 8, y: y + 9 }, group);
  name.textContent = log ? "count per bin (log scale)" : "count per bin";
}

function band(quantiles, steps, low, high, x, y) {
  let d = "";
  steps.forEach((step, i) => { d += (i ? "L" : "M") + x(step).toFixed(1) + "," + y(quantiles[i][high]).toFixed(1); });
  for (let i = steps.length - 1; i >= 0; i--) d += "L" + x(steps[i]).toFixed(1) + "," + y(quantiles[i][low]).toFixed(1);
  return d + "Z";
}

// TensorBoard's distributions: the median and the bands holding all, 86% and 68% of the
// values, over the steps of the chosen range.
export function drawBands(tag, series, view) {
  const height = 200;
  const bottom = height - PANEL.bottom;
  const keep = series.steps.map((s, i) => i).filter((i) =>
    (view.from === null || series.steps[i] >= view.from) && (view.to === null || series.steps[i] <= view.to));
  const steps = keep.map((i) => series.steps[i]);
  const quantiles = keep.map((i) => series.quantiles[i]);
  let lo = Infinity, hi = -Infinity;
  for (const row of quantiles) {
    if (row[0] !== null && row[0] < lo) lo = row[0];
    if (row[8] !== null && row[8] > hi) hi = row[8];
  }
  if (!(lo <= hi)) { lo = 0; hi = 1; }
  if (lo === hi) { lo -= 0.5; hi += 0.5; }
  const ticks = niceTicks(lo, hi, 3);
  const first = steps.length ? steps[0] : 0, last = steps.length ? steps[steps.length - 1] : 0;
  const range = first === last ? [first - 0.5, last + 0.5] : [first, last];
  const fill = runColour(series.run);
  const svg = panel(series.run, tag + ", " + series.run + ", distribution over steps " + first + " to " + last, height,
    view.label(series.run), fill, view.step === null ? "" : "step " + view.step);
  svg.dataset.steps = steps.join(" ");
  const plot = bottom - PANEL.top;
  const x = (s) => PANEL.left + ((s - range[0]) / (range[1] - range[0])) * PLOT_WIDTH;
  const y = (v) => bottom - (((v === null ? lo : v) - lo) / (hi - lo)) * plot;
  const axis = valueAxis(svg, range[0], range[1], bottom, stepText, true);
  for (const t of ticks) if (t >= lo && t <= hi) leftLabel(axis, y(t), formatValue(t));
  const title = svgElement("text", { class: "axis-title", "text-anchor": "middle",
    transform: "translate(12 " + (PANEL.top + plot / 2) + ") rotate(-90)" }, axis);
  title.textContent = "value";
  [[0, 8, 0.18], [1, 7, 0.28], [2, 6, 0.4]].forEach(([low, high, opacity]) => {
    const area = svgElement("path", { d: band(quantiles, steps, low, high, x, y), class: "band",
      "fill-opacity": opacity, "data-bps": BP_NAMES[low] + " to " + BP_NAMES[high] }, svg);
    area.style.fill = fill;
  });
  let median = "";
  steps.forEach((step, i) => { median += (i ? "L" : "M") + x(step).toFixed(1) + "," + y(quantiles[i][4]).toFixed(1); });
  svgElement("path", { d: median, class: "median" }, svg).style.stroke = fill;
  // The chosen step is marked where it falls inside the range shown.
  if (view.step !== null && view.step >= range[0] && view.step <= range[1]) {
    const at = x(view.step);
    svgElement("line", { x1: at, x2: at, y1: PANEL.top, y2: bottom, class: "marker" }, svg);
  }
  svg.dataset.step = String(view.step);
  // Steps run across: a drag along them chooses a step range (see brush.js).
  const stepAt = (px) => {
    const value = range[0] + ((px - PANEL.left) / PLOT_WIDTH) * (range[1] - range[0]);
    let best = steps[0];
    for (const s of steps) if (Math.abs(s - value) < Math.abs(best - value)) best = s;
    return best;
  };
  const brush = steps.length > 1 && { axis: "x", lo: PANEL.left, hi: PANEL.width - PANEL.right, across: [PANEL.top, bottom], stepAt };
  return { svg, x, y, brush };
}
