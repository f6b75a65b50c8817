// histoscope: in compare mode, a card's difference panel: the compared run's share of
// values in each shared bin minus the first run's, at the chosen step, with the bins that
// gained and lost most said in words beside it.

import { formatValue, svgElement } from "./format.js";
import { PANEL, leftLabel, panel, plotWidth, valueAxis } from "./axes.js";

const PLOT_WIDTH = plotWidth(PANEL);

// Each bin's share of the step's counts, in percentage points; null when nothing was counted.
export function shares(counts) {
  const total = counts.reduce((sum, c) => sum + c, 0);
  return total > 0 ? counts.map((c) => (100 * c) / total) : null;
}

// `b`'s shares minus `a`'s, bin by bin, and the bins that gained and lost the most.
export function difference(a, b) {
  const first = shares(a), second = shares(b);
  if (!first || !second || first.length !== second.length) return null;
  const change = second.map((s, i) => s - first[i]);
  let gain = 0, loss = 0;
  change.forEach((d, i) => {
    if (d > change[gain]) gain = i;
    if (d < change[loss]) loss = i;
  });
  return { change, gain, loss };
}

function binText(edges, i) {
  return "[" + formatValue(edges[i]) + ", " + formatValue(edges[i + 1]) + ")";
}

function points(d) {
  return (d > 0 ? "+" : d < 0 ? "−" : "") + Math.abs(d).toFixed(1) + " points";
}

// What the panel shows, in one sentence: the runs, their steps and the largest changes.
export function differenceText(edges, a, b, label) {
  const found = difference(a.current.counts, b.current.counts);
  const runs = label(b.run) + " at step " + b.current.step + " minus " + label(a.run) + " at step " + a.current.step;
  if (!found) return runs + ": no values to compare.";
  const { change, gain, loss } = found;
  if (change[gain] <= 0 && change[loss] >= 0) return runs + ": the same share in every bin.";
  return runs + ": most gained in " + binText(edges, gain) + " (" + points(change[gain]) +
    "), most lost in " + binText(edges, loss) + " (" + points(change[loss]) + ").";
}

// Bars up for bins `b` holds a larger share of, down for smaller, around a zero line.
export function drawDifference(tag, edges, a, b, label) {
  const found = difference(a.current.counts, b.current.counts);
  const text = differenceText(edges, a, b, label);
  const height = 150, bottom = height - PANEL.bottom;
  const middle = PANEL.top + (bottom - PANEL.top) / 2;
  const svg = panel("", tag + ", difference: " + text, height, "Difference, " + label(b.run) + " − " + label(a.run));
  svg.classList.add("difference");
  svg.dataset.run = a.run + "," + b.run;
  const axis = valueAxis(svg, edges[0], edges[edges.length - 1], bottom);
  svgElement("line", { x1: PANEL.left, x2: PANEL.left + PLOT_WIDTH, y1: middle, y2: middle, class: "zero-line" }, axis);
  if (found) {
    const most = Math.max(...found.change.map(Math.abs)) || 1;
    const half = middle - PANEL.top;
    leftLabel(axis, PANEL.top, "+" + formatValue(most));
    leftLabel(axis, middle, "0");
    leftLabel(axis, bottom, "−" + formatValue(most));
    const bins = edges.length - 1;
    found.change.forEach((d, i) => {
      if (d === 0) return;
      const rise = (Math.abs(d) / most) * half;
      svgElement("rect", {
        x: PANEL.left + (i / bins) * PLOT_WIDTH, width: Math.max(PLOT_WIDTH / bins, 0.5),
        y: d > 0 ? middle - rise : middle, height: rise, class: d > 0 ? "gain" : "loss",
      }, svg);
    });
  }
  const note = document.createElement("p");
  note.className = "difference-note";
  note.textContent = text;
  return [svg, note];
}
