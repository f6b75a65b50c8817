// histoscope: the list of runs, each shown or hidden by its box, and the runs a card draws.

import { runColour } from "./format.js";

export function makeRuns(app) {
  const { state, $ } = app;

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
    app.remember();
    app.refresh(true);
  }

  function shownRuns() {
    return state.runs.filter((run) => state.shown.has(run));
  }

  function cardRuns(card) {
    const has = state.tagRuns.get(card.tag) || [];
    return shownRuns().filter((run) => has.includes(run));
  }

  $("show-all").addEventListener("click", () => setShown(state.runs, true));
  $("hide-all").addEventListener("click", () => setShown(state.runs, false));

  return { drawRuns, shownRuns, cardRuns };
}
