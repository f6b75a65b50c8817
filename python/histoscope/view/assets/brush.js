// histoscope: the step-range brush, two thumbs on a track of the logged steps. Dragging on
// the track draws a new range, dragging the band between the thumbs moves it, dragging a
// thumb moves one end. Each thumb is a slider for the keyboard: arrows move it a logged step,
// Page Up and Page Down a tenth of the steps, Home and End as far as it can go; the range
// is announced when it changes. The range's ends are steps or null: from the first step, or
// to the last one (following the steps a growing run adds).

import { positionAt } from "./state.js";

const PAGE_SHARE = 0.1; // Page Up and Page Down move a thumb this share of the steps

export function makeBrush(container, onChange, speak) {
  let steps = [];
  let from = null, to = null;

  const track = document.createElement("div");
  track.className = "brush-track";
  const band = document.createElement("div");
  band.className = "brush-band";
  const thumbs = ["from", "to"].map((end) => {
    const thumb = document.createElement("div");
    thumb.className = "brush-thumb";
    thumb.dataset.end = end;
    thumb.tabIndex = 0;
    thumb.setAttribute("role", "slider");
    thumb.setAttribute("aria-label", end === "from" ? "First step of the range" : "Last step of the range");
    thumb.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (keyed(end, event.key)) event.preventDefault();
    });
    return thumb;
  });
  track.append(band, ...thumbs);
  const scale = document.createElement("p");
  scale.className = "brush-scale";
  scale.setAttribute("aria-hidden", "true");
  const first = document.createElement("span");
  const last = document.createElement("span");
  scale.append(first, last);
  container.replaceChildren(track, scale);

  // Positions in `steps` of the two ends.
  function ends() {
    const n = steps.length;
    const lo = from === null ? 0 : Math.max(0, Math.min(n - 1, positionAtOrAfter(from)));
    const hi = to === null ? n - 1 : Math.max(lo, Math.min(n - 1, positionAt(steps, to)));
    return [lo, Math.max(lo, hi)];
  }

  function positionAtOrAfter(step) {
    const at = positionAt(steps, step);
    return at >= 0 && steps[at] === step ? at : at + 1;
  }

  function share(position) {
    const lo = steps[0], hi = steps[steps.length - 1];
    return hi > lo ? (steps[position] - lo) / (hi - lo) : position === 0 ? 0 : 1;
  }

  function describe() {
    if (!steps.length) return "No steps yet";
    const [lo, hi] = ends();
    const all = lo === 0 && hi === steps.length - 1 ? ", all" : "";
    return "Step range " + steps[lo] + " to " + steps[hi] + ": " + (hi - lo + 1) + " of " + steps.length + " steps" + all;
  }

  function draw() {
    const n = steps.length;
    container.hidden = n === 0;
    if (!n) return;
    const [lo, hi] = ends();
    const left = share(lo) * 100, right = share(hi) * 100;
    band.style.left = left + "%";
    band.style.width = (right - left) + "%";
    first.textContent = String(steps[0]);
    last.textContent = String(steps[n - 1]);
    thumbs.forEach((thumb, i) => {
      const position = i === 0 ? lo : hi;
      thumb.style.left = (i === 0 ? left : right) + "%";
      // Each thumb's bounds are the other thumb's, as the APG's two-thumb slider has them.
      thumb.setAttribute("aria-valuemin", String(i === 0 ? steps[0] : steps[lo]));
      thumb.setAttribute("aria-valuemax", String(i === 0 ? steps[hi] : steps[n - 1]));
      thumb.setAttribute("aria-valuenow", String(steps[position]));
      thumb.setAttribute("aria-valuetext", (i === 0 ? "from step " : "to step ") + steps[position] +
        ", " + (hi - lo + 1) + " of " + n + " steps");
    });
    track.dataset.from = String(steps[lo]);
    track.dataset.to = String(steps[hi]);
  }

  // The range from positions `lo` to `hi`; an end at the first or last step is left open.
  function choose(lo, hi, announce) {
    const n = steps.length;
    const nextFrom = lo <= 0 ? null : steps[lo];
    const nextTo = hi >= n - 1 ? null : steps[hi];
    if (nextFrom === from && nextTo === to) return false;
    from = nextFrom;
    to = nextTo;
    draw();
    if (announce) speak(describe());
    onChange(from, to);
    return true;
  }

  function keyed(end, key) {
    const n = steps.length;
    if (!n) return false;
    const [lo, hi] = ends();
    const page = Math.max(1, Math.round(n * PAGE_SHARE));
    const moves = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -page, PageUp: page };
    const now = end === "from" ? lo : hi;
    const min = end === "from" ? 0 : lo, max = end === "from" ? hi : n - 1;
    let target;
    if (key in moves) target = now + moves[key];
    else if (key === "Home") target = min;
    else if (key === "End") target = max;
    else return false;
    target = Math.max(min, Math.min(max, target));
    if (target === now) {
      speak((end === "from" ? "From step " : "To step ") + steps[now] + ": " + (target === 0 ? "the first step" : target === n - 1 ? "the last step" : "the other end"));
      return true;
    }
    if (end === "from") choose(target, hi, true);
    else choose(lo, target, true);
    return true;
  }

  // ---- the pointer ----------------------------------------------------------------------

  function positionOf(clientX) {
    const box = track.getBoundingClientRect();
    const x = Math.max(0, Math.min(1, (clientX - box.left) / (box.width || 1)));
    const step = steps[0] + x * (steps[steps.length - 1] - steps[0]);
    const below = Math.max(0, positionAt(steps, step));
    const above = Math.min(steps.length - 1, below + 1);
    return step - steps[below] <= steps[above] - step ? below : above;
  }

  let drag = null;

  track.addEventListener("pointerdown", (event) => {
    if (!steps.length || event.button !== 0) return;
    event.preventDefault();
    const [lo, hi] = ends();
    const at = positionOf(event.clientX);
    const end = event.target.dataset && event.target.dataset.end;
    const whole = lo === 0 && hi === steps.length - 1; // a band of every step moves nowhere
    if (end) drag = { kind: end, lo, hi };
    else if (event.target === band && !whole) drag = { kind: "band", lo, hi, at };
    else drag = { kind: "new", anchor: at, lo, hi };
    drag.moved = false;
    track.setPointerCapture(event.pointerId);
    (end === "to" ? thumbs[1] : thumbs[0]).focus({ preventScroll: true });
  });

  track.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const at = positionOf(event.clientX);
    const n = steps.length;
    let lo = drag.lo, hi = drag.hi;
    if (drag.kind === "from") lo = Math.min(at, drag.hi);
    else if (drag.kind === "to") hi = Math.max(at, drag.lo);
    else if (drag.kind === "band") {
      const shift = Math.max(-drag.lo, Math.min(n - 1 - drag.hi, at - drag.at));
      lo = drag.lo + shift; hi = drag.hi + shift;
    } else {
      lo = Math.min(drag.anchor, at); hi = Math.max(drag.anchor, at);
    }
    drag.moved = drag.moved || lo !== drag.lo || hi !== drag.hi;
    drag.now = [lo, hi];
    preview(lo, hi);
  });

  // While dragging the thumbs follow the pointer; the range is chosen when the button is let go.
  function preview(lo, hi) {
    const keep = [from, to];
    from = lo <= 0 ? null : steps[lo];
    to = hi >= steps.length - 1 ? null : steps[hi];
    draw();
    [from, to] = keep;
  }

  function release(event) {
    if (!drag) return;
    const done = drag;
    drag = null;
    if (track.hasPointerCapture(event.pointerId)) track.releasePointerCapture(event.pointerId);
    if (event.type === "pointercancel") return draw();
    if (done.moved && done.now) return choose(done.now[0], done.now[1], true) || draw();
    if (done.kind === "new") {
      // A click on the track moves the nearer end there.
      const at = done.anchor;
      const nearer = Math.abs(at - done.lo) <= Math.abs(at - done.hi) ? "from" : "to";
      return (nearer === "from" ? choose(Math.min(at, done.hi), done.hi, true) : choose(done.lo, Math.max(at, done.lo), true)) || draw();
    }
    draw();
  }

  track.addEventListener("pointerup", release);
  track.addEventListener("pointercancel", release);

  return {
    // The logged steps (sorted); the range is kept, within them.
    setSteps(next) {
      steps = next;
      draw();
    },
    // The range from elsewhere (the inputs, a drag on a chart, the URL): drawn, not reported.
    setRange(nextFrom, nextTo) {
      from = nextFrom;
      to = nextTo;
      draw();
    },
    describe,
  };
}

// Dragging across the steps of a card's chart (the heatmap's rows, the bands' step axis)
// chooses the steps dragged over as the range; the range slider is the keyboard's way to
// the same. `shapeOf(svg)` gives a panel's shape, whose `brush` says where its steps lie.
export function brushChart(chart, shapeOf, onRange) {
  let drag = null;

  // Where the pointer is in the panel's own units (its viewBox).
  function local(svg, event) {
    return new DOMPoint(event.clientX, event.clientY).matrixTransform(svg.getScreenCTM().inverse());
  }

  chart.addEventListener("pointerdown", (event) => {
    const svg = event.target.closest && event.target.closest("svg.panel");
    const shape = svg && shapeOf(svg);
    if (!shape || !shape.brush || event.button !== 0) return;
    const at = local(svg, event);
    const spot = shape.brush.axis === "x" ? at.x : at.y;
    if (spot < shape.brush.lo || spot > shape.brush.hi) return;
    event.preventDefault(); // no text selection while dragging; so the focus is moved here
    chart.focus({ preventScroll: true });
    const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    rect.setAttribute("class", "brush-selection");
    svg.appendChild(rect);
    drag = { svg, brush: shape.brush, start: spot, end: spot, rect };
    place(drag);
    chart.setPointerCapture(event.pointerId);
  });

  function place(d) {
    const a = Math.max(d.brush.lo, Math.min(d.start, d.end));
    const b = Math.min(d.brush.hi, Math.max(d.start, d.end));
    const [x, y, w, h] = d.brush.axis === "x"
      ? [a, d.brush.across[0], b - a, d.brush.across[1] - d.brush.across[0]]
      : [d.brush.across[0], a, d.brush.across[1] - d.brush.across[0], b - a];
    d.rect.setAttribute("x", x.toFixed(1));
    d.rect.setAttribute("y", y.toFixed(1));
    d.rect.setAttribute("width", Math.max(0, w).toFixed(1));
    d.rect.setAttribute("height", Math.max(0, h).toFixed(1));
  }

  chart.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const at = local(drag.svg, event);
    drag.end = drag.brush.axis === "x" ? at.x : at.y;
    place(drag);
  });

  function release(event) {
    if (!drag) return;
    const done = drag;
    drag = null;
    if (chart.hasPointerCapture(event.pointerId)) chart.releasePointerCapture(event.pointerId);
    done.rect.remove();
    // A click, or a drag of a few units, chooses nothing: the chart keeps its clicks.
    if (event.type === "pointercancel" || Math.abs(done.end - done.start) < 4) return;
    const a = done.brush.stepAt(Math.min(done.start, done.end));
    const b = done.brush.stepAt(Math.max(done.start, done.end));
    onRange(Math.min(a, b), Math.max(a, b));
  }

  chart.addEventListener("pointerup", release);
  chart.addEventListener("pointercancel", release);
}
