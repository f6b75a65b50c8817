// histoscope: the list of runs, each shown or hidden by its box and filtered as one types
// (a regular expression, as in TensorBoard, or plain text); the runs a card draws; their
// colours, names as shown and spoken, and their legend.

import { PALETTE_SIZE, assignRunColours, runColour } from "./colours.js";
import { keyMatcher, runLabels } from "./names.js";

// Every run's name shortened (see names.js runLabels) to the most characters with which
// each fits the run list beside its box and swatch, in the list's own font.
function fittingLabels(runs, list) {
  const style = getComputedStyle(list);
  const context = document.createElement("canvas").getContext("2d");
  context.font = style.fontSize + " " + style.fontFamily;
  // The box, the swatch and their gaps take about three characters' height; a tenth is
  // kept spare, as the page's text may lay out a little wider than the canvas measures.
  const room = 0.9 * (list.clientWidth - 3.2 * parseFloat(style.fontSize));
  let labels = runLabels(runs, 8);
  for (let most = 40; most > 8; most--) {
    const tried = runLabels(runs, most);
    if ([...tried.values()].every((name) => context.measureText(name.short).width <= room)) {
      labels = tried;
      break;
    }
  }
  return labels;
}

export function makeRuns(app) {
  const { state, $ } = app;

  function matchingRuns() {
    const matches = keyMatcher(state.runFilter);
    return state.runs.filter(matches);
  }

  // Every run's name as shown, shortened to what tells it from the others and to as many
  // characters as the run list has room for in its font.
  function nameRuns() {
    state.runNames = fittingLabels(state.runs, $("runs"));
  }

  function label(run) {
    return (state.runNames.get(run) || { short: run }).short;
  }

  function spoken(run) {
    return (state.runNames.get(run) || { spoken: run }).spoken;
  }

  // A run's name as shown; where shortened, with its full name on hover and for screen
  // readers in its place.
  function nameElement(run) {
    const name = document.createElement("span");
    name.className = "run-name";
    name.title = run;
    if (label(run) === run) {
      name.textContent = run;
      return name;
    }
    const short = document.createElement("span");
    short.setAttribute("aria-hidden", "true");
    short.textContent = label(run);
    const full = document.createElement("span");
    full.className = "visually-hidden";
    full.textContent = run;
    name.append(short, full);
    return name;
  }

  function swatch(run) {
    const mark = document.createElement("span");
    mark.className = "swatch";
    mark.setAttribute("aria-hidden", "true");
    if (state.shown.has(run) && shownRuns().includes(run)) mark.style.background = runColour(run);
    else mark.classList.add("unshown");
    return mark;
  }

  function drawRuns() {
    nameRuns();
    assignRunColours(shownRuns());
    const listed = matchingRuns();
    $("runs").replaceChildren(...listed.map((run) => {
      const item = document.createElement("li");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = state.shown.has(run);
      box.dataset.run = run;
      box.addEventListener("change", () => setShown([run], box.checked));
      const text = document.createElement("label");
      text.append(box, swatch(run), nameElement(run));
      item.appendChild(text);
      return item;
    }));
    const shown = shownRuns().length;
    $("runs-note").textContent = (state.runFilter ? listed.length + " of " + state.runs.length + " runs match; " : "") +
      shown + " shown" + (shown > PALETTE_SIZE ? "; colours repeat past " + PALETTE_SIZE : "");
    drawLegend();
    const select = $("overview-run");
    const chosen = select.value;
    select.replaceChildren(...shownRuns().map((run) => {
      const option = new Option(label(run), run);
      option.title = run;
      return option;
    }));
    if (shownRuns().includes(chosen)) select.value = chosen;
  }

  // The shown runs' colours and names, above the cards, when there is more than one.
  function drawLegend() {
    const runs = shownRuns();
    const legend = $("run-legend");
    legend.hidden = runs.length < 2;
    legend.replaceChildren(...runs.map((run) => {
      const item = document.createElement("li");
      item.append(swatch(run), nameElement(run));
      return item;
    }));
  }

  function setShown(runs, shown) {
    for (const run of runs) {
      if (shown) state.shown.add(run);
      else state.shown.delete(run);
    }
    drawRuns();
    for (const card of state.cards.values()) card.stale = true;
    app.remember();
    app.refresh(true);
  }

  // The runs drawn: those ticked that the run filter lets through, in the list's order.
  function shownRuns() {
    const matches = keyMatcher(state.runFilter);
    return state.runs.filter((run) => state.shown.has(run) && matches(run));
  }

  function cardRuns(card) {
    const has = state.tagRuns.get(card.tag) || [];
    return shownRuns().filter((run) => has.includes(run));
  }

  $("show-all").addEventListener("click", () => setShown(matchingRuns(), true));
  $("hide-all").addEventListener("click", () => setShown(matchingRuns(), false));
  $("run-filter").value = state.runFilter;
  // The list follows each key typed; the cards, once typing pauses.
  let typing = 0;
  $("run-filter").addEventListener("input", () => {
    state.runFilter = $("run-filter").value;
    drawRuns();
    app.remember();
    clearTimeout(typing);
    typing = setTimeout(() => {
      for (const card of state.cards.values()) card.stale = true;
      app.refresh(true);
    }, 250);
  });

  return { drawRuns, shownRuns, cardRuns, runLabel: label, runSpoken: spoken, runNameElement: nameElement, runSwatch: swatch };
}
