// histoscope: the state of the viewer's page (and the report's), the part of it kept in the
// URL, and the words the page is handed: the statistics and the severities, as the core
// lists them.

export const VIEWS = ["ridgeline", "overlay", "heatmap", "steps"];

// The lists the page was written with (see view/page.py): the statistics a step can store,
// in the core's order, and the severities of findings, least severe first.
export function readVocabulary(root = document) {
  return JSON.parse(root.getElementById("histoscope-vocabulary").textContent);
}

// Everything the page's modules share: the runs and keys known, what is shown, the chosen
// step and range, the findings, and the text, sound and braille switches.
export function newState(fromUrl, vocabulary) {
  return {
    runs: [], shown: new Set(), versions: {},
    tags: [], tagRuns: new Map(), layout: [], layoutKey: "",
    cards: new Map(), sections: [],
    steps: [], step: fromUrl.step, following: fromUrl.step === null,
    view: VIEWS.includes(fromUrl.view) ? fromUrl.view : "ridgeline",
    log: fromUrl.log, bars: fromUrl.bars, from: fromUrl.from, to: fromUrl.to, filter: fromUrl.filter,
    runFilter: fromUrl.runFilter, runNames: new Map(),
    order: fromUrl.order, compareWith: fromUrl.compareWith, ranking: null,
    findings: [], announced: new Set(),
    stats: vocabulary.stats, severities: vocabulary.severities, spectrumPrefix: vocabulary.spectrumPrefix,
    text: true, sound: false, braille: false,
  };
}

// A finding worth a badge and a mark: more severe than the least severity, which only informs.
export function notable(state, finding) {
  return state.severities.indexOf(finding.severity) > 0;
}

// The view state kept in the URL's fragment, so a view can be bookmarked and shared, from
// a server or from a report opened as a file; a widget reads none ("").
export function readUrlState(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const number = (name) => (params.has(name) && params.get(name) !== "" && Number.isFinite(Number(params.get(name)))
    ? Number(params.get(name)) : null);
  return {
    filter: params.get("filter") || "",
    runFilter: params.get("runfilter") || "",
    runs: params.has("runs") ? params.get("runs").split(",").filter(Boolean) : null,
    step: number("step"),
    view: params.get("view"),
    log: params.get("log") === "1",
    bars: params.get("bars") === "1",
    from: number("from"),
    to: number("to"),
    order: params.get("order") || "",
    compareWith: params.get("compare") || "",
  };
}

export function writeUrlState(state) {
  const params = new URLSearchParams();
  if (state.filter) params.set("filter", state.filter);
  if (state.runFilter) params.set("runfilter", state.runFilter);
  params.set("runs", [...state.shown].join(","));
  if (state.step !== null && !state.following) params.set("step", String(state.step));
  params.set("view", state.view);
  if (state.log) params.set("log", "1");
  if (state.bars) params.set("bars", "1");
  if (state.from !== null) params.set("from", String(state.from));
  if (state.to !== null) params.set("to", String(state.to));
  if (state.order) params.set("order", state.order);
  if (state.compareWith) params.set("compare", state.compareWith);
  const hash = "#" + params.toString();
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// The last index of `steps` (sorted) at or before `step`, -1 if none.
export function positionAt(steps, step) {
  let lo = 0, hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] <= step) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
