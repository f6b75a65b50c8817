// histoscope: the overview, one grid per section of keys (rows) by steps (columns), each cell
// coloured by a statistic (grid.js draws them). Arrows walk a grid and say each cell, Enter
// opens the key's card at that step or opens and closes a group of keys, S plays the row
// as sound. A canvas per section keeps a 300-layer model to a handful of page elements.

import * as a11y from "./a11y.js";
import { formatValue } from "./format.js";
import { groupRows, keyMatcher, naturalOrder, rowLabel } from "./names.js";
import { notable } from "./state.js";
import { ROW_PX, cellAt, drawBlock, levels, placeCursor, visibleRows } from "./grid.js";

// What the overview can colour its cells by (answers.OVERVIEW_STATS in view/answers.py), as the page says them.
export const OVERVIEW_STATS = {
  std: "standard deviation", absmax: "largest absolute value", zeros: "share of zeros",
  nonfinite: "nonfinite count", mean: "mean", distance: "distance to the compared run",
};

// A section of more rows than this groups them (see names.js groupRows).
export const GROUP_AT = 60;

export function makeOverview(app) {
  const { state, $ } = app;
  const container = $("overview");
  const live = document.createElement("p");
  live.id = "overview-live";
  live.className = "announcement";
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  container.after(live);
  const speak = a11y.speaker(live);
  const grids = [];
  const opened = new Map(); // the open groups of each section, by section name
  let answer = null;
  let loadedKey = "";
  let chosenByUser = false;

  function findingsOf(tag) {
    const found = state.findings.filter((f) => f.key === tag && f.run === answer.run && notable(state, f));
    return found.sort((a, b) => state.severities.indexOf(b.severity) - state.severities.indexOf(a.severity));
  }

  // What the cells are coloured by, the compared run named.
  function statName() {
    const name = OVERVIEW_STATS[answer.stat];
    return answer.against ? name.replace("the compared run", app.runLabel(answer.against)) : name;
  }

  function say(grid, message) {
    grid.last = message;
    if (state.text) speak(message);
  }

  function describe(grid) {
    const row = grid.rows[grid.row];
    const step = answer.steps[grid.col];
    const value = row.values[grid.col];
    const place = "; row " + (grid.row + 1) + " of " + grid.rows.length;
    const stat = statName();
    if (row.kind === "group") {
      const holder = row.worst[grid.col];
      return "Group " + row.label + ", " + row.keys.length + " keys, " + (row.open ? "open" : "closed") +
        ", step " + step + ", " + (answer.stat === "mean" ? "largest absolute mean " : "largest " + stat + " ") +
        formatValue(value) + (holder ? " in " + holder : "") +
        (row.findings.length ? "; " + row.findings.length + " findings" : "") + place;
    }
    return row.tag + ", step " + step + ", " + stat + " " + formatValue(value) +
      (row.findings.length ? "; finding: " + row.findings.map((f) => f.kind + " (" + f.severity + ")").join(", ") : "") + place;
  }

  function show(grid) {
    placeCursor(grid, grid.row, grid.col, answer.steps.length, grid.focused);
  }

  function move(grid, rowDelta, colDelta, absolute) {
    let row = grid.row + rowDelta, col = grid.col + colDelta;
    if (absolute === "first-step") col = 0;
    if (absolute === "last-step") col = answer.steps.length - 1;
    if (absolute === "first-row") row = 0;
    if (absolute === "last-row") row = grid.rows.length - 1;
    if (row < 0 || row >= grid.rows.length || col < 0 || col >= answer.steps.length) {
      say(grid, row < 0 ? "First row" : row >= grid.rows.length ? "Last row" : col < 0 ? "First step" : "Last step");
      if (state.sound) a11y.playEdge();
      return;
    }
    grid.row = row; grid.col = col;
    show(grid);
    say(grid, describe(grid));
    if (state.sound) {
      const level = grid.scale.level(grid.rows[row].values[col]);
      a11y.playLevel(level === null ? 0 : level, col, answer.steps.length);
    }
  }

  // The row as a run of tones, one per step, left to right.
  function playRow(grid) {
    a11y.startSound();
    const row = grid.rows[grid.row];
    row.values.forEach((v, c) => setTimeout(() => {
      const level = grid.scale.level(v);
      a11y.playLevel(level === null ? 0 : level, c, row.values.length);
    }, c * 120));
    say(grid, "Playing " + (row.kind === "group" ? "group " + row.label : row.tag) + ", " + row.values.length + " steps");
  }

  // Enter on a key: its card at the step; on a group: open or close it, the cursor staying on it.
  function enter(grid) {
    const row = grid.rows[grid.row];
    if (row.kind === "key") return app.openCard(row.tag, answer.steps[grid.col]);
    const open = opened.get(grid.section.name) || new Set();
    if (open.has(row.id)) open.delete(row.id);
    else open.add(row.id);
    opened.set(grid.section.name, open);
    drawOverview();
    const again = grids.find((g) => g.section.name === grid.section.name);
    if (!again) return;
    again.row = again.rows.findIndex((r) => r.id === row.id);
    again.col = grid.col;
    again.node.focus();
    say(again, (open.has(row.id) ? "Opened " : "Closed ") + "group " + row.label + ", " + row.keys.length + " keys; " +
      again.rows.length + " rows");
  }

  function act(grid, key) {
    const moves = {
      ArrowUp: () => move(grid, -1, 0), ArrowDown: () => move(grid, 1, 0),
      ArrowLeft: () => move(grid, 0, -1), ArrowRight: () => move(grid, 0, 1),
      Home: () => move(grid, 0, 0, "first-step"), End: () => move(grid, 0, 0, "last-step"),
      PageUp: () => move(grid, 0, 0, "first-row"), PageDown: () => move(grid, 0, 0, "last-row"),
      Enter: () => enter(grid), " ": () => enter(grid),
    };
    const mode = a11y.modeKey(key);
    if (key in moves) moves[key]();
    else if (mode === "sound") playRow(grid);
    else if (mode === "text" || mode === "braille") a11y.toggle(state, mode, speak, {});
    else return false;
    return true;
  }

  function wire(grid) {
    const { node, canvas } = grid;
    node.setAttribute("aria-label", grid.section.name + " overview of run " + answer.run + ": " + grid.rows.length +
      " rows by " + answer.steps.length + " steps, coloured by " + statName() +
      ". Arrows move, Enter opens a card or a group, S plays the row.");
    node.addEventListener("focus", () => { grid.focused = true; show(grid); say(grid, describe(grid)); });
    node.addEventListener("blur", () => { grid.focused = false; show(grid); });
    node.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (act(grid, event.key)) event.preventDefault();
    });
    const pick = (event, x, y) => {
      const cell = cellAt(grid, x, y, answer.steps.length);
      grid.row = cell.row;
      grid.col = cell.col;
      node.focus();
      enter(grid);
    };
    canvas.addEventListener("click", (event) => {
      const box = canvas.getBoundingClientRect();
      pick(event, event.clientX - box.left, event.clientY - box.top);
    });
    grid.labels.addEventListener("click", (event) => {
      const label = event.target.closest(".overview-label");
      if (!label) return;
      grid.col = answer.steps.length - 1;
      pick(event, 0, [...grid.labels.children].indexOf(label) * ROW_PX + 1);
    });
  }

  // One grid per section with its shown keys, in the order of the page.
  function render(sections) {
    // A grid being walked keeps its place (and the focus) when new steps redraw the overview.
    const walked = grids.find((g) => g.node.contains(app.root.activeElement));
    const keep = walked && { section: walked.section.name, row: rowKey(walked.rows[walked.row]),
      step: answer && answer.steps[walked.col] };
    grids.length = 0;
    if (!answer) return container.replaceChildren();
    const blocks = sections.filter((s) => s.tags.length).map((section) => {
      const items = section.tags.map((tag) => ({ tag, label: rowLabel(tag, section.name) }))
        .sort((a, b) => naturalOrder(a.label, b.label));
      // Keys put in an order are listed in it, one row each: a group would hide the order.
      const byTag = new Map(items.map((item) => [item.tag, item]));
      const tree = state.ranking ? app.orderKeys(section.tags).map((tag) => byTag.get(tag)) : groupRows(items, GROUP_AT);
      const rows = visibleRows(tree, opened.get(section.name) || new Set(), answer, findingsOf);
      const scale = levels(section.tags.flatMap((tag) => answer.rows[tag] || []));
      const grid = drawBlock(section, answer, rows, scale);
      Object.assign(grid, { row: 0, col: Math.max(0, answer.steps.length - 1), focused: false, last: "" });
      wire(grid);
      grids.push(grid);
      return grid.block;
    });
    container.replaceChildren(...blocks);
    const again = keep && grids.find((g) => g.section.name === keep.section);
    if (again) {
      again.row = Math.max(0, again.rows.findIndex((r) => rowKey(r) === keep.row));
      const col = answer.steps.indexOf(keep.step);
      again.col = col >= 0 ? col : again.col;
      again.node.focus();
    }
  }

  function rowKey(row) {
    return row ? (row.kind === "group" ? row.id : row.tag) : "";
  }

  // The run the overview opens on: the shown run with the most keys, unless one was chosen.
  function pickRun() {
    const select = $("overview-run");
    if (chosenByUser && app.shownRuns().includes(select.value)) return;
    const counts = new Map();
    for (const runs of state.tagRuns.values()) for (const run of runs) counts.set(run, (counts.get(run) || 0) + 1);
    let best = null;
    for (const run of app.shownRuns()) if (best === null || (counts.get(run) || 0) > (counts.get(best) || 0)) best = run;
    if (best !== null) select.value = best;
  }

  // The chosen run's overview, asked for again when the run, the statistic or the run's
  // data changed (or when `force`d), then drawn.
  async function loadOverview(force) {
    pickRun();
    const run = $("overview-run").value || app.shownRuns()[0];
    // The report holds no distances step by step (source.overviewDistance false).
    const pair = app.comparedPair && app.source.overviewDistance !== false ? app.comparedPair() : null;
    const choice = $("overview-stat");
    choice.querySelector('option[value="distance"]').disabled = !pair;
    if (choice.value === "distance" && !pair) choice.value = "std";
    const stat = choice.value;
    const against = stat === "distance" ? pair[1] : "";
    const key = run + "|" + stat + "|" + against + "|" + JSON.stringify(state.versions[run]) +
      (against ? JSON.stringify(state.versions[against]) : "");
    if (!force && key === loadedKey) return;
    loadedKey = key;
    answer = run ? await app.source.overview(run, stat, against) : null;
    drawOverview();
    if (app.loadOrder) await app.loadOrder(false);
  }

  // The grids of the keys the filter lets through, section by section.
  function drawOverview() {
    const matches = keyMatcher(state.filter);
    render(state.sections.map((s) => ({ name: s.name, tags: s.shown.filter(matches) })));
  }

  $("overview-run").addEventListener("change", () => { chosenByUser = true; loadOverview(true); });
  $("overview-stat").addEventListener("change", () => loadOverview(true));
  $("overview-stat").replaceChildren(...Object.entries(OVERVIEW_STATS).map(([value, name]) => new Option(name, value)));

  return { loadOverview, drawOverview };
}
