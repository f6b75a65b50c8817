// histoscope: the page of the viewer and of the report. Keys are grouped into collapsible
// sections, filtered as one types, and drawn as small-multiple cards only while they are
// near the viewport, so a model with a thousand keys keeps a small page. `source` answers
// the data: the local server (api.js) or the data embedded in a report.

import { formatValue, runColour, placeKey, keyMatcher, readUrlState, writeUrlState, positionAt } from "./format.js";
import { drawRidgeline, drawOverlay, drawHeatmap, drawBands } from "./draw.js";
import { makeKeys } from "./keys.js";
import { makeOverview, STAT_NAMES } from "./overview.js";
import { makeBrush, brushChart } from "./brush.js";

const a11y = window.histoscopeA11y;
const POLL_MS = 2000;
const MAX_SHOWN = 12; // runs shown at first; the rest can be shown from the list
const NEAR_PX = 600; // cards this close to the viewport are drawn, farther ones released
const LOADING_AT_ONCE = 4;
const STATS = ["count", "min", "max", "mean", "std", "nonfinite"];
const VIEWS = ["ridgeline", "overlay", "heatmap", "steps"];

export function start(source) {
  const $ = (id) => document.getElementById(id);
  const fromUrl = readUrlState();
  const state = {
    runs: [], shown: new Set(), versions: {},
    tags: [], tagRuns: new Map(), layout: [], layoutKey: "",
    cards: new Map(), sections: [],
    steps: [], step: fromUrl.step, following: fromUrl.step === null,
    view: VIEWS.includes(fromUrl.view) ? fromUrl.view : "ridgeline",
    log: fromUrl.log, from: fromUrl.from, to: fromUrl.to, filter: fromUrl.filter,
    findings: [], announced: new Set(),
    text: true, sound: false, braille: false,
  };
  const app = { state, source, cardRuns, chooseStep, openCard };
  const keys = makeKeys(app);
  const overview = makeOverview(app, $("overview"));
  const status = $("status");
  const slider = $("step-slider");
  const number = $("step-number");
  const alertsLive = a11y.speaker($("alerts-live"));
  const rangeLive = a11y.speaker($("range-live"));
  const brush = makeBrush($("range-brush"), (from, to) => setRange(from, to), rangeLive);

  // ---- runs ----------------------------------------------------------------------------

  function drawRuns() {
    $("runs").replaceChildren(...state.runs.map((run) => {
      const item = document.createElement("li");
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = state.shown.has(run);
      box.dataset.run = run;
      box.addEventListener("change", () => setShown([run], box.checked));
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = runColour(run);
      swatch.setAttribute("aria-hidden", "true");
      label.append(box, swatch, run);
      item.appendChild(label);
      return item;
    }));
    const select = $("overview-run");
    const chosen = select.value;
    select.replaceChildren(...shownRuns().map((run) => new Option(run, run)));
    if (shownRuns().includes(chosen)) select.value = chosen;
  }

  function setShown(runs, shown) {
    for (const run of runs) {
      if (shown) state.shown.add(run);
      else state.shown.delete(run);
    }
    drawRuns();
    for (const card of state.cards.values()) card.stale = true;
    remember();
    refresh(true);
  }

  function shownRuns() {
    return state.runs.filter((run) => state.shown.has(run));
  }

  function cardRuns(card) {
    const has = state.tagRuns.get(card.tag) || [];
    return shownRuns().filter((run) => has.includes(run));
  }

  function remember() {
    writeUrlState(state);
  }

  // ---- sections and cards ----------------------------------------------------------------

  let observed = () => {}; // called once the observer has reported where the cards are
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const card = state.cards.get(entry.target.dataset.tag);
      if (!card) continue;
      if (entry.isIntersecting) mount(card);
      else unmount(card);
    }
    observed();
  }, { rootMargin: NEAR_PX + "px 0px" });

  function placeholder(tag) {
    const node = document.createElement("article");
    node.className = "card";
    node.dataset.tag = tag;
    const heading = document.createElement("h3");
    heading.textContent = tag;
    const badge = document.createElement("p");
    badge.className = "findings";
    badge.hidden = true;
    node.append(heading, badge);
    const card = { tag, node, mounted: false, data: null, series: new Map(), geometry: new Map(),
      runIndex: 0, bin: 0, bp: 4, last: "", request: 0, stale: true };
    state.cards.set(tag, card);
    observer.observe(node);
    return card;
  }

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
      if (keys.act(card, event.key)) event.preventDefault();
    });
    body.querySelector(".review").addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        body.querySelector(".review-box").hidden = true;
        card.chart.focus();
      }
    });
    brushChart(card.chart, (svg) => [...card.geometry.values()].find((shape) => shape.svg === svg), chartRange);
    const raw = body.querySelector(".raw-button");
    if (source.rawBuckets) raw.addEventListener("click", () => showRaw(card));
    else raw.remove();
    card.mounted = true;
    card.node.classList.add("mounted");
    drawFindingsBadge(card);
    card.loaded = load(card);
  }

  function unmount(card) {
    if (!card.mounted || card.node.contains(document.activeElement)) return;
    card.body.remove();
    card.body = card.chart = null;
    card.mounted = false;
    card.data = null;
    card.series = new Map();
    card.geometry = new Map();
    card.node.classList.remove("mounted");
  }

  // Which section and visibility each key has; rebuilt when keys or declarations change.
  function placeCards() {
    const bySection = new Map();
    for (const tag of state.tags) {
      const place = placeKey(tag, state.layout);
      if (!bySection.has(place.section)) bySection.set(place.section, { name: place.section, shown: [], hidden: [] });
      bySection.get(place.section)[place.hidden ? "hidden" : "shown"].push(tag);
    }
    const open = new Map([...document.querySelectorAll("details.section")].map((d) => [d.dataset.section, d.open]));
    state.sections = [...bySection.values()].sort((a, b) => a.name.localeCompare(b.name));
    $("sections").replaceChildren(...state.sections.map((section) => {
      const details = document.createElement("details");
      details.className = "section";
      details.dataset.section = section.name;
      details.open = open.has(section.name) ? open.get(section.name) : true;
      const summary = document.createElement("summary");
      const heading = document.createElement("h2");
      heading.className = "section-heading";
      summary.appendChild(heading);
      const grid = document.createElement("div");
      grid.className = "cards";
      grid.append(...section.shown.map((tag) => (state.cards.get(tag) || placeholder(tag)).node));
      details.append(summary, grid);
      section.node = details;
      section.heading = heading;
      if (section.hidden.length) {
        const hidden = document.createElement("details");
        hidden.className = "hidden-cards";
        const label = document.createElement("summary");
        label.textContent = "Hidden keys (" + section.hidden.length + ")";
        const more = document.createElement("div");
        more.className = "cards";
        more.append(...section.hidden.map((tag) => (state.cards.get(tag) || placeholder(tag)).node));
        hidden.append(label, more);
        details.appendChild(hidden);
      }
      return details;
    }));
    applyFilter();
  }

  // The cards in view are mounted at once, not on the observer's first report a frame or
  // two later, so their data is asked for sooner; the observer mounts those near the view
  // after them. Cards are in page order: the first one below the view ends the walk; hidden
  // ones have no height. All are measured before any is mounted, so the page is laid out
  // once, not once a card.
  function mountInView() {
    const seen = [];
    walk: for (const section of state.sections) {
      for (const tag of section.shown) {
        const card = state.cards.get(tag);
        const box = card.node.getBoundingClientRect();
        if (!box.height) continue;
        if (box.top > innerHeight) break walk;
        if (box.bottom > 0) seen.push(card);
      }
    }
    seen.forEach(mount);
  }

  function applyFilter() {
    const matches = keyMatcher(state.filter);
    let shown = 0;
    for (const section of state.sections) {
      const all = section.shown.concat(section.hidden);
      let count = 0;
      for (const tag of all) {
        const match = matches(tag);
        state.cards.get(tag).node.hidden = !match;
        if (match) count += 1;
      }
      shown += count;
      section.node.hidden = count === 0;
      section.heading.textContent = section.name + " (" + (state.filter ? count + " of " + all.length : all.length) + ")";
      section.count = count;
    }
    state.matching = shown;
    drawOverview();
    describeStatus();
  }

  $("filter").value = state.filter;
  $("filter").addEventListener("input", () => {
    state.filter = $("filter").value;
    applyFilter();
    remember();
  });

  // ---- the data of a card ------------------------------------------------------------------

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
      loadNow(card).catch((error) => { status.textContent = "Cannot reach the data: " + error.message; })
        .finally(() => {
          loading -= 1;
          for (const resolve of waiters) resolve();
          pump();
        });
    }
  }

  async function loadNow(card) {
    if (!card.mounted) return;
    const runs = cardRuns(card);
    const request = ++card.request;
    card.stale = false;
    const data = runs.length
      ? await source.card(card.tag, runs, { step: state.step, from: state.from, to: state.to })
      : { edges: [], runs: [] };
    if (state.view === "steps") await loadSeries(card, runs);
    if (request !== card.request || !card.mounted) return;
    card.data = data;
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

  function drawCard(card) {
    const view = { log: state.log, step: state.step, from: state.from, to: state.to };
    const data = card.data;
    card.geometry = new Map();
    let panels = [];
    if (!data.edges.length && state.view !== "steps") {
      const empty = document.createElement("p");
      empty.className = "muted";
      empty.textContent = "No histogram for the shown runs.";
      panels = [empty];
    } else if (state.view === "overlay") {
      const shape = drawOverlay(card.tag, data.edges, data.runs, view);
      card.geometry.set("overlay", shape);
      panels = [shape.svg, legend(data.runs)];
    } else if (state.view === "steps") {
      panels = cardRuns(card).filter((run) => card.series.has(run)).map((run) => {
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
    card.chart.replaceChildren(...panels);
    card.chart.dataset.view = state.view;
    markOnce("histoscope:first-card");
    drawStats(card);
    if (card.node.contains(document.activeElement)) keys.drawCursor(card);
    keys.drawBraille(card);
  }

  function legend(entries) {
    const list = document.createElement("ul");
    list.className = "legend";
    list.append(...entries.filter((e) => e.current).map((entry) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = runColour(entry.run);
      swatch.setAttribute("aria-hidden", "true");
      item.append(swatch, entry.run + ", step " + entry.current.step);
      return item;
    }));
    return list;
  }

  // The statistics the writers stored at the chosen step (count from the buckets when absent).
  function drawStats(card) {
    const entries = card.data.runs;
    const names = STATS.filter((name) => name === "count" ||
      entries.some((e) => e.current && e.current.stats[name] !== null));
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
        const whole = name === "count" || name === "nonfinite";
        cells.push(value === null ? "not stored" : whole ? a11y.numberFormat.format(value) : formatValue(value));
      }
      const row = document.createElement("tr");
      row.dataset.run = entry.run;
      row.replaceChildren(...cells.map((text, i) => {
        const cell = document.createElement(i === 0 ? "th" : "td");
        if (i === 0) cell.scope = "row";
        cell.textContent = text;
        return cell;
      }));
      return row;
    }));
  }

  // The exact buckets as logged, before rebinning, at the chosen step.
  async function showRaw(card) {
    const answer = await source.buckets(card.tag, state.step, cardRuns(card));
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

  // ---- step, step range, view ----------------------------------------------------------------

  function syncControl() {
    const position = Math.max(0, positionAt(state.steps, state.step === null ? 0 : state.step));
    slider.max = String(Math.max(0, state.steps.length - 1));
    slider.value = String(position);
    slider.setAttribute("aria-valuetext", state.step === null ? "no steps" : "step " + state.step);
    number.value = state.step === null ? "" : String(state.step);
    const last = state.steps.length ? state.steps[state.steps.length - 1] : null;
    $("step-range").textContent = state.steps.length
      ? "steps " + state.steps[0] + " to " + last + ", " + state.steps.length + " in all"
      : "no steps yet";
  }

  function takeSteps(steps) {
    state.steps = steps;
    const last = steps.length ? steps[steps.length - 1] : null;
    if (state.step === null || state.following) state.step = last;
    syncControl();
    brush.setSteps(steps);
  }

  function reloadMounted() {
    return Promise.all([...state.cards.values()].filter((c) => c.mounted).map(load));
  }

  function chooseStep(step) {
    if (!state.steps.length) return Promise.resolve();
    const position = Math.max(0, positionAt(state.steps, step));
    state.step = state.steps[position];
    state.following = position === state.steps.length - 1;
    syncControl();
    remember();
    return reloadMounted().then(() => { document.body.dataset.step = String(state.step); });
  }

  slider.addEventListener("input", () => chooseStep(state.steps[Number(slider.value)]));
  number.addEventListener("change", () => {
    const typed = Number(number.value);
    if (number.value !== "" && Number.isFinite(typed)) chooseStep(typed);
  });

  // The step range, from the inputs, the brush or a drag across a chart: all of them, the
  // URL and the drawn cards follow.
  function setRange(from, to) {
    state.from = from;
    state.to = to;
    $("range-from").value = from === null ? "" : String(from);
    $("range-to").value = to === null ? "" : String(to);
    brush.setRange(from, to);
    remember();
    return reloadMounted();
  }

  // A range dragged across a chart; an end at the first or last logged step is left open.
  function chartRange(from, to) {
    const steps = state.steps;
    setRange(steps.length && from <= steps[0] ? null : from, steps.length && to >= steps[steps.length - 1] ? null : to);
    rangeLive(brush.describe());
  }

  for (const [id, key] of [["range-from", "from"], ["range-to", "to"]]) {
    const input = $(id);
    input.value = state[key] === null ? "" : String(state[key]);
    input.addEventListener("change", () => {
      const typed = input.value === "" ? null : Number(input.value);
      const value = Number.isFinite(typed) ? typed : null;
      setRange(key === "from" ? value : state.from, key === "to" ? value : state.to);
    });
  }
  brush.setRange(state.from, state.to);
  $("range-all").addEventListener("click", () => {
    setRange(null, null);
    rangeLive(brush.describe());
  });

  for (const radio of document.querySelectorAll('input[name="view"]')) {
    radio.checked = radio.value === state.view;
    radio.addEventListener("change", () => {
      state.view = radio.value;
      document.body.dataset.view = state.view;
      remember();
      reloadMounted();
    });
  }
  document.body.dataset.view = state.view;
  $("log-axis").checked = state.log;
  $("log-axis").addEventListener("change", () => {
    state.log = $("log-axis").checked;
    remember();
    for (const card of state.cards.values()) if (card.mounted && card.data) drawCard(card);
  });
  $("show-all").addEventListener("click", () => setShown(state.runs, true));
  $("hide-all").addEventListener("click", () => setShown(state.runs, false));

  // ---- overview and alerts -------------------------------------------------------------------

  let overviewKey = "";

  async function loadOverview(force) {
    const run = $("overview-run").value || shownRuns()[0];
    const stat = $("overview-stat").value;
    const key = run + "|" + stat + "|" + JSON.stringify(state.versions[run]);
    if (!force && key === overviewKey) return;
    overviewKey = key;
    await overview.load(run, stat);
    drawOverview();
  }

  function drawOverview() {
    const matches = keyMatcher(state.filter);
    overview.render(state.sections.map((s) => ({ name: s.name, tags: s.shown.filter(matches) })));
  }

  $("overview-run").addEventListener("change", () => loadOverview(true));
  $("overview-stat").addEventListener("change", () => loadOverview(true));
  $("overview-stat").replaceChildren(...Object.entries(STAT_NAMES).map(([value, name]) => new Option(name, value)));

  // Opens the card of `tag` at `step`: its section and hidden list opened, the filter cleared
  // if it hides the card, the card drawn and focused.
  async function openCard(tag, step) {
    const card = state.cards.get(tag);
    if (!card) return;
    if (card.node.hidden) {
      state.filter = "";
      $("filter").value = "";
      applyFilter();
    }
    for (let node = card.node.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    card.node.scrollIntoView({ block: "center" });
    mount(card);
    card.chart.focus(); // first, so the card is not released while the step loads
    await chooseStep(step);
    card.speak(card.tag + " at step " + state.step);
  }

  function drawFindingsBadge(card) {
    const found = state.findings.filter((f) => f.key === card.tag && f.severity !== "info");
    card.node.classList.toggle("has-findings", found.length > 0);
    const badge = card.node.querySelector(".findings");
    if (!badge) return;
    badge.hidden = !found.length;
    badge.textContent = found.length ? "\u26A0 " + found.map((f) => f.kind + " in " + f.run).join(", ") : "";
  }

  async function loadFindings() {
    const answer = await source.findings();
    state.findings = answer.findings || [];
    const list = $("alerts");
    $("alerts-section").hidden = state.findings.length === 0;
    list.replaceChildren(...state.findings.map((finding) => {
      const item = document.createElement("li");
      item.className = "alert-" + finding.severity;
      const link = document.createElement("a");
      link.href = "#";
      link.textContent = finding.severity + ": " + finding.message;
      link.addEventListener("click", (event) => {
        event.preventDefault();
        openCard(finding.key, finding.first_step);
      });
      item.appendChild(link);
      return item;
    }));
    const fresh = state.findings.filter((f) => !state.announced.has(f.kind + f.run + f.key));
    for (const f of fresh) state.announced.add(f.kind + f.run + f.key);
    if (fresh.length) {
      alertsLive(fresh.length + " new finding" + (fresh.length > 1 ? "s" : "") + ": " + fresh.map((f) => f.message).join("; "));
      if ($("alert-sound").checked) { a11y.startSound(); a11y.playEdge(); }
    }
    for (const card of state.cards.values()) drawFindingsBadge(card);
  }

  // ---- polling -------------------------------------------------------------------------------

  function describeStatus() {
    if (!state.runs.length) {
      status.textContent = "No runs yet: no events files under this log directory" + (source.live ? "; watching for them" : "");
      return;
    }
    const filtered = state.filter ? ", " + state.matching + " match the filter" : "";
    status.textContent = state.runs.length + " runs (" + shownRuns().length + " shown), " +
      state.tags.length + " histogram keys" + filtered + (state.reading ? "; still reading " + state.reading + " runs" : "");
  }

  async function poll(showChanged) {
    const first = state.runs.length === 0;
    const listing = await source.runs();
    markOnce("histoscope:runs");
    const added = listing.runs.filter((run) => !state.runs.includes(run));
    for (const run of added) {
      if (first && fromUrl.runs) {
        if (fromUrl.runs.includes(run)) state.shown.add(run);
      } else if (state.shown.size < MAX_SHOWN || !first) {
        state.shown.add(run);
      }
    }
    if (added.length) {
      state.runs = listing.runs;
      drawRuns();
    }
    const runs = shownRuns();
    const tags = runs.length ? await source.tags(runs) : { tags: [], versions: {}, reading: [], layout: [], steps: [] };
    markOnce("histoscope:tags");
    const changed = runs.filter((run) => JSON.stringify(state.versions[run]) !== JSON.stringify(tags.versions[run]));
    state.versions = Object.assign({}, state.versions, tags.versions);
    state.tagRuns = new Map(tags.tags.map((entry) => [entry.tag, entry.runs]));
    const names = tags.tags.map((entry) => entry.tag);
    state.reading = tags.reading.length;
    const layoutKey = JSON.stringify(tags.layout);
    const newTags = names.some((tag) => !state.cards.has(tag)) || layoutKey !== state.layoutKey;
    // Asked before the cards are placed, so the observer's report on them is not missed.
    const reported = newTags ? nextReport() : Promise.resolve();
    if (newTags) {
      state.tags = [...new Set(state.tags.concat(names))].sort();
      state.layout = tags.layout;
      state.layoutKey = layoutKey;
      placeCards();
    }
    const before = state.step;
    takeSteps(tags.steps);
    const work = [];
    for (const card of state.cards.values()) {
      if (!card.mounted) continue;
      const runsOfCard = cardRuns(card);
      if (card.stale || showChanged || state.step !== before || runsOfCard.some((run) => changed.includes(run))) work.push(load(card));
    }
    if (newTags) {
      mountInView(); // after the steps are known: these cards load at the chosen step
      markOnce("histoscope:cards-placed");
    }
    await Promise.all(work);
    // The overview of a thousand keys costs the server more than a card, and sits above
    // the cards: it is asked for once the cards in view are drawn, not before them.
    if (first) await firstCardsDrawn(reported);
    document.body.dataset.step = String(state.step); // the step the drawn cards show
    // Findings wait for the second answer: diagnosing reads the whole log directory, and
    // the first cards should not queue behind it.
    if (changed.length || showChanged || first) await loadOverview(showChanged);
    if (!first && (changed.length || showChanged || !state.findingsAsked)) {
      state.findingsAsked = true;
      await loadFindings();
    }
    if (!runs.length) placeCards();
    describeStatus();
    document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  }

  // The page's startup as User Timing marks, which benches/bench_viewer.py prints.
  function markOnce(name) {
    if (!performance.getEntriesByName(name, "mark").length) performance.mark(name);
  }

  // The observer's next report; in a background tab, where it waits for the page to be
  // shown, a second.
  function nextReport() {
    return new Promise((resolve) => {
      observed = () => {
        observed = () => {};
        resolve();
      };
      setTimeout(resolve, 1000);
    });
  }

  // The cards near the view, once the observer has reported them, loaded and drawn.
  async function firstCardsDrawn(reported) {
    await reported;
    await Promise.all([...state.cards.values()].filter((c) => c.mounted).map((c) => c.loaded));
  }

  let refreshing = null;

  function refresh(showChanged) {
    const run = () => poll(showChanged).catch((error) => {
      status.textContent = "Cannot reach the data: " + error.message;
    });
    refreshing = (refreshing || Promise.resolve()).then(run);
    return refreshing;
  }

  refresh(false).then(function again() {
    if (source.live) setTimeout(() => refresh(false).then(again), POLL_MS);
  });
}
