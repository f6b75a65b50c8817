// histoscope viewer: runs, one card per histogram key, one step control for all of them,
// TensorBoard's distributions over steps, and the keys, speech, sound and braille of the
// chart page on every card. Polls the server so new runs and steps appear as they are logged.
(function () {
  "use strict";

  const a11y = window.histoscopeA11y;
  const POLL_MS = 2000;
  const MAX_SHOWN = 12; // runs shown at first; the rest can be shown from the list
  const PANEL = { width: 480, height: 150, left: 56, right: 12, top: 20, bottom: 26 };
  const SVG_NS = "http://www.w3.org/2000/svg";
  const BP_NAMES = ["minimum", "6.68th percentile", "15.87th percentile", "30.85th percentile",
    "median", "69.15th percentile", "84.13th percentile", "93.32nd percentile", "maximum"];
  const STAT_LABELS = ["count", "min", "max", "mean", "std", "nonfinite"];

  const state = {
    runs: [],          // every run's name, in order
    shown: new Set(),  // the names of the runs shown
    colours: new Map(),
    versions: {},      // run -> the version of its index last fetched
    tags: [],
    cards: new Map(),  // tag -> card
    steps: [],         // every step of the shown series, sorted
    step: null,        // the chosen step
    following: true,   // the step follows the last one as new steps arrive
    view: "figures",
    text: true, sound: false, braille: false,
  };

  const $ = (id) => document.getElementById(id);
  const slider = $("step-slider");
  const number = $("step-number");
  const status = $("status");

  function query(params) {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      for (const item of [].concat(value)) search.append(key, String(item));
    }
    return search.toString();
  }

  async function getJSON(path, params) {
    const response = await fetch(path + "?" + query(params || {}), { cache: "no-store" });
    if (!response.ok) throw new Error(path + ": " + response.status);
    return response.json();
  }

  function colour(run) {
    if (!state.colours.has(run)) {
      const hue = Math.round((state.colours.size * 137.508 + 210) % 360);
      state.colours.set(run, "hsl(" + hue + " 75% var(--run-lightness))");
    }
    return state.colours.get(run);
  }

  function formatValue(x) {
    if (x === null || x === undefined || Number.isNaN(x)) return "none";
    if (!Number.isFinite(x)) return x > 0 ? "infinity" : "minus infinity";
    const size = Math.abs(x);
    if (size !== 0 && (size >= 1e5 || size < 1e-3)) return x.toExponential(2);
    return String(Number(x.toPrecision(3)));
  }

  function svgElement(name, attributes, parent) {
    const element = document.createElementNS(SVG_NS, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    if (parent) parent.appendChild(element);
    return element;
  }

  // ---- runs ----------------------------------------------------------------------------

  function drawRuns() {
    const list = $("runs");
    list.replaceChildren(...state.runs.map((run) => {
      const item = document.createElement("li");
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = state.shown.has(run);
      box.dataset.run = run;
      box.addEventListener("change", () => setShown([run], box.checked));
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = colour(run);
      swatch.setAttribute("aria-hidden", "true");
      label.append(box, swatch, run);
      item.appendChild(label);
      return item;
    }));
  }

  function setShown(runs, shown) {
    for (const run of runs) {
      if (shown) state.shown.add(run);
      else state.shown.delete(run);
    }
    drawRuns();
    refresh(true);
  }

  function shownRuns() {
    return state.runs.filter((run) => state.shown.has(run));
  }

  // ---- cards ---------------------------------------------------------------------------

  function makeCard(tag) {
    const node = $("card-template").content.firstElementChild.cloneNode(true);
    node.dataset.tag = tag;
    node.querySelector("h3").textContent = tag;
    const chart = node.querySelector(".chart");
    chart.setAttribute("aria-label", tag + ": each shown run's histogram; arrow keys explore, H lists the keys");
    node.querySelector(".stats caption").textContent = "Statistics of " + tag + " at the chosen step";
    node.querySelector(".stats-wrap").setAttribute("aria-label", "Statistics of " + tag);
    const card = {
      tag, node, chart,
      live: node.querySelector(".announcement"),
      series: new Map(),   // run -> {steps, stats, quantiles}
      buckets: new Map(),  // run -> {current, previous} at the drawn step
      unread: new Set(),   // runs with steps left to ask for
      runIndex: 0, bin: 0, bp: 4, last: "", request: 0, dirty: true,
    };
    card.speak = a11y.speaker(card.live);
    chart.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (act(card, event.key)) event.preventDefault();
    });
    const review = node.querySelector(".review");
    review.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        node.querySelector(".review-box").hidden = true;
        chart.focus();
      }
    });
    state.cards.set(tag, card);
    return card;
  }

  function placeCards() {
    const container = $("cards");
    const nodes = state.tags.map((tag) => (state.cards.get(tag) || makeCard(tag)).node);
    container.replaceChildren(...nodes);
    const select = $("overlay-tag");
    const chosen = select.value;
    select.replaceChildren(...state.tags.map((tag) => new Option(tag, tag)));
    if (state.tags.includes(chosen)) select.value = chosen;
  }

  // The runs of a card with data for its tag, in the order of the run list.
  function cardRuns(card) {
    return shownRuns().filter((run) => card.series.has(run));
  }

  // Where each step of a series falls: the last logged step at or before `step`.
  function positionAt(steps, step) {
    let lo = 0, hi = steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (steps[mid] <= step) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  function valueRange(card) {
    let lo = Infinity, hi = -Infinity;
    for (const run of cardRuns(card)) {
      for (const row of card.series.get(run).quantiles) {
        if (row[0] !== null && row[0] < lo) lo = row[0];
        if (row[8] !== null && row[8] > hi) hi = row[8];
      }
      const drawn = card.buckets.get(run);
      for (const key of ["current", "previous"]) {
        for (const b of (drawn && drawn[key] ? drawn[key].buckets : [])) {
          if (b[0] !== null && b[0] < lo) lo = b[0];
          if (b[1] !== null && b[1] > hi) hi = b[1];
        }
      }
    }
    if (!(lo <= hi)) return [0, 1];
    if (lo === hi) return [lo - 0.5, hi + 0.5];
    return [lo, hi];
  }

  // Density of each bucket: its share of the step divided by its width; a bucket of no
  // width is drawn as a spike 1/200 of the value range wide.
  function densities(buckets, span) {
    const total = buckets.reduce((sum, b) => sum + (b[2] || 0), 0);
    const spike = span / 200;
    return buckets
      .filter((b) => b[0] !== null && b[1] !== null)
      .map((b) => {
        const zero = !(b[1] > b[0]);
        const left = zero ? b[0] - spike / 2 : b[0];
        const right = zero ? b[1] + spike / 2 : b[1];
        const density = total > 0 ? b[2] / total / (right - left) : 0;
        return { left, right, count: b[2], density, total, edges: [b[0], b[1]] };
      });
  }

  function scales(range, top) {
    const width = PANEL.width - PANEL.left - PANEL.right;
    const height = PANEL.height - PANEL.top - PANEL.bottom;
    return {
      x: (v) => PANEL.left + ((v - range[0]) / (range[1] - range[0])) * width,
      y: (d) => PANEL.top + height - (top > 0 ? (d / top) * height : 0),
    };
  }

  function outline(bars, scale) {
    if (!bars.length) return "";
    const base = scale.y(0);
    let d = "M" + scale.x(bars[0].left).toFixed(1) + "," + base.toFixed(1);
    let previousRight = null;
    for (const bar of bars) {
      const left = scale.x(bar.left).toFixed(1), right = scale.x(bar.right).toFixed(1);
      if (previousRight !== null && bar.left > previousRight) {
        d += "L" + scale.x(previousRight).toFixed(1) + "," + base.toFixed(1);
        d += "L" + left + "," + base.toFixed(1);
      }
      const y = scale.y(bar.density).toFixed(1);
      d += "L" + left + "," + y + "L" + right + "," + y;
      previousRight = bar.right;
    }
    return d + "L" + scale.x(previousRight).toFixed(1) + "," + base.toFixed(1) + "Z";
  }

  function axes(svg, range, top, yTitle, yLabels) {
    const scale = scales(range, top);
    const group = svgElement("g", { class: "axis", "aria-hidden": "true" }, svg);
    const bottom = PANEL.height - PANEL.bottom;
    svgElement("line", { x1: PANEL.left, x2: PANEL.width - PANEL.right, y1: bottom, y2: bottom }, group);
    svgElement("line", { x1: PANEL.left, x2: PANEL.left, y1: PANEL.top, y2: bottom }, group);
    for (let i = 0; i <= 4; i++) {
      const v = range[0] + ((range[1] - range[0]) * i) / 4;
      const x = scale.x(v);
      svgElement("line", { x1: x, x2: x, y1: bottom, y2: bottom + 4 }, group);
      const label = svgElement("text", { x, y: bottom + 16, "text-anchor": "middle" }, group);
      label.textContent = formatValue(v);
    }
    for (const [value, text] of yLabels) {
      const y = PANEL.top + (PANEL.height - PANEL.top - PANEL.bottom) * (1 - value);
      const label = svgElement("text", { x: PANEL.left - 6, y: y + 4, "text-anchor": "end" }, group);
      label.textContent = text;
    }
    const title = svgElement("text", { x: 4, y: 12 }, group);
    title.textContent = yTitle;
    return scale;
  }

  function newPanel(run, label) {
    const svg = svgElement("svg", {
      viewBox: "0 0 " + PANEL.width + " " + PANEL.height, class: "panel", "data-run": run,
      role: "img", "aria-label": label,
    });
    const title = svgElement("text", { x: PANEL.width - PANEL.right, y: 12, "text-anchor": "end", class: "panel-title" }, svg);
    title.textContent = run;
    return svg;
  }

  function drawFigures(card) {
    const runs = cardRuns(card);
    const range = valueRange(card);
    const span = range[1] - range[0];
    let top = 0;
    const bars = new Map();
    for (const run of runs) {
      const drawn = card.buckets.get(run) || {};
      const current = drawn.current ? densities(drawn.current.buckets, span) : [];
      const previous = drawn.previous ? densities(drawn.previous.buckets, span) : [];
      bars.set(run, { current, previous, drawn });
      for (const bar of current.concat(previous)) top = Math.max(top, bar.density);
    }
    const panels = runs.map((run) => {
      const { current, previous, drawn } = bars.get(run);
      const stepText = drawn.current ? "step " + drawn.current.step : "no step yet";
      const svg = newPanel(run, card.tag + ", " + run + ", " + stepText);
      svg.dataset.step = drawn.current ? String(drawn.current.step) : "";
      const scale = axes(svg, range, top, "density", [[0, "0"], [1, formatValue(top)]]);
      const fill = colour(run);
      if (previous.length) {
        svgElement("path", { d: outline(previous, scale), class: "previous", stroke: fill,
          "data-step": String(drawn.previous.step) }, svg);
      }
      if (current.length) {
        svgElement("path", { d: outline(current, scale), class: "current", fill, stroke: fill,
          "data-step": String(drawn.current.step) }, svg);
      }
      return svg;
    });
    card.chart.replaceChildren(...panels);
    card.bars = bars;
    card.scale = scales(range, top);
  }

  function band(quantiles, steps, low, high, scale) {
    let d = "";
    steps.forEach((step, i) => { d += (i ? "L" : "M") + scale.x(step).toFixed(1) + "," + scale.y(quantiles[i][high]).toFixed(1); });
    for (let i = steps.length - 1; i >= 0; i--) d += "L" + scale.x(steps[i]).toFixed(1) + "," + scale.y(quantiles[i][low]).toFixed(1);
    return d + "Z";
  }

  function drawOverSteps(card) {
    const runs = cardRuns(card);
    const [lo, hi] = valueRange(card);
    const allSteps = runs.flatMap((run) => card.series.get(run).steps);
    const first = Math.min(...allSteps), last = Math.max(...allSteps);
    const stepRange = first === last ? [first - 0.5, last + 0.5] : [first, last];
    const panels = runs.map((run) => {
      const series = card.series.get(run);
      const svg = newPanel(run, card.tag + ", " + run + ", distribution over steps " + first + " to " + last);
      const width = PANEL.width - PANEL.left - PANEL.right;
      const height = PANEL.height - PANEL.top - PANEL.bottom;
      const scale = {
        x: (s) => PANEL.left + ((s - stepRange[0]) / (stepRange[1] - stepRange[0])) * width,
        y: (v) => PANEL.top + height - ((v === null ? lo : v) - lo) / (hi - lo || 1) * height,
      };
      const group = svgElement("g", { class: "axis", "aria-hidden": "true" }, svg);
      const bottom = PANEL.height - PANEL.bottom;
      svgElement("line", { x1: PANEL.left, x2: PANEL.width - PANEL.right, y1: bottom, y2: bottom }, group);
      for (const [v, y] of [[lo, bottom], [hi, PANEL.top]]) {
        const text = svgElement("text", { x: PANEL.left - 6, y: y + 4, "text-anchor": "end" }, group);
        text.textContent = formatValue(v);
      }
      for (const [s, anchor] of [[first, "start"], [last, "end"]]) {
        const text = svgElement("text", { x: scale.x(s), y: bottom + 16, "text-anchor": anchor }, group);
        text.textContent = "step " + s;
      }
      const fill = colour(run);
      // All values, 86% and 68% of them: basis points 0-10000, 668-9332, 1587-8413.
      [[0, 8, 0.18], [1, 7, 0.28], [2, 6, 0.4]].forEach(([low, high, opacity]) => {
        svgElement("path", { d: band(series.quantiles, series.steps, low, high, scale), class: "band",
          fill, "fill-opacity": opacity, "data-bps": BP_NAMES[low] + " to " + BP_NAMES[high] }, svg);
      });
      let median = "";
      series.steps.forEach((step, i) => { median += (i ? "L" : "M") + scale.x(step).toFixed(1) + "," + scale.y(series.quantiles[i][4]).toFixed(1); });
      svgElement("path", { d: median, class: "median", stroke: fill }, svg);
      if (state.step !== null) {
        const x = scale.x(Math.min(Math.max(state.step, stepRange[0]), stepRange[1]));
        svgElement("line", { x1: x, x2: x, y1: PANEL.top, y2: bottom, class: "marker" }, svg);
      }
      svg.dataset.step = String(state.step);
      return svg;
    });
    card.chart.replaceChildren(...panels);
  }

  // The statistics the writers stored (count always: from the buckets when not stored).
  function drawStats(card) {
    const runs = cardRuns(card);
    const current = (run) => (card.buckets.get(run) || {}).current;
    const names = STAT_LABELS.filter((name) => name === "count" ||
      runs.some((run) => current(run) && current(run).stats[name] !== null));
    const head = card.node.querySelector(".stats thead tr");
    head.replaceChildren(...["Run", "Step"].concat(names).map((name) => {
      const cell = document.createElement("th");
      cell.scope = "col";
      cell.textContent = name[0].toUpperCase() + name.slice(1);
      return cell;
    }));
    const body = card.node.querySelector(".stats tbody");
    body.replaceChildren(...runs.map((run) => {
      const at = current(run);
      const cells = [run, at ? String(at.step) : "none"];
      for (const name of names) {
        let value = at ? at.stats[name] : null;
        if (name === "count" && value === null && at) value = at.buckets.reduce((s, b) => s + b[2], 0);
        const whole = name === "count" || name === "nonfinite";
        cells.push(value === null ? "not stored" : whole ? a11y.numberFormat.format(value) : formatValue(value));
      }
      const row = document.createElement("tr");
      row.dataset.run = run;
      row.replaceChildren(...cells.map((text, i) => {
        const cell = document.createElement(i === 0 ? "th" : "td");
        if (i === 0) cell.scope = "row";
        cell.textContent = text;
        return cell;
      }));
      return row;
    }));
  }

  function drawCard(card) {
    if (state.view === "figures") drawFigures(card);
    else drawOverSteps(card);
    drawStats(card);
  }

  function drawOverlay() {
    const tag = $("overlay-tag").value;
    const card = state.cards.get(tag);
    const box = $("overlay");
    const legend = $("overlay-legend");
    if (!card) {
      box.replaceChildren();
      legend.replaceChildren();
      return;
    }
    const runs = cardRuns(card).filter((run) => (card.buckets.get(run) || {}).current);
    const range = valueRange(card);
    const span = range[1] - range[0];
    const bars = runs.map((run) => [run, densities(card.buckets.get(run).current.buckets, span)]);
    const top = Math.max(0, ...bars.flatMap(([, b]) => b.map((bar) => bar.density)));
    const svg = svgElement("svg", { viewBox: "0 0 " + PANEL.width + " " + PANEL.height, role: "img",
      "aria-label": tag + ": " + runs.length + " runs overlaid at step " + state.step +
        "; the cards below hold each run's numbers" });
    const scale = axes(svg, range, top, "density", [[0, "0"], [1, formatValue(top)]]);
    for (const [run, runBars] of bars) {
      svgElement("path", { d: outline(runBars, scale), class: "overlay-run", stroke: colour(run),
        "data-run": run, "data-step": String(card.buckets.get(run).current.step) }, svg);
    }
    box.replaceChildren(svg);
    legend.replaceChildren(...runs.map((run) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = colour(run);
      swatch.setAttribute("aria-hidden", "true");
      item.append(swatch, run + ", step " + card.buckets.get(run).current.step);
      return item;
    }));
  }

  // ---- the step control ------------------------------------------------------------------

  function collectSteps() {
    const steps = new Set();
    for (const card of state.cards.values()) {
      for (const run of cardRuns(card)) for (const step of card.series.get(run).steps) steps.add(step);
    }
    state.steps = [...steps].sort((a, b) => a - b);
    const last = state.steps.length ? state.steps[state.steps.length - 1] : null;
    if (state.step === null || state.following) state.step = last;
    slider.max = String(Math.max(0, state.steps.length - 1));
    syncControl();
    $("step-range").textContent = state.steps.length
      ? "steps " + state.steps[0] + " to " + last + ", " + state.steps.length + " in all"
      : "no steps yet";
  }

  function syncControl() {
    const position = Math.max(0, positionAt(state.steps, state.step === null ? 0 : state.step));
    slider.value = String(position);
    slider.setAttribute("aria-valuetext", state.step === null ? "no steps" : "step " + state.step);
    number.value = state.step === null ? "" : String(state.step);
  }

  function chooseStep(step) {
    if (!state.steps.length) return Promise.resolve();
    const position = Math.max(0, positionAt(state.steps, step));
    state.step = state.steps[position];
    state.following = position === state.steps.length - 1;
    syncControl();
    return loadAllBuckets();
  }

  slider.addEventListener("input", () => chooseStep(state.steps[Number(slider.value)]));
  number.addEventListener("change", () => {
    const typed = Number(number.value);
    if (Number.isFinite(typed)) chooseStep(typed);
  });

  // ---- fetching ----------------------------------------------------------------------------

  async function loadBuckets(card) {
    const runs = cardRuns(card);
    const request = ++card.request;
    if (state.step === null || !runs.length) {
      card.buckets = new Map();
    } else {
      const answer = await getJSON("/api/buckets", { tag: card.tag, step: state.step, run: runs });
      if (request !== card.request) return;
      card.buckets = new Map(answer.runs.map((entry) => [entry.run, entry]));
    }
    drawCard(card);
    if (card.tag === $("overlay-tag").value) drawOverlay();
  }

  function loadAllBuckets() {
    return Promise.all([...state.cards.values()].map(loadBuckets)).then(() => {
      document.body.dataset.step = String(state.step);
    });
  }

  // Asks only for the steps after those the card holds; the answer's `from` says where its
  // steps go (0 when a restart rewrote steps the card held), `more` that steps are left.
  async function loadSeries(card, runs) {
    const since = runs.map((run) => {
      const held = card.series.get(run);
      return held ? held.generation + ":" + held.steps.length : "";
    });
    const answer = await getJSON("/api/series", { tag: card.tag, run: runs, since });
    const answered = new Set(answer.series.map((entry) => entry.run));
    for (const run of runs) {
      card.unread.delete(run);
      if (!answered.has(run)) card.series.delete(run);
    }
    for (const entry of answer.series) {
      card.series.set(entry.run, appended(card.series.get(entry.run), entry));
      if (entry.more) card.unread.add(entry.run);
    }
  }

  // The shown runs with steps left to ask for on some card.
  function unreadRuns() {
    const shown = new Set(shownRuns());
    const unread = new Set();
    for (const card of state.cards.values()) for (const run of card.unread) if (shown.has(run)) unread.add(run);
    return unread;
  }

  function appended(held, entry) {
    if (!held || entry.from === 0) return entry;
    const join = (old, added) => old.slice(0, entry.from).concat(added);
    const stats = {};
    for (const name of Object.keys(entry.stats)) stats[name] = join(held.stats[name], entry.stats[name]);
    return {
      run: entry.run, generation: entry.generation, from: 0, more: entry.more, stats,
      steps: join(held.steps, entry.steps),
      wall_times: join(held.wall_times, entry.wall_times),
      quantiles: join(held.quantiles, entry.quantiles),
    };
  }

  let refreshing = null;

  async function poll(showChanged) {
    const listing = await getJSON("/api/runs");
    const added = listing.runs.filter((run) => !state.runs.includes(run));
    const first = state.runs.length === 0;
    for (const run of added) {
      colour(run);
      if (state.shown.size < MAX_SHOWN || !first) state.shown.add(run);
    }
    if (added.length) {
      state.runs = listing.runs;
      drawRuns();
    }
    const runs = shownRuns();
    const tags = runs.length ? await getJSON("/api/tags", { run: runs }) : { tags: [], versions: {}, reading: [] };
    const changed = runs.filter((run) => state.versions[run] !== tags.versions[run]);
    state.versions = Object.assign({}, state.versions, tags.versions);
    const names = tags.tags.map((entry) => entry.tag);
    const newTags = names.some((tag) => !state.cards.has(tag)) || names.length !== state.tags.length;
    if (newTags) {
      state.tags = [...new Set(state.tags.concat(names))].sort();
      placeCards();
    }
    const work = [];
    for (const card of state.cards.values()) {
      const need = card.dirty ? runs : runs.filter((run) => changed.includes(run) || card.unread.has(run));
      card.dirty = false;
      if (need.length || showChanged) work.push(loadSeries(card, need.length ? need : runs));
    }
    await Promise.all(work);
    const before = state.step;
    collectSteps();
    if (work.length || state.step !== before || showChanged) await loadAllBuckets();
    const unread = new Set([...tags.reading, ...unreadRuns()]);
    const reading = unread.size ? "; still reading " + unread.size + " runs" : "";
    status.textContent = state.runs.length + " runs (" + runs.length + " shown), " +
      state.tags.length + " histogram keys" + reading;
    document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  }

  function refresh(showChanged) {
    const run = () => poll(showChanged).catch((error) => { status.textContent = "Cannot reach the server: " + error.message; });
    refreshing = (refreshing || Promise.resolve()).then(run);
    return refreshing;
  }

  // ---- keys ----------------------------------------------------------------------------------

  function announce(card, message) {
    card.last = message;
    if (state.text) card.speak(message);
  }

  function currentRun(card) {
    const runs = cardRuns(card);
    if (!runs.length) return null;
    card.runIndex = Math.min(card.runIndex, runs.length - 1);
    return runs[card.runIndex];
  }

  function describeBin(card) {
    const run = currentRun(card);
    const bars = run && card.bars && card.bars.get(run);
    if (!bars || !bars.current.length) return run ? run + ": no histogram at step " + state.step : "No runs shown";
    card.bin = Math.min(card.bin, bars.current.length - 1);
    const bar = bars.current[card.bin];
    return run + ", step " + bars.drawn.current.step + ", " + formatValue(bar.edges[0]) + " to " +
      formatValue(bar.edges[1]) + ", count " + a11y.numberFormat.format(bar.count) + ", " +
      a11y.percent(bar.count, bar.total) + " of the step";
  }

  function describeQuantile(card) {
    const run = currentRun(card);
    if (!run) return "No runs shown";
    const series = card.series.get(run);
    const position = positionAt(series.steps, state.step);
    if (position < 0) return run + ": no steps before step " + state.step;
    const row = series.quantiles[position];
    return run + ", step " + series.steps[position] + ", " + BP_NAMES[card.bp] + " " + formatValue(row[card.bp]) +
      "; 68% from " + formatValue(row[2]) + " to " + formatValue(row[6]) +
      ", 86% from " + formatValue(row[1]) + " to " + formatValue(row[7]) +
      ", all from " + formatValue(row[0]) + " to " + formatValue(row[8]);
  }

  function describe(card) {
    return state.view === "figures" ? describeBin(card) : describeQuantile(card);
  }

  function drawCursor(card) {
    for (const old of card.chart.querySelectorAll(".cursor")) old.remove();
    const run = currentRun(card);
    const svg = run && card.chart.querySelector('svg[data-run="' + CSS.escape(run) + '"]');
    if (!svg) return;
    if (state.view === "figures") {
      const bars = card.bars && card.bars.get(run);
      const bar = bars && bars.current[card.bin];
      if (!bar) return;
      const x = (card.scale.x(bar.left) + card.scale.x(bar.right)) / 2;
      svgElement("circle", { class: "cursor", cx: x.toFixed(1), cy: card.scale.y(bar.density).toFixed(1), r: 4,
        "data-bin": String(card.bin) }, svg);
    } else {
      svg.setAttribute("data-bp", String(card.bp));
    }
  }

  function playCurrent(card) {
    if (!state.sound) return;
    const run = currentRun(card);
    const bars = run && card.bars && card.bars.get(run);
    if (state.view === "figures" && bars && bars.current.length) {
      const top = Math.max(...bars.current.map((bar) => bar.density));
      a11y.playLevel(top > 0 ? bars.current[card.bin].density / top : 0, card.bin, bars.current.length);
    } else {
      a11y.playLevel(card.bp / 8, card.bp, 9);
    }
  }

  function drawBraille(card) {
    const box = card.node.querySelector(".braille-box");
    box.hidden = !state.braille;
    if (!state.braille) return;
    const run = currentRun(card);
    const bars = run && card.bars && card.bars.get(run);
    if (!bars || !bars.current.length) return;
    a11y.drawBraille(box.querySelector(".braille"), bars.current.map((bar) => bar.density), card.bin);
    box.querySelector(".braille-label").textContent = "Braille, " + run + ", step " + bars.drawn.current.step + ":";
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

  // Moves the shared step by `delta` logged steps of the card's run (every card follows).
  async function stepBy(card, delta, absolute) {
    const run = currentRun(card);
    if (!run) return edge(card, "No runs shown");
    const steps = card.series.get(run).steps;
    const position = positionAt(steps, state.step);
    const target = absolute === "first" ? 0 : absolute === "last" ? steps.length - 1 : position + delta;
    if (target < 0) return edge(card, "First step");
    if (target >= steps.length) return edge(card, "Last step");
    await chooseStep(steps[target]);
    show(card);
  }

  function binBy(card, delta, absolute) {
    const run = currentRun(card);
    const bars = run && card.bars && card.bars.get(run);
    const count = bars ? bars.current.length : 0;
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
    const runs = cardRuns(card);
    const target = card.runIndex + delta;
    if (target < 0) return edge(card, "First run");
    if (target >= runs.length) return edge(card, "Last run");
    card.runIndex = target;
    show(card);
  }

  const FIGURE_KEYS = {
    ArrowLeft: (card) => binBy(card, -1), ArrowRight: (card) => binBy(card, 1),
    ArrowUp: (card) => stepBy(card, 1), ArrowDown: (card) => stepBy(card, -1),
    Home: (card) => binBy(card, 0, "first"), End: (card) => binBy(card, 0, "last"),
    PageUp: (card) => stepBy(card, 0, "last"), PageDown: (card) => stepBy(card, 0, "first"),
  };
  const STEP_KEYS = {
    ArrowLeft: (card) => stepBy(card, -1), ArrowRight: (card) => stepBy(card, 1),
    ArrowUp: (card) => bpBy(card, 1), ArrowDown: (card) => bpBy(card, -1),
    Home: (card) => stepBy(card, 0, "first"), End: (card) => stepBy(card, 0, "last"),
    PageUp: (card) => bpBy(card, 0, "last"), PageDown: (card) => bpBy(card, 0, "first"),
  };

  function toggleMode(card, mode) {
    const node = card.node;
    if (mode === "text") {
      state.text = !state.text;
      card.speak(state.text ? "Text on" : "Text off");
    } else if (mode === "sound") {
      state.sound = !state.sound;
      if (state.sound) a11y.startSound();
      card.speak(state.sound ? "Sound on" : "Sound off");
      playCurrent(card);
    } else if (mode === "braille") {
      state.braille = !state.braille;
      drawBraille(card);
      card.speak(state.braille ? "Braille on" : "Braille off");
    } else if (mode === "review") {
      const review = node.querySelector(".review");
      review.value = card.last || describe(card);
      node.querySelector(".review-box").hidden = false;
      review.focus();
      review.select();
    } else if (mode === "keys") {
      const keys = node.querySelector(".keys");
      keys.hidden = !keys.hidden;
      card.speak(keys.hidden ? "Keys hidden" : "Keys: " + [...keys.querySelectorAll("dt")]
        .map((dt) => dt.textContent + ", " + dt.nextElementSibling.textContent).join("; ") + ".");
    }
  }

  function act(card, key) {
    const moves = state.view === "figures" ? FIGURE_KEYS : STEP_KEYS;
    if (key in moves) moves[key](card);
    else if (key === "n" || key === "N") runBy(card, 1);
    else if (key === "p" || key === "P") runBy(card, -1);
    else if (a11y.modeKey(key)) toggleMode(card, a11y.modeKey(key));
    else return false;
    return true;
  }

  // ---- wiring ----------------------------------------------------------------------------------

  for (const radio of document.querySelectorAll('input[name="view"]')) {
    radio.addEventListener("change", () => {
      state.view = radio.value;
      document.body.dataset.view = state.view;
      for (const card of state.cards.values()) drawCard(card);
    });
  }
  $("overlay-tag").addEventListener("change", drawOverlay);
  $("show-all").addEventListener("click", () => setShown(state.runs, true));
  $("hide-all").addEventListener("click", () => setShown(state.runs, false));
  document.body.dataset.view = state.view;

  // Series with steps left are asked for again at once, the rest every POLL_MS.
  refresh(false).then(function again() {
    setTimeout(() => refresh(false).then(again), unreadRuns().size ? 0 : POLL_MS);
  });
})();
