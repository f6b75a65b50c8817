// histoscope: one chart's page (render, save_html, show): its ridgeline drawn by
// ridgeline.js, as on every page, and explored by keys with speech (an ARIA live region),
// sound and braille. The data comes from the JSON block the page was written with.

import * as a11y from "./a11y.js";
import { topCount } from "./axes.js";
import { svgElement } from "./format.js";
import { drawFigure } from "./ridgeline.js";

const data = JSON.parse(document.getElementById("histoscope-data").textContent);
const steps = data.steps;
const counts = data.counts;
const labels = data.labels;
const stepCount = steps.length;
const binCount = labels.length - 1;

const chart = document.getElementById("chart");
const live = document.getElementById("announcement");
const brailleBox = document.getElementById("braille-box");
const brailleLabel = document.getElementById("braille-label");
const braille = document.getElementById("braille");
const reviewBox = document.getElementById("review-box");
const review = document.getElementById("review");
const keys = document.getElementById("keys");

const figure = drawFigure(data.edges, labels, steps, counts);
// The cursor: the point's ridge outlined in front of the others, a stem up to its count.
const cursorRidge = svgElement("path", { id: "cursor-ridge", class: "ridge-current", display: "none" }, figure.ridges);
const cursor = svgElement("g", { id: "cursor", class: "cursor", display: "none" }, figure.svg);
const stem = svgElement("line", { id: "cursor-stem" }, cursor);
const dot = svgElement("circle", { id: "cursor-dot", r: 5 }, cursor);
chart.prepend(figure.svg);

// Steps run down the figure, the earliest at the top: Down moves to a later step.
const MOVES = {
  ArrowLeft: [0, -1, "First bin"],
  ArrowRight: [0, 1, "Last bin"],
  ArrowUp: [-1, 0, "First step"],
  ArrowDown: [1, 0, "Last step"],
};
const KEYS_SPOKEN =
  "Keys: Left and Right, bins; Up and Down, earlier and later steps; Home and End, first and last bin;" +
  " Page Up and Page Down, first and last step; T text; S sound; B braille;" +
  " R review; H this list.";

const state = { step: 0, bin: 0, text: true, sound: false, braille: false, last: "" };
const speak = a11y.speaker(live);
const top = topCount(counts);

function total(step) {
  return counts[step].reduce((sum, count) => sum + count, 0);
}

function describePoint() {
  const count = counts[state.step][state.bin];
  return (
    "Step " + steps[state.step] + ", " + labels[state.bin] + " to " + labels[state.bin + 1] +
    ", count " + a11y.numberFormat.format(count) + ", " +
    a11y.percent(count, total(state.step)) + " of the step"
  );
}

function announce(message) {
  state.last = message;
  if (state.text) speak(message);
}

function drawCursor() {
  const x = figure.x(state.bin).toFixed(1);
  const base = figure.baseOf(state.step);
  const peak = (base - figure.rise(counts[state.step][state.bin])).toFixed(1);
  for (const [name, value] of [["x1", x], ["x2", x], ["y1", base.toFixed(1)], ["y2", peak]]) stem.setAttribute(name, value);
  dot.setAttribute("cx", x);
  dot.setAttribute("cy", peak);
  cursor.dataset.step = String(steps[state.step]);
  cursor.dataset.bin = String(state.bin);
  cursor.removeAttribute("display");
  const ridge = figure.paths[state.step];
  cursorRidge.setAttribute("d", ridge.getAttribute("d"));
  cursorRidge.setAttribute("transform", ridge.getAttribute("transform"));
  cursorRidge.dataset.step = String(steps[state.step]);
  cursorRidge.removeAttribute("display");
}

function drawBraille() {
  brailleBox.hidden = !state.braille;
  if (!state.braille) return;
  a11y.drawBraille(braille, counts[state.step], state.bin, "braille-cursor");
  brailleLabel.textContent = "Braille, step " + steps[state.step] + ":";
}

function playPoint() {
  if (!state.sound) return;
  a11y.playLevel(top > 0 ? counts[state.step][state.bin] / top : 0, state.bin, binCount);
}

function playEdge() {
  if (state.sound) a11y.playEdge();
}

function moveTo(step, bin) {
  state.step = step;
  state.bin = bin;
  drawCursor();
  drawBraille();
  announce(describePoint());
  playPoint();
}

function moveBy(key) {
  const [stepDelta, binDelta, edge] = MOVES[key];
  const step = state.step + stepDelta;
  const bin = state.bin + binDelta;
  if (step < 0 || step >= stepCount || bin < 0 || bin >= binCount) {
    announce(edge);
    playEdge();
  } else {
    moveTo(step, bin);
  }
}

function openReview() {
  review.value = state.last || describePoint();
  reviewBox.hidden = false;
  review.focus();
  review.select();
}

function closeReview() {
  reviewBox.hidden = true;
  chart.focus();
}

function toggleKeys() {
  keys.hidden = !keys.hidden;
  speak(keys.hidden ? "Keys hidden" : KEYS_SPOKEN);
}

function act(key) {
  const mode = a11y.modeKey(key);
  if (key in MOVES) moveBy(key);
  else if (key === "Home") moveTo(state.step, 0);
  else if (key === "End") moveTo(state.step, binCount - 1);
  else if (key === "PageUp") moveTo(0, state.bin);
  else if (key === "PageDown") moveTo(stepCount - 1, state.bin);
  else if (a11y.toggle(state, mode, speak, { sound: playPoint, braille: drawBraille })) return true;
  else if (mode === "review") openReview();
  else if (mode === "keys") toggleKeys();
  else return false;
  return true;
}

if (stepCount === 0 || binCount < 1) {
  chart.addEventListener("focus", () => speak("No data to explore"));
} else {
  chart.addEventListener("focus", drawCursor);
  chart.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (act(event.key)) event.preventDefault();
  });
  review.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      closeReview();
    }
  });
}
