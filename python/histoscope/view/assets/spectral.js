// histoscope: a spectrum's figures over steps, drawn beside its card (a key spectrum/<name>,
// as watch(spectral=True) logs it): each shown run's α, with the band WeightWatcher's
// authors publish for well-trained layers (2 to 6) shaded as context, not as a verdict, and
// its stable rank. Each panel is a focusable image whose name describes it; every value is
// in a table, the text alternative.

import { formatValue, niceTicks, svgElement } from "./format.js";
import { runColour, runDash } from "./colours.js";
import { PANEL, leftLabel, panel, plotWidth, valueAxis } from "./axes.js";
import { stepText } from "./ridgeline.js";

const PLOT_WIDTH = plotWidth(PANEL);
const HEIGHT = 150;
const NAMES = { alpha: "α", stable_rank: "stable rank" };
const BAND_NAME = "WeightWatcher's published band for well-trained layers";

// `prefix`: the first word of a spectrum's key, the core's (the page's vocabulary).
export function isSpectrum(tag, prefix) {
  return Boolean(prefix) && tag.startsWith(prefix);
}

// The section holding both panels and the table; null where no shown run logged a figure.
export function drawSpectralTrend(tag, answer, label) {
  if (!answer || !answer.runs.length) return null;
  const section = document.createElement("section");
  section.className = "spectral";
  section.setAttribute("aria-label", "Spectral figures of " + tag + " over steps");
  const [low, high] = answer.band;
  for (const figure of answer.figures) {
    const runs = answer.runs.filter((r) => r[figure].length);
    if (runs.length) section.appendChild(figurePanel(tag, figure, runs, figure === "alpha" ? [low, high] : null, label));
  }
  const note = document.createElement("p");
  note.className = "spectral-note";
  note.textContent = "Shaded: α from " + low + " to " + high + ", " + BAND_NAME + "; context for reading the layer, not a verdict.";
  section.append(note, table(tag, answer, label));
  return section;
}

function figurePanel(tag, figure, runs, band, label) {
  const name = NAMES[figure] || figure;
  const points = runs.flatMap((r) => r[figure]);
  const steps = points.map((p) => p[0]);
  let lo = Math.min(...points.map((p) => p[1])), hi = Math.max(...points.map((p) => p[1]));
  if (band) { lo = Math.min(lo, band[0]); hi = Math.max(hi, band[1]); }
  if (lo === hi) { lo -= 0.5; hi += 0.5; }
  const first = Math.min(...steps), last = Math.max(...steps);
  const range = first === last ? [first - 0.5, last + 0.5] : [first, last];
  const bottom = HEIGHT - PANEL.bottom;
  const plot = bottom - PANEL.top;
  const x = (s) => PANEL.left + ((s - range[0]) / (range[1] - range[0])) * PLOT_WIDTH;
  const y = (v) => bottom - ((v - lo) / (hi - lo)) * plot;
  const svg = panel("", describe(tag, name, runs, figure, band, label), HEIGHT, name + " over steps");
  svg.classList.add("spectral-panel");
  svg.setAttribute("tabindex", "0");
  svg.dataset.figure = figure;
  if (band) {
    svgElement("rect", { x: PANEL.left, width: PLOT_WIDTH, y: y(band[1]), height: y(band[0]) - y(band[1]),
      class: "spectral-band", "data-band": band.join(" to ") }, svg);
  }
  const axis = valueAxis(svg, range[0], range[1], bottom, stepText, true);
  for (const t of niceTicks(lo, hi, 3)) if (t >= lo && t <= hi) leftLabel(axis, y(t), formatValue(t));
  const title = svgElement("text", { class: "axis-title", "text-anchor": "middle",
    transform: "translate(12 " + (PANEL.top + plot / 2) + ") rotate(-90)" }, axis);
  title.textContent = name;
  for (const run of runs) {
    const d = run[figure].map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join("");
    const line = svgElement("path", { d, class: "spectral-line", "data-run": run.run }, svg);
    line.style.stroke = runColour(run.run);
    if (runDash(run.run)) line.style.strokeDasharray = runDash(run.run);
    for (const [step, value] of run[figure]) {
      svgElement("circle", { cx: x(step), cy: y(value), r: 2, class: "spectral-point" }, svg).style.fill = runColour(run.run);
    }
  }
  return svg;
}

// What a screen reader says for a panel: per run, where the figure went, and for α how
// many of its steps lie inside the band.
function describe(tag, name, runs, figure, band, label) {
  const parts = runs.map((run) => {
    const values = run[figure];
    const [s0, v0] = values[0], [s1, v1] = values[values.length - 1];
    let text = "run " + label(run.run) + ": " + formatValue(v0) + " at step " + s0;
    if (values.length > 1) text += " to " + formatValue(v1) + " at step " + s1;
    if (band) {
      const inside = values.filter(([, v]) => v >= band[0] && v <= band[1]).length;
      text += ", inside " + band[0] + " to " + band[1] + " at " + inside + " of " + values.length + " steps";
    }
    return text;
  });
  const context = band ? ". Shaded: " + BAND_NAME + ", " + band[0] + " to " + band[1] + ", context only" : "";
  return name + " of " + tag + " over steps; " + parts.join("; ") + context;
}

function table(tag, answer, label) {
  const details = document.createElement("details");
  details.className = "spectral-details";
  const summary = document.createElement("summary");
  summary.textContent = "Spectral figures as a table";
  const wrap = document.createElement("div");
  wrap.className = "spectral-wrap";
  wrap.tabIndex = 0;
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", "Spectral figures of " + tag);
  const grid = document.createElement("table");
  grid.className = "spectral-table";
  grid.createCaption().textContent = "α and stable rank of " + tag + " by run and step";
  const head = grid.createTHead().insertRow();
  for (const text of ["Run", "Step"].concat(answer.figures.map((f) => NAMES[f] || f))) {
    const cell = document.createElement("th");
    cell.scope = "col";
    cell.textContent = text[0].toUpperCase() + text.slice(1);
    head.appendChild(cell);
  }
  const body = grid.createTBody();
  for (const run of answer.runs) {
    const byStep = new Map();
    answer.figures.forEach((figure, i) => {
      for (const [step, value] of run[figure]) {
        if (!byStep.has(step)) byStep.set(step, answer.figures.map(() => null));
        byStep.get(step)[i] = value;
      }
    });
    for (const step of [...byStep.keys()].sort((a, b) => a - b)) {
      const row = body.insertRow();
      const name = document.createElement("th");
      name.scope = "row";
      name.textContent = label(run.run);
      row.append(name);
      row.insertCell().textContent = String(step);
      for (const value of byStep.get(step)) row.insertCell().textContent = value === null ? "not logged" : formatValue(value);
    }
  }
  wrap.appendChild(grid);
  details.append(summary, wrap);
  return details;
}
