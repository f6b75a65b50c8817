// histoscope: the keys of a card. Figures (ridgeline, overlay, heatmap): Left and Right walk
// the shared bins of the chosen step, Up and Down the steps as they run down the figure
// (Down to a later one). Over steps: Left and Right walk the steps, Up and Down the
// percentiles. N and P change run; T, S, B, R and H as on every page. Runs are spoken by
// the part of their name that tells them apart.

import * as a11y from "./a11y.js";
import { formatValue, svgElement } from "./format.js";
import { BP_NAMES } from "./draw.js";
import { positionAt } from "./state.js";

export function makeKeys(app) {
  const { state } = app;

  function announce(card, message) {
    card.last = message;
    if (state.text) card.speak(message);
  }

  function currentRun(card) {
    const runs = app.cardRuns(card);
    if (!runs.length) return null;
    card.runIndex = Math.min(card.runIndex, runs.length - 1);
    return runs[card.runIndex];
  }

  function entryOf(card, run) {
    return card.data && card.data.runs.find((entry) => entry.run === run);
  }

  function describeBin(card) {
    const run = currentRun(card);
    const entry = run && entryOf(card, run);
    const name = run && app.runSpoken(run);
    if (!entry || !entry.current) return run ? name + ": no histogram at step " + state.step : "No runs shown";
    const counts = entry.current.counts;
    const edges = card.data.edges;
    card.bin = Math.min(card.bin, counts.length - 1);
    const total = counts.reduce((sum, c) => sum + c, 0);
    const count = counts[card.bin];
    return name + ", step " + entry.current.step + ", " + formatValue(edges[card.bin]) + " to " +
      formatValue(edges[card.bin + 1]) + ", count " + a11y.numberFormat.format(count) + ", " +
      a11y.percent(count, total) + " of the step";
  }

  function describeQuantile(card) {
    const run = currentRun(card);
    const series = run && card.series.get(run);
    const name = run && app.runSpoken(run);
    if (!series) return run ? name + ": no steps yet" : "No runs shown";
    const position = positionAt(series.steps, state.step);
    if (position < 0) return name + ": no steps before step " + state.step;
    const row = series.quantiles[position];
    return name + ", step " + series.steps[position] + ", " + BP_NAMES[card.bp] + " " + formatValue(row[card.bp]) +
      "; 68% from " + formatValue(row[2]) + " to " + formatValue(row[6]) +
      ", 86% from " + formatValue(row[1]) + " to " + formatValue(row[7]) +
      ", all from " + formatValue(row[0]) + " to " + formatValue(row[8]);
  }

  function describe(card) {
    return state.view === "steps" ? describeQuantile(card) : describeBin(card);
  }

  function drawCursor(card) {
    for (const old of card.chart.querySelectorAll(".cursor")) old.remove();
    const run = currentRun(card);
    if (!run) return;
    if (state.view === "steps") {
      const svg = card.chart.querySelector('svg[data-run="' + CSS.escape(run) + '"]');
      if (svg) svg.setAttribute("data-bp", String(card.bp));
      return;
    }
    const entry = entryOf(card, run);
    const shape = card.geometry.get(state.view === "overlay" ? "overlay" : run);
    if (!entry || !entry.current || !shape) return;
    const count = entry.current.counts[card.bin];
    const cy = state.view === "heatmap"
      ? shape.rowY(Math.max(0, positionAt(shape.rows, entry.current.step)))
      : shape.y(count);
    svgElement("circle", { class: "cursor", cx: shape.x(card.bin).toFixed(1), cy: cy.toFixed(1), r: 4,
      "data-bin": String(card.bin), "data-run": run }, shape.svg);
  }

  function playCurrent(card) {
    if (!state.sound) return;
    const run = currentRun(card);
    const entry = run && entryOf(card, run);
    if (state.view !== "steps" && entry && entry.current) {
      const counts = entry.current.counts;
      const top = Math.max(...counts);
      a11y.playLevel(top > 0 ? counts[card.bin] / top : 0, card.bin, counts.length);
    } else {
      a11y.playLevel(card.bp / 8, card.bp, 9);
    }
  }

  function drawBraille(card) {
    const box = card.node.querySelector(".braille-box");
    box.hidden = !state.braille;
    if (!state.braille) return;
    const run = currentRun(card);
    const entry = run && entryOf(card, run);
    if (!entry || !entry.current) return;
    a11y.drawBraille(box.querySelector(".braille"), entry.current.counts, card.bin);
    box.querySelector(".braille-label").textContent = "Braille, " + app.runSpoken(run) + ", step " + entry.current.step + ":";
  }

  function show(card) {
    drawCursor(card);
    drawBraille(card);
    announce(card, describe(card));
    playCurrent(card);
  }

  function edge(card, message) {
    announce(card, message);
    if (state.sound) a11y.playEdge();
  }

  // Moves the shared step (every card follows) by `delta` of the steps logged in the shown runs.
  async function stepBy(card, delta, absolute) {
    const steps = state.steps;
    if (!steps.length) return edge(card, "No steps yet");
    const position = Math.max(0, positionAt(steps, state.step));
    const target = absolute === "first" ? 0 : absolute === "last" ? steps.length - 1 : position + delta;
    if (target < 0) return edge(card, "First step");
    if (target >= steps.length) return edge(card, "Last step");
    await app.chooseStep(steps[target]);
    show(card);
  }

  function binBy(card, delta, absolute) {
    const run = currentRun(card);
    const entry = run && entryOf(card, run);
    const count = entry && entry.current ? entry.current.counts.length : 0;
    const target = absolute === "first" ? 0 : absolute === "last" ? count - 1 : card.bin + delta;
    if (target < 0) return edge(card, "First bin");
    if (target >= count) return edge(card, "Last bin");
    card.bin = target;
    show(card);
  }

  function bpBy(card, delta, absolute) {
    const target = absolute === "first" ? 0 : absolute === "last" ? 8 : card.bp + delta;
    if (target < 0) return edge(card, "Lowest percentile");
    if (target > 8) return edge(card, "Highest percentile");
    card.bp = target;
    show(card);
  }

  function runBy(card, delta) {
    const runs = app.cardRuns(card);
    const target = card.runIndex + delta;
    if (target < 0) return edge(card, "First run");
    if (target >= runs.length) return edge(card, "Last run");
    card.runIndex = target;
    show(card);
  }

  const FIGURE_KEYS = {
    ArrowLeft: (card) => binBy(card, -1), ArrowRight: (card) => binBy(card, 1),
    ArrowUp: (card) => stepBy(card, -1), ArrowDown: (card) => stepBy(card, 1),
    Home: (card) => binBy(card, 0, "first"), End: (card) => binBy(card, 0, "last"),
    PageUp: (card) => stepBy(card, 0, "first"), PageDown: (card) => stepBy(card, 0, "last"),
  };
  const STEP_KEYS = {
    ArrowLeft: (card) => stepBy(card, -1), ArrowRight: (card) => stepBy(card, 1),
    ArrowUp: (card) => bpBy(card, 1), ArrowDown: (card) => bpBy(card, -1),
    Home: (card) => stepBy(card, 0, "first"), End: (card) => stepBy(card, 0, "last"),
    PageUp: (card) => bpBy(card, 0, "last"), PageDown: (card) => bpBy(card, 0, "first"),
  };

  function openReview(card) {
    const review = card.node.querySelector(".review");
    review.value = card.last || describe(card);
    card.node.querySelector(".review-box").hidden = false;
    review.focus();
    review.select();
  }

  function toggleKeys(card) {
    const keys = card.node.querySelector(".keys");
    keys.hidden = !keys.hidden;
    card.speak(keys.hidden ? "Keys hidden" : "Keys: " + [...keys.querySelectorAll("dt")]
      .map((dt) => dt.textContent + ", " + dt.nextElementSibling.textContent).join("; ") + ".");
  }

  function act(card, key) {
    const moves = state.view === "steps" ? STEP_KEYS : FIGURE_KEYS;
    const mode = a11y.modeKey(key);
    if (key in moves) moves[key](card);
    else if (key === "n" || key === "N") runBy(card, 1);
    else if (key === "p" || key === "P") runBy(card, -1);
    else if (a11y.toggle(state, mode, card.speak, { sound: () => playCurrent(card), braille: () => drawBraille(card) })) return true;
    else if (mode === "review") openReview(card);
    else if (mode === "keys") toggleKeys(card);
    else return false;
    return true;
  }

  return { act, describe, drawCursor, drawBraille };
}
