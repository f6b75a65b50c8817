// histoscope: the page's controls, one toolbar: the key filter (sections.js), the view, the
// count axis and the chosen step (slider and number); behind a disclosure, the step range
// (inputs, brush, or a drag across a chart) and the ridges' shape. Every card and the URL
// follow them.

import * as a11y from "./a11y.js";
import { makeBrush } from "./brush.js";
import { positionAt } from "./state.js";

export function makeControls(app) {
  const { state, $ } = app;
  const slider = $("step-slider");
  const number = $("step-number");
  const rangeLive = a11y.speaker($("range-live"));
  const brush = makeBrush($("range-brush"), (from, to) => setRange(from, to), rangeLive);

  function syncControl() {
    const position = Math.max(0, positionAt(state.steps, state.step === null ? 0 : state.step));
    slider.max = String(Math.max(0, state.steps.length - 1));
    slider.value = String(position);
    slider.setAttribute("aria-valuetext", state.step === null ? "no steps" : "step " + state.step);
    number.value = state.step === null ? "" : String(state.step);
    const last = state.steps.length ? state.steps[state.steps.length - 1] : null;
    $("step-range").textContent = state.steps.length
      ? "of " + state.steps[0] + " to " + last
      : "no steps yet";
  }

  function takeSteps(steps) {
    state.steps = steps;
    const last = steps.length ? steps[steps.length - 1] : null;
    if (state.step === null || state.following) state.step = last;
    syncControl();
    brush.setSteps(steps);
  }

  function chooseStep(step) {
    if (!state.steps.length) return Promise.resolve();
    const position = Math.max(0, positionAt(state.steps, step));
    state.step = state.steps[position];
    state.following = position === state.steps.length - 1;
    syncControl();
    app.remember();
    return app.reloadMounted().then(() => { app.flags.dataset.step = String(state.step); });
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
    app.remember();
    return app.reloadMounted();
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

  const view = $("view");
  view.value = state.view;
  view.addEventListener("change", () => {
    state.view = view.value;
    app.flags.dataset.view = state.view;
    app.remember();
    app.reloadMounted();
  });
  app.flags.dataset.view = state.view;
  $("bars").checked = state.bars;
  $("bars").addEventListener("change", () => {
    state.bars = $("bars").checked;
    app.remember();
    app.redrawMounted();
  });
  $("log-axis").checked = state.log;
  $("log-axis").addEventListener("change", () => {
    state.log = $("log-axis").checked;
    app.remember();
    app.redrawMounted();
  });

  return { takeSteps, chooseStep, chartRange };
}
