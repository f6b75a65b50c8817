// histoscope: a card, the figures of one key. It is mounted (its body, keys and brush made)
// when it comes near the viewport and released when it leaves; its data is asked for a few
// cards at a time, and drawn as the chosen view with the statistics at the chosen step.

import * as a11y from "./a11y.js";
import { formatValue, svgElement } from "./format.js";
import { runColour, runDash } from "./colours.js";
import { OVERLAID, drawOverlay, drawHeatmap, drawBands } from "./draw.js";
import { RIDGES, drawRidgeline } from "./ridgeline.js";
import { drawDifference } from "./difference.js";
import { brushChart } from "./brush.js";
import { drawSpectralTrend, isSpectrum } from "./spectral.js";

const LOADING_AT_ONCE = 4;

export function makeCards(app) {
  const { state, source, $ } = app;

  function mount(card) {
    if (card.mounted) return;
    const body = $("card-template").content.firstElementChild.cloneNode(true);
    card.node.appendChild(body);
    card.body = body;
    card.chart = body.querySelector(".chart");
    card.chart.setAttribute("aria-label", card.tag + ": each shown run's histogram; arrow keys explore, H lists the keys");
    const waiting = document.createElement("p");
    waiting.className = "muted";
    waiting.textContent = "Loading…";
    card.chart.appendChild(waiting);
    card.live = body.querySelector(".announcement");
    card.speak = a11y.speaker(card.live);
    body.querySelector(".stats caption").textContent = "Statistics of " + card.tag + " at the chosen step";
    body.querySelector(".stats-wrap").setAttribute("aria-label", "Statistics of " + card.tag);
    card.chart.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (app.keys.act(card, event.key)) event.preventDefault();
    });
    body.querySelector(".review").addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        body.querySelector(".review-box").hidden = true;
        card.chart.focus();
      }
    });
    brushChart(card.chart, (svg) => [...card.geometry.values()].find((shape) => shape.svg === svg), app.chartRange);
    const raw = body.querySelector(".raw-button");
    if (source.rawBuckets) raw.addEventListener("click", () => showRaw(card));
    else raw.remove();
    card.mounted = true;
    card.node.classList.add("mounted");
    app.drawFindingsBadge(card);
    card.loaded = load(card);
  }

  function unmount(card) {
    if (!card.mounted || card.node.contains(app.root.activeElement)) return;
    card.body.remove();
    card.body = card.chart = null;
    card.mounted = false;
    card.data = null;
    card.series = new Map();
    card.geometry = new Map();
    card.node.classList.remove("mounted");
  }

  // Cards ask for their data a few at a time, so a fast scroll does not queue requests on
  // the server for cards already scrolled past (those are skipped once released).
  const queue = [];
  let loading = 0;

  function load(card) {
    return new Promise((resolve) => {
      card.waiters = (card.waiters || []).concat(resolve);
      if (!queue.includes(card)) queue.push(card);
      pump();
    });
  }

  function pump() {
    while (loading < LOADING_AT_ONCE && queue.length) {
      const card = queue.pop(); // the card asked for last: the one just scrolled to
      const waiters = card.waiters || [];
      card.waiters = [];
      loading += 1;
      loadNow(card).catch((error) => { app.status.textContent = "Cannot reach the data: " + error.message; })
        .finally(() => {
          loading -= 1;
          for (const resolve of waiters) resolve();
          pump();
        });
    }
  }

  async function loadNow(card) {
    if (!card.mounted) return;
    const runs = app.cardRuns(card);
    const request = ++card.request;
    card.stale = false;
    const data = runs.length
      ? await source.card(card.tag, runs, { step: state.step, from: state.from, to: state.to,
        steps: state.view === "ridgeline" ? RIDGES : null })
      : { edges: [], runs: [] };
    if (state.view === "steps") await loadSeries(card, runs);
    // A spectrum's α and stable rank over steps, where the source can say them.
    const spectral = isSpectrum(card.tag, state.spectrumPrefix) && source.spectral && runs.length
      ? await source.spectral(card.tag, runs).catch(() => null) : null;
    if (request !== card.request || !card.mounted) return;
    card.data = data;
    card.spectral = spectral;
    drawCard(card);
  }

  // The percentiles over steps, asked for from the steps held on (see /api/series).
  async function loadSeries(card, runs) {
    for (;;) {
      const since = runs.map((run) => {
        const held = card.series.get(run);
        return held ? held.generation + ":" + held.steps.length : "";
      });
      const answer = await source.series(card.tag, runs, since);
      let more = false;
      for (const entry of answer.series) {
        const held = card.series.get(entry.run);
        card.series.set(entry.run, held && entry.from ? {
          ...entry, steps: held.steps.slice(0, entry.from).concat(entry.steps),
          quantiles: held.quantiles.slice(0, entry.from).concat(entry.quantiles),
        } : entry);
        more = more || entry.more;
      }
      if (!more) return;
    }
  }

  function reloadMounted() {
    return Promise.all([...state.cards.values()].filter((c) => c.mounted).map(load));
  }

  function drawCard(card) {
    const view = { log: state.log, bars: state.bars, step: state.step, from: state.from, to: state.to, label: app.runLabel };
    const data = card.data;
    card.geometry = new Map();
    let panels = [];
    if (!data.edges.length && state.view !== "steps") {
      const empty = document.createElement("p");
      empty.className = "muted";
      empty.textContent = "No histogram for the shown runs.";
      panels = [empty];
    } else if (state.view === "overlay") {
      const overlaid = data.runs.slice(0, OVERLAID);
      const shape = drawOverlay(card.tag, data.edges, overlaid, view);
      card.geometry.set("overlay", shape);
      panels = [shape.svg, legend(overlaid)];
      if (data.runs.length > OVERLAID) {
        const note = document.createElement("p");
        note.className = "muted";
        note.textContent = "The first " + OVERLAID + " of " + data.runs.length + " shown runs are overlaid; hide some runs to compare others.";
        panels.push(note);
      }
    } else if (state.view === "steps") {
      panels = app.cardRuns(card).filter((run) => card.series.has(run)).map((run) => {
        const shape = drawBands(card.tag, card.series.get(run), view);
        card.geometry.set(run, shape);
        return shape.svg;
      });
    } else {
      const draw = state.view === "heatmap" ? drawHeatmap : drawRidgeline;
      panels = data.runs.map((entry) => {
        const shape = draw(card.tag, data.edges, entry, view);
        card.geometry.set(entry.run, shape);
        return shape.svg;
      });
    }
    if (state.view !== "steps") panels.push(...differencePanels(card));
    for (const failed of data.errors || []) panels.push(readError(failed));
    card.chart.replaceChildren(...panels);
    card.chart.dataset.view = state.view;
    drawSpectral(card);
    app.markOnce("histoscope:first-card");
    drawStats(card);
    if (card.node.contains(app.root.activeElement)) app.keys.drawCursor(card);
    app.keys.drawBraille(card);
  }

  // The spectral trend sits after the chart, outside its arrow-key region, reached by Tab.
  function drawSpectral(card) {
    const held = card.body.querySelector(".spectral");
    const trend = card.spectral ? drawSpectralTrend(card.tag, card.spectral, app.runLabel) : null;
    if (held) held.remove();
    if (trend) card.chart.after(trend);
  }

  // In compare mode, the compared run's shares of the card's bins minus the first run's.
  function differencePanels(card) {
    const pair = app.comparedPair();
    if (!pair || !card.data.edges.length) return [];
    const [a, b] = pair.map((run) => card.data.runs.find((e) => e.run === run && e.current));
    return a && b ? drawDifference(card.tag, card.data.edges, a, b, app.runLabel) : [];
  }

  // A run whose events file was removed or cut after it was indexed: said on the card,
  // which draws the other runs.
  function readError(failed) {
    const note = document.createElement("p");
    note.className = "read-error";
    note.textContent = "Run " + failed.run + " is not drawn: " + failed.error;
    return note;
  }

  // The cards drawn again from the data they hold, as when the count axis changes.
  function redrawMounted() {
    for (const card of state.cards.values()) if (card.mounted && card.data) drawCard(card);
  }

  // The overlay's legend: each run's line as drawn (its colour and dash), its name and step.
  function legend(entries) {
    const list = document.createElement("ul");
    list.className = "legend";
    list.append(...entries.filter((e) => e.current).map((entry) => {
      const item = document.createElement("li");
      const sample = svgElement("svg", { class: "line-sample", viewBox: "0 0 28 10", width: 28, height: 10, "aria-hidden": "true" });
      const line = svgElement("line", { x1: 1, x2: 27, y1: 5, y2: 5 }, sample);
      line.style.stroke = runColour(entry.run);
      if (runDash(entry.run)) line.style.strokeDasharray = runDash(entry.run);
      item.append(sample, app.runNameElement(entry.run), ", step " + entry.current.step);
      return item;
    }));
    return list;
  }

  // The statistics the writers stored at the chosen step (count from the buckets when
  // absent), in the order and by the names the core gives them.
  function drawStats(card) {
    const entries = card.data.runs;
    const names = state.stats.filter((name) => name === "count" ||
      entries.some((e) => e.current && e.current.stats[name] !== null && e.current.stats[name] !== undefined));
    const head = card.body.querySelector(".stats thead tr");
    head.replaceChildren(...["Run", "Step"].concat(names).map((name) => {
      const cell = document.createElement("th");
      cell.scope = "col";
      cell.textContent = name[0].toUpperCase() + name.slice(1);
      return cell;
    }));
    card.body.querySelector(".stats tbody").replaceChildren(...entries.map((entry) => {
      const at = entry.current;
      const cells = [entry.run, at ? String(at.step) : "none"];
      for (const name of names) {
        let value = at ? at.stats[name] : null;
        if (name === "count" && value === null && at) value = at.counts.reduce((s, c) => s + c, 0);
        cells.push(value === null || value === undefined ? "not stored" : formatStat(name, value));
      }
      const row = document.createElement("tr");
      row.dataset.run = entry.run;
      row.replaceChildren(...cells.map((text, i) => {
        const cell = document.createElement(i === 0 ? "th" : "td");
        if (i === 0) {
          cell.scope = "row";
          cell.appendChild(app.runNameElement(text));
        } else {
          cell.textContent = text;
        }
        return cell;
      }));
      return row;
    }));
  }

  // The exact buckets as logged, before rebinning, at the chosen step.
  async function showRaw(card) {
    const answer = await source.buckets(card.tag, state.step, app.cardRuns(card));
    const table = document.createElement("table");
    table.className = "raw";
    const caption = table.createCaption();
    caption.textContent = "Buckets of " + card.tag + " as logged, at step " + state.step;
    const head = table.createTHead().insertRow();
    for (const name of ["Run", "Left edge", "Right edge", "Count"]) {
      const cell = document.createElement("th");
      cell.scope = "col";
      cell.textContent = name;
      head.appendChild(cell);
    }
    const body = table.createTBody();
    for (const entry of answer.runs) {
      if (entry.error) {
        const row = body.insertRow();
        row.insertCell().textContent = entry.run;
        Object.assign(row.insertCell(), { colSpan: 3, textContent: entry.error });
      }
      for (const b of (entry.current ? entry.current.buckets : [])) {
        const row = body.insertRow();
        for (const text of [entry.run, formatValue(b[0]), formatValue(b[1]), a11y.numberFormat.format(b[2])]) {
          row.insertCell().textContent = text;
        }
      }
    }
    const box = card.body.querySelector(".raw-box");
    box.hidden = false;
    box.replaceChildren(table);
  }

  // Opens the card of `tag` at `step`: its section and hidden list opened, the filter cleared
  // if it hides the card, the card drawn and focused.
  async function openCard(tag, step) {
    const card = state.cards.get(tag);
    if (!card) return;
    if (card.node.hidden) app.clearFilter();
    for (let node = card.node.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    card.node.scrollIntoView({ block: "center" });
    mount(card);
    card.chart.focus(); // first, so the card is not released while the step loads
    await app.chooseStep(step);
    card.speak(card.tag + " at step " + state.step);
  }

  // The ridges' shades follow the page between light and dark.
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redrawMounted);

  return { mount, unmount, load, reloadMounted, redrawMounted, openCard };
}

// Counts (and the counts of values outside the edges) in whole numbers, the rest to three digits.
function formatStat(name, value) {
  return name === "mean" || name === "std" || name === "min" || name === "max"
    ? formatValue(value) : a11y.numberFormat.format(value);
}
