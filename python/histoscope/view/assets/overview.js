// histoscope: the overview, one grid per section of keys (rows) by steps (columns), each cell
// coloured by a statistic; arrows walk it and say each cell, Enter opens the key's card at
// that step, S plays the row as sound. A canvas per section keeps a 300-layer model to a
// handful of page elements.

import * as a11y from "./a11y.js";
import { formatValue, viridis, rgb, svgElement } from "./format.js";
import { keyMatcher } from "./sections.js";
import { notable } from "./state.js";

// What the overview can colour its cells by (answers.OVERVIEW_STATS in view/answers.py), as the page says them.
export const OVERVIEW_STATS = {
  std: "standard deviation", absmax: "largest absolute value", zeros: "share of zeros",
  nonfinite: "nonfinite count", mean: "mean",
};

// Colour levels (0 to 1) of a section's values: on a log scale when they span more than two
// orders of magnitude, as spreads and gradients of a deep network do.
function levels(values) {
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

export function makeOverview(app) {
  const { state, $ } = app;
  const container = $("overview");
  const grids = [];
  let answer = null;
  let loadedKey = "";

  function findingsOf(tag, run) {
    return state.findings.filter((f) => f.key === tag && f.run === run && notable(state, f));
  }

  function drawGrid(grid) {
    const { canvas, tags, scale } = grid;
    const steps = answer.steps;
    const cell = Math.max(3, Math.min(14, Math.floor(360 / Math.max(1, steps.length))));
    const row = Math.max(1, Math.min(14, Math.floor(360 / Math.max(1, tags.length))));
    const gutter = 10;
    canvas.width = gutter + cell * steps.length;
    canvas.height = row * tags.length;
    grid.cell = cell; grid.row = row; grid.gutter = gutter;
    const context = canvas.getContext("2d");
    context.clearRect(0, 0, canvas.width, canvas.height);
    tags.forEach((tag, r) => {
      const values = answer.rows[tag] || [];
      values.forEach((v, c) => {
        const level = scale.level(v);
        context.fillStyle = level === null ? "#808080" : rgb(viridis(level));
        context.fillRect(gutter + c * cell, r * row, cell, row);
      });
      // A key with findings gets a dark notch in the gutter: a shape, not only a colour.
      if (findingsOf(tag, answer.run).length) {
        context.fillStyle = "#b3261e";
        context.beginPath();
        context.moveTo(0, r * row);
        context.lineTo(gutter - 2, r * row + row / 2);
        context.lineTo(0, r * row + row);
        context.fill();
      }
    });
    if (grid.focused) {
      context.strokeStyle = "#ffffff";
      context.lineWidth = 2;
      context.strokeRect(gutter + grid.col * cell + 1, grid.row_ * row + 1, cell - 2, Math.max(2, row - 2));
      context.strokeStyle = "#000000";
      context.lineWidth = 1;
      context.strokeRect(gutter + grid.col * cell, grid.row_ * row, cell, row);
    }
    grid.node.dataset.row = String(grid.row_);
    grid.node.dataset.col = String(grid.col);
  }

  function describe(grid) {
    const tag = grid.tags[grid.row_];
    const step = answer.steps[grid.col];
    const value = (answer.rows[tag] || [])[grid.col];
    const found = findingsOf(tag, answer.run);
    return tag + ", step " + step + ", " + OVERVIEW_STATS[answer.stat] + " " + formatValue(value) +
      (found.length ? "; finding: " + found.map((f) => f.kind + " (" + f.severity + ")").join(", ") : "") +
      "; key " + (grid.row_ + 1) + " of " + grid.tags.length;
  }

  function say(grid, message) {
    grid.last = message;
    if (state.text) grid.speak(message);
  }

  function move(grid, rowDelta, colDelta, absolute) {
    let row = grid.row_ + rowDelta, col = grid.col + colDelta;
    if (absolute === "first-step") col = 0;
    if (absolute === "last-step") col = answer.steps.length - 1;
    if (absolute === "first-key") row = 0;
    if (absolute === "last-key") row = grid.tags.length - 1;
    if (row < 0 || row >= grid.tags.length || col < 0 || col >= answer.steps.length) {
      say(grid, row < 0 ? "First key" : row >= grid.tags.length ? "Last key" : col < 0 ? "First step" : "Last step");
      if (state.sound) a11y.playEdge();
      return;
    }
    grid.row_ = row; grid.col = col;
    drawGrid(grid);
    say(grid, describe(grid));
    if (state.sound) {
      const level = grid.scale.level((answer.rows[grid.tags[row]] || [])[col]);
      a11y.playLevel(level === null ? 0 : level, col, answer.steps.length);
    }
  }

  // The row as a run of tones, one per step, left to right.
  function playRow(grid) {
    a11y.startSound();
    const values = answer.rows[grid.tags[grid.row_]] || [];
    values.forEach((v, c) => setTimeout(() => {
      const level = grid.scale.level(v);
      a11y.playLevel(level === null ? 0 : level, c, values.length);
    }, c * 120));
    say(grid, "Playing " + grid.tags[grid.row_] + ", " + values.length + " steps");
  }

  function act(grid, key) {
    const moves = {
      ArrowUp: () => move(grid, -1, 0), ArrowDown: () => move(grid, 1, 0),
      ArrowLeft: () => move(grid, 0, -1), ArrowRight: () => move(grid, 0, 1),
      Home: () => move(grid, 0, 0, "first-step"), End: () => move(grid, 0, 0, "last-step"),
      PageUp: () => move(grid, 0, 0, "first-key"), PageDown: () => move(grid, 0, 0, "last-key"),
      Enter: () => app.openCard(grid.tags[grid.row_], answer.steps[grid.col]),
      " ": () => app.openCard(grid.tags[grid.row_], answer.steps[grid.col]),
    };
    const mode = a11y.modeKey(key);
    if (key in moves) moves[key]();
    else if (mode === "sound") playRow(grid);
    else if (mode === "text" || mode === "braille") a11y.toggle(state, mode, grid.speak, {});
    else return false;
    return true;
  }

  function legendOf(scale, stat) {
    const box = document.createElement("div");
    box.className = "overview-legend";
    const svg = svgElement("svg", { viewBox: "0 0 150 26", "aria-hidden": "true" }, box);
    for (let i = 0; i < 10; i++) svgElement("rect", { x: i * 14, y: 2, width: 14.5, height: 10, fill: rgb(viridis(i / 9)) }, svg);
    const low = svgElement("text", { x: 0, y: 24 }, svg);
    low.textContent = formatValue(scale.lo);
    const high = svgElement("text", { x: 140, y: 24, "text-anchor": "end" }, svg);
    high.textContent = formatValue(scale.hi);
    const name = document.createElement("span");
    name.textContent = OVERVIEW_STATS[stat] + (scale.log ? " (log scale)" : "") + "; grey: not logged";
    box.appendChild(name);
    return box;
  }

  // One grid per section with its shown keys, in the order of the page.
  function render(sections) {
    // A grid being walked keeps its place (and the focus) when new steps redraw the overview.
    const walked = grids.find((g) => g.node.contains(document.activeElement));
    const keep = walked && { section: walked.node.dataset.section, tag: walked.tags[walked.row_], step: answer && answer.steps[walked.col] };
    grids.length = 0;
    if (!answer) return;
    const blocks = sections.filter((s) => s.tags.length).map((section) => {
      const block = document.createElement("div");
      block.className = "overview-block";
      const heading = document.createElement("h3");
      heading.textContent = section.name + ": " + section.tags.length + (section.tags.length === 1 ? " key" : " keys") + " by " + answer.steps.length + " steps";
      const values = section.tags.flatMap((tag) => answer.rows[tag] || []);
      const scale = levels(values);
      const node = document.createElement("div");
      node.className = "overview-grid";
      node.tabIndex = 0;
      node.setAttribute("role", "application");
      node.setAttribute("aria-roledescription", "overview grid");
      node.setAttribute("aria-label", section.name + " overview of run " + answer.run + ": " + section.tags.length +
        " keys by " + answer.steps.length + " steps, coloured by " + OVERVIEW_STATS[answer.stat] +
        ". Arrows move, Enter opens the card at that step, S plays the row.");
      node.dataset.section = section.name;
      const canvas = document.createElement("canvas");
      canvas.setAttribute("aria-hidden", "true");
      node.appendChild(canvas);
      const live = document.createElement("p");
      live.className = "announcement";
      live.setAttribute("role", "status");
      live.setAttribute("aria-live", "polite");
      const grid = { node, canvas, tags: section.tags, scale, row_: 0, col: Math.max(0, answer.steps.length - 1),
        focused: false, speak: a11y.speaker(live), last: "" };
      node.addEventListener("focus", () => { grid.focused = true; drawGrid(grid); say(grid, describe(grid)); });
      node.addEventListener("blur", () => { grid.focused = false; drawGrid(grid); });
      node.addEventListener("keydown", (event) => {
        if (event.ctrlKey || event.metaKey || event.altKey) return;
        if (act(grid, event.key)) event.preventDefault();
      });
      canvas.addEventListener("click", (event) => {
        const box = canvas.getBoundingClientRect();
        const x = ((event.clientX - box.left) / box.width) * canvas.width;
        const y = ((event.clientY - box.top) / box.height) * canvas.height;
        grid.col = Math.min(answer.steps.length - 1, Math.max(0, Math.floor((x - grid.gutter) / grid.cell)));
        grid.row_ = Math.min(grid.tags.length - 1, Math.max(0, Math.floor(y / grid.row)));
        app.openCard(grid.tags[grid.row_], answer.steps[grid.col]);
      });
      drawGrid(grid);
      grids.push(grid);
      block.append(heading, legendOf(scale, answer.stat), node, live);
      return block;
    });
    container.replaceChildren(...blocks);
    const again = keep && grids.find((g) => g.node.dataset.section === keep.section);
    if (again) {
      again.row_ = Math.max(0, again.tags.indexOf(keep.tag));
      const col = answer.steps.indexOf(keep.step);
      again.col = col >= 0 ? col : again.col;
      again.node.focus();
    }
  }

  // The chosen run's overview, asked for again when the run, the statistic or the run's
  // data changed (or when `force`d), then drawn.
  async function loadOverview(force) {
    const run = $("overview-run").value || app.shownRuns()[0];
    const stat = $("overview-stat").value;
    const key = run + "|" + stat + "|" + JSON.stringify(state.versions[run]);
    if (!force && key === loadedKey) return;
    loadedKey = key;
    answer = run ? await app.source.overview(run, stat) : null;
    drawOverview();
  }

  // The grids of the keys the filter lets through, section by section.
  function drawOverview() {
    const matches = keyMatcher(state.filter);
    render(state.sections.map((s) => ({ name: s.name, tags: s.shown.filter(matches) })));
  }

  $("overview-run").addEventListener("change", () => loadOverview(true));
  $("overview-stat").addEventListener("change", () => loadOverview(true));
  $("overview-stat").replaceChildren(...Object.entries(OVERVIEW_STATS).map(([value, name]) => new Option(name, value)));

  return { loadOverview, drawOverview };
}
