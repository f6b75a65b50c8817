// histoscope ridgeline: keyboard exploration with speech (ARIA live region), sound and braille.
// The data and the drawing's layout come from the JSON block that html.py writes.
(function () {
  "use strict";

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

  // Braille cells filled from the bottom: empty, then one to four rows of dots.
  const CELLS = ["\u2800", "\u28C0", "\u28E4", "\u28F6", "\u28FF"];
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
  let audio = null;
  let pendingSpeech = 0;

  const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

  function total(step) {
    return counts[step].reduce((sum, count) => sum + count, 0);
  }

  function describePoint() {
    const count = counts[state.step][state.bin];
    const stepTotal = total(state.step);
    // Tenths of a percent, halves rounded up (toFixed alone rounds the binary value).
    const share = stepTotal > 0 ? Math.round((1000 * count) / stepTotal) / 10 : 0;
    return (
      "Step " + steps[state.step] + ", " + labels[state.bin] + " to " + labels[state.bin + 1] +
      ", count " + numberFormat.format(count) + ", " + share.toFixed(1) + "% of the step"
    );
  }

  // Screen readers speak a live region only when its text changes, so a repeated
  // message is cleared first and written back a moment later.
  function speak(message) {
    clearTimeout(pendingSpeech);
    if (live.textContent === message) {
      live.textContent = "";
      pendingSpeech = setTimeout(() => { live.textContent = message; }, 150);
    } else {
      live.textContent = message;
    }
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

  function brailleCells(step) {
    const row = counts[step];
    const peak = Math.max(...row);
    return row.map((count) => CELLS[peak > 0 ? Math.ceil((4 * count) / peak) : 0]);
  }

  function drawBraille() {
    brailleBox.hidden = !state.braille;
    if (!state.braille) return;
    const cells = brailleCells(state.step);
    const mark = document.createElement("mark");
    mark.id = "braille-cursor";
    mark.textContent = cells[state.bin];
    braille.replaceChildren(
      cells.slice(0, state.bin).join(""), mark, cells.slice(state.bin + 1).join(""));
    brailleLabel.textContent = "Braille, step " + steps[state.step] + ":";
  }

  function tone(frequency, pan, seconds) {
    const now = audio.currentTime;
    const oscillator = audio.createOscillator();
    const gain = audio.createGain();
    const panner = audio.createStereoPanner();
    oscillator.frequency.value = frequency;
    panner.pan.value = pan;
    gain.gain.setValueAtTime(0.0001, now);
    gain.gain.exponentialRampToValueAtTime(0.25, now + 0.01);
    gain.gain.exponentialRampToValueAtTime(0.0001, now + seconds);
    oscillator.connect(gain).connect(panner).connect(audio.destination);
    oscillator.start(now);
    oscillator.stop(now + seconds + 0.02);
  }

  // Pitch rises with the count over two octaves and a half, 200 Hz for an empty bin;
  // the pan runs from the left speaker for the first bin to the right for the last.
  function playPoint() {
    if (!state.sound) return;
    const count = counts[state.step][state.bin];
    const level = layout.max > 0 ? count / layout.max : 0;
    const pan = binCount > 1 ? (2 * state.bin) / (binCount - 1) - 1 : 0;
    tone(200 * Math.pow(2, 2.5 * level), pan, 0.15);
  }

  function playEdge() {
    if (state.sound) tone(110, 0, 0.08);
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

  function toggleText() {
    state.text = !state.text;
    speak(state.text ? "Text on" : "Text off");
  }

  function toggleSound() {
    state.sound = !state.sound;
    if (state.sound) {
      // Created on this key press, never before: no sound plays until it is asked for.
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      if (audio.state === "suspended") audio.resume();
    }
    speak(state.sound ? "Sound on" : "Sound off");
    playPoint();
  }

  function toggleBraille() {
    state.braille = !state.braille;
    drawBraille();
    speak(state.braille ? "Braille on" : "Braille off");
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
    else if (key === "t" || key === "T") toggleText();
    else if (key === "s" || key === "S") toggleSound();
    else if (key === "b" || key === "B") toggleBraille();
    else if (key === "r" || key === "R") openReview();
    else if (key === "h" || key === "H" || key === "?") toggleKeys();
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
