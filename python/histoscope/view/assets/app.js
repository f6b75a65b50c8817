// histoscope: the page of the viewer and of the report. Keys are grouped into collapsible
// sections, filtered as one types, and drawn as small-multiple cards only while they are
// near the viewport (sections.js, cards.js). `source` answers the data: the local server
// (api.js), the data embedded in a report (report.js) or a notebook's widget (widget.js).
// This module wires the pieces together and keeps the page up to date with the runs as
// they grow. `page` says where it lives: a whole document (the default) or a widget's
// shadow root, which keeps no state in the URL and is told when its data changes.

import { readUrlState, writeUrlState, newState, readVocabulary } from "./state.js";
import { makeRuns } from "./runs.js";
import { makeSections } from "./sections.js";
import { makeCards } from "./cards.js";
import { makeControls } from "./controls.js";
import { makeKeys } from "./keys.js";
import { makeOverview } from "./overview.js";
import { makeAlerts } from "./alerts.js";
import { makeOrder } from "./order.js";
import { naturalOrder } from "./names.js";

const POLL_MS = 2000;
// Runs shown at first, as many as there are distinct colours; the rest can be shown from
// the list (viewer.FIRST_SHOWN on the server reads these ahead).
const MAX_SHOWN = 10;

export function start(source, page = {}) {
  const root = page.root || document;
  const flags = page.flags || document.body; // data-* marks of what is drawn, for tests and benches
  const inUrl = page.url !== false;
  const $ = (id) => root.getElementById(id);
  const fromUrl = readUrlState(inUrl ? location.hash : "");
  const state = newState(fromUrl, readVocabulary(root));
  const status = $("status");
  const remember = inUrl ? () => writeUrlState(state) : () => {};
  // Every module adds its functions to `app` and calls the others' through it.
  const app = { state, source, $, root, flags, status, remember, refresh, describeStatus, markOnce };
  Object.assign(app, makeRuns(app), makeSections(app), makeCards(app), makeControls(app), makeAlerts(app));
  app.keys = makeKeys(app);
  Object.assign(app, makeOverview(app), makeOrder(app));

  function describeStatus() {
    if (!state.runs.length) {
      status.textContent = source.nothingYet ||
        "No runs yet: no events files under this log directory" + (source.live ? "; watching for them" : "");
      return;
    }
    const filtered = state.filter ? ", " + state.matching + " match the filter" : "";
    status.textContent = state.runs.length + " runs (" + app.shownRuns().length + " shown), " +
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
      app.drawRuns();
    }
    const runs = app.shownRuns();
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
    const reported = newTags ? app.nextReport() : Promise.resolve();
    if (newTags) {
      state.tags = [...new Set(state.tags.concat(names))].sort(naturalOrder);
      state.layout = tags.layout;
      state.layoutKey = layoutKey;
      app.placeCards();
    }
    const before = state.step;
    app.takeSteps(tags.steps);
    const work = [];
    for (const card of state.cards.values()) {
      if (!card.mounted) continue;
      const runsOfCard = app.cardRuns(card);
      if (card.stale || showChanged || state.step !== before || runsOfCard.some((run) => changed.includes(run))) work.push(app.load(card));
    }
    if (newTags) {
      app.mountInView(); // after the steps are known: these cards load at the chosen step
      markOnce("histoscope:cards-placed");
    }
    await Promise.all(work);
    // The overview of a thousand keys costs the server more than a card, and sits above
    // the cards: it is asked for once the cards in view are drawn, not before them.
    if (first) await firstCardsDrawn(reported);
    flags.dataset.step = String(state.step); // the step the drawn cards show
    if (changed.length || showChanged || first) await app.loadOverview(showChanged);
    // Findings are asked for once the first cards are drawn; diagnosing reads the whole log
    // directory, so the first answer is not waited for.
    if (first || changed.length || showChanged) {
      const findings = app.loadFindings();
      if (!first) await findings;
    }
    if (!runs.length) app.placeCards();
    describeStatus();
    flags.dataset.polls = String(Number(flags.dataset.polls || 0) + 1);
  }

  // The page's startup as User Timing marks, which benches/bench_viewer.py prints.
  function markOnce(name) {
    if (!performance.getEntriesByName(name, "mark").length) performance.mark(name);
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

  // A source that says when its data changed (the widget's) is asked again then, one
  // refresh waiting at most; a server is asked every POLL_MS.
  let waiting = false;
  const changed = () => {
    if (waiting) return;
    waiting = true;
    refresh(false).then(() => { waiting = false; });
  };
  if (source.subscribe) source.subscribe(changed);
  refresh(false).then(function again() {
    if (source.live && !source.subscribe) setTimeout(() => refresh(false).then(again), POLL_MS);
  });
}
