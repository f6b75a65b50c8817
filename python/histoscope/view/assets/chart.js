// histoscope ridgeline: keyboard exploration with speech (ARIA live region), sound and braille.
// The data and the drawing's layout come from the JSON block that html.py writes.
(function () {
  "use strict";

  const a11y = window.histoscopeA11y;

  const data = JSON.parse(document.getElementById("histoscope-data").textContent);
  const steps = data.steps;
  const counts = data.counts;
  const labels = data.labels;
  const layout = data.layout;
  const stepCount = steps.length;
  const binCount = labels.length - 1;

  const chart = document.getElementById("chart");
  const live = document.getElementById("announcement");
  const cursor = document.getElementById("cursor");
  const stem = document.getElementById("cursor-stem");
  const dot = document.getElementById("cursor-dot");
  const cursorRidge = document.getElementById("cursor-ridge");
  const ridges = document.querySelectorAll("#ridges path.ridge");
  const brailleBox = document.getElementById("braille-box");
  const brailleLabel = document.getElementById("braille-label");
  const braille = document.getElementById("braille");
  const reviewBox = document.getElementById("review-box");
  const review = document.getElementById("review");
  const keys = document.getElementById("keys");

  const MOVES = {
    ArrowLeft: [0, -1, "First bin"],
    ArrowRight: [0, 1, "Last bin"],
    ArrowUp: [1, 0, "Last step"],
    ArrowDown: [-1, 0, "First step"],
  };
  const KEYS_SPOKEN =
    "Keys: Left and Right, bins; Up and Down, steps; Home and End, first and last bin;" +
    " Page Up and Page Down, last and first step; T text; S sound; B braille;" +
    " R review; H this list.";

  const state = { step: 0, bin: 0, text: true, sound: false, braille: false, last: "" };
  const speak = a11y.speaker(live);

  function total(step) {
    return counts[step].reduce((sum, count) => sum + count, 0);
  }

  function describePoint() {
    const count = counts[state.step][state.bin];
    return (
      "Step " + steps[state.step] + ", " + labels[state.bin] + " to " + labels[state.bin + 1] +
      ", count " + a11y.numberFormat.format(count) + ", " +
      a11y.percent(count, total(state.step)) + " of the step"
    );
  }

  function announce(message) {
    state.last = message;
    if (state.text) speak(message);
  }

  function drawCursor() {
    const count = counts[state.step][state.bin];
    const x = layout.x0 + (state.bin + 0.5) * layout.binWidth;
    const base = layout.bottom - state.step * layout.gap;
    const top = layout.max > 0 ? base - (count / layout.max) * layout.ridgeHeight : base;
    stem.setAttribute("x1", x.toFixed(1));
    stem.setAttribute("x2", x.toFixed(1));
    stem.setAttribute("y1", base.toFixed(1));
    stem.setAttribute("y2", top.toFixed(1));
    dot.setAttribute("cx", x.toFixed(1));
    dot.setAttribute("cy", top.toFixed(1));
    cursor.dataset.step = String(steps[state.step]);
    cursor.dataset.bin = String(state.bin);
    cursor.removeAttribute("display");
    const ridge = ridges[stepCount - 1 - state.step];
    cursorRidge.setAttribute("d", ridge.getAttribute("d"));
    cursorRidge.setAttribute("transform", ridge.getAttribute("transform"));
    cursorRidge.dataset.step = String(steps[state.step]);
    cursorRidge.removeAttribute("display");
  }

  function drawBraille() {
    brailleBox.hidden = !state.braille;
    if (!state.braille) return;
    a11y.drawBraille(braille, counts[state.step], state.bin, "braille-cursor");
    brailleLabel.textContent = "Braille, step " + steps[state.step] + ":";
  }

  function playPoint() {
    if (!state.sound) return;
    const level = layout.max > 0 ? counts[state.step][state.bin] / layout.max : 0;
    a11y.playLevel(level, state.bin, binCount);
  }

  function playEdge() {
    if (state.sound) a11y.playEdge();
  }

  function moveTo(step, bin) {
    state.step = step;
    state.bin = bin;
    drawCursor();
    drawBraille();
    announce(describePoint());
    playPoint();
  }

  function moveBy(key) {
    const [stepDelta, binDelta, edge] = MOVES[key];
    const step = state.step + stepDelta;
    const bin = state.bin + binDelta;
    if (step < 0 || step >= stepCount || bin < 0 || bin >= binCount) {
      announce(edge);
      playEdge();
    } else {
      moveTo(step, bin);
    }
  }

  function openReview() {
    review.value = state.last || describePoint();
    reviewBox.hidden = false;
    review.focus();
    review.select();
  }

  function closeReview() {
    reviewBox.hidden = true;
    chart.focus();
  }

  function toggleKeys() {
    keys.hidden = !keys.hidden;
    speak(keys.hidden ? "Keys hidden" : KEYS_SPOKEN);
  }

  function act(key) {
    if (key in MOVES) moveBy(key);
    else if (key === "Home") moveTo(state.step, 0);
    else if (key === "End") moveTo(state.step, binCount - 1);
    else if (key === "PageUp") moveTo(stepCount - 1, state.bin);
    else if (key === "PageDown") moveTo(0, state.bin);
    else if (a11y.toggle(state, a11y.modeKey(key), speak, { sound: playPoint, braille: drawBraille })) return true;
    else if (a11y.modeKey(key) === "review") openReview();
    else if (a11y.modeKey(key) === "keys") toggleKeys();
    else return false;
    return true;
  }

  if (stepCount === 0 || binCount < 1) {
    chart.addEventListener("focus", () => speak("No data to explore"));
    return;
  }
  chart.addEventListener("focus", drawCursor);
  chart.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (act(event.key)) event.preventDefault();
  });
  review.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      closeReview();
    }
  });
})();
