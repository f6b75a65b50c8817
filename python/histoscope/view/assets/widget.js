// histoscope widget: the viewer's page in a notebook's output (anywidget), in a shadow root
// of its own, over data the kernel sends while the training logs. Each message is one
// update of the core's live chart (rust/bins/live_update.rs): a header naming the changes,
// their numbers in binary buffers, or the same bytes as base64 text in the header's
// `encoded` list where the front end drops buffers (Colab; notebook/transports.py). The page holds the report's data (embedded.js answers
// from it) and the app is told when it changed.

import { start } from "./app.js";
import { embeddedSource } from "./embedded.js";

// The numbers of a buffer the kernel sent, copied out of the message (its offset may not
// be aligned for the type).
function numbers(Type, view) {
  if (!view) return new Type(0);
  const bytes = view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);
  return new Type(bytes);
}

function newData() {
  return { runs: [], tags: [], layout: [], steps: {}, cards: {}, findings: [], spectral: null, orders: null };
}

// What the page holds, grown update by update: the report's data, and a version per run.
export function makeStore() {
  const data = newData();
  const versions = {};
  const listeners = new Set();

  // Applies one change to a series: new rows after the rows kept (see live_update.rs).
  function applyChange(change, at, arrays, header) {
    const card = data.cards[change.tag] || (data.cards[change.tag] = { edges: [], runs: {} });
    const bins = header.bins;
    if (change.edges) {
      card.edges = Array.from(arrays.edges.subarray(at.edges, at.edges + bins + 1));
      at.edges += bins + 1;
    }
    const old = card.runs[change.run] || { steps: [], counts: [], stats: {} };
    let held = [];
    if (!change.full && change.masked) {
      const mask = arrays.mask.subarray(at.mask, at.mask + change.keep);
      at.mask += change.keep;
      held = [...mask.keys()].filter((i) => mask[i] === 1);
    } else if (!change.full) {
      held = [...Array(change.keep).keys()];
    }
    const entry = { steps: held.map((i) => old.steps[i]), counts: held.map((i) => old.counts[i]), stats: {} };
    header.figures.forEach((name) => { entry.stats[name] = held.map((i) => (old.stats[name] || [])[i]); });
    for (let r = 0; r < change.rows; r++) {
      const row = at.rows + r;
      entry.steps.push(arrays.steps[row]);
      entry.counts.push(Array.from(arrays.counts.subarray(row * bins, (row + 1) * bins)));
      header.figures.forEach((name, f) => {
        const value = arrays.figures[row * header.figures.length + f];
        entry.stats[name].push(Number.isFinite(value) ? value : null);
      });
    }
    at.rows += change.rows;
    card.runs[change.run] = entry;
  }

  // The lists every answer starts from, once the cards changed.
  function relist(touched) {
    const tags = Object.keys(data.cards).sort();
    data.tags = tags.map((tag) => ({ tag, runs: Object.keys(data.cards[tag].runs).sort() }));
    data.runs = [...new Set(data.tags.flatMap((t) => t.runs))].sort();
    for (const run of touched) {
      const steps = new Set();
      for (const tag of tags) for (const s of (data.cards[tag].runs[run] || { steps: [] }).steps) steps.add(s);
      data.steps[run] = [...steps].sort((a, b) => a - b);
      versions[run] = (versions[run] || 0) + 1;
    }
  }

  // One message of the kernel: its header and the buffers edges, steps, counts, figures, mask.
  function apply(header, buffers) {
    if (header.findings) data.findings = header.findings;
    if (header.notes) data.notes = header.notes;
    const arrays = {
      edges: numbers(Float64Array, buffers[0]), steps: numbers(Float64Array, buffers[1]),
      counts: numbers(Float32Array, buffers[2]), figures: numbers(Float32Array, buffers[3]),
      mask: numbers(Uint8Array, buffers[4]),
    };
    const at = { edges: 0, rows: 0, mask: 0 };
    const touched = new Set();
    for (const change of header.changes || []) {
      applyChange(change, at, arrays, header);
      touched.add(change.run);
    }
    relist(touched);
    if (header.findings) for (const run of data.runs) versions[run] = (versions[run] || 0) + 1;
    for (const listener of listeners) listener();
  }

  return { data, versions, apply, listen: (fn) => listeners.add(fn), forget: (fn) => listeners.delete(fn) };
}

// The snapshot a saved notebook keeps (the `_snapshot` trait): a little-endian header
// length, the JSON header, then the five buffers at the offsets the header gives.
function unpack(bytes) {
  if (!bytes || !bytes.byteLength) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(bytes.buffer, bytes.byteOffset + 4, length)));
  const buffers = header.buffers.map(([offset, size]) => new DataView(bytes.buffer, bytes.byteOffset + offset, size));
  return { header, buffers };
}

// Base64 text as the bytes it holds.
function decoded(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// The `_snapshot` trait: bytes, or base64 text from a widget whose transport is base64.
function asBytes(value) {
  if (!value) return null;
  if (typeof value === "string") return decoded(value);
  if (value instanceof DataView) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return value.byteLength !== undefined ? new Uint8Array(value.buffer || value, value.byteOffset || 0, value.byteLength) : null;
}

const stores = new WeakMap();

// One store per model, shared by every view of it: what arrived before a view was
// drawn is there when it is.
function storeOf(model) {
  let store = stores.get(model);
  if (store) return store;
  store = makeStore();
  stores.set(model, store);
  const saved = unpack(asBytes(model.get("_snapshot")));
  if (saved) store.apply(saved.header, saved.buffers);
  model.on("msg:custom", (message, buffers) => {
    if (!message || message.kind !== "update") return;
    const carried = message.encoded ? message.encoded.map((text) => new DataView(decoded(text).buffer)) : buffers;
    store.apply(message, carried || []);
  });
  return store;
}

function liveSource(store, vocabulary) {
  const base = embeddedSource(store.data, vocabulary.stats, vocabulary.overviewSteps);
  return Object.assign({}, base, {
    live: true,
    nothingYet: "No histograms yet: they appear here as they are logged",
    tags: async (runs) => Object.assign(await base.tags(runs), { versions: Object.assign({}, store.versions) }),
    findings: async () => ({ findings: store.data.findings, notes: store.data.notes || [] }),
    subscribe: (listener) => store.listen(listener),
  });
}

// Lumino (JupyterLab) runs its shortcuts on keys that reach the document: keys used in
// the widget stay in it.
function keepKeys(host) {
  host.dataset.lmSuppressShortcuts = "true";
  host.addEventListener("keydown", (event) => event.stopPropagation());
}

// Views drawn in this document, counted across module copies (a front end may load the
// module once per model).
const VIEWS = Symbol.for("histoscope.widget.views");

const LANDMARKS = 'nav, aside, section[aria-label], section[aria-labelledby], [role="region"], [role="navigation"]';

// Several outputs (two runs, or a run shown again as a cell's last line) draw the same
// landmarks: each view after the first names its own apart, those the app adds later
// too, so that a screen reader's list of landmarks tells them apart.
function nameApart(root) {
  const view = (globalThis[VIEWS] || 0) + 1;
  globalThis[VIEWS] = view;
  if (view < 2) return;
  const suffix = ` (view ${view})`;
  const rename = () => {
    for (const region of root.querySelectorAll(LANDMARKS)) {
      const by = region.getAttribute("aria-labelledby");
      const name = by ? (root.getElementById(by)?.textContent || "").trim() : region.getAttribute("aria-label") || "";
      if (name.endsWith(suffix)) continue;
      region.setAttribute("aria-label", name + suffix);
      region.removeAttribute("aria-labelledby");
    }
  };
  rename();
  new MutationObserver(rename).observe(root, {
    subtree: true, childList: true, attributes: true, attributeFilter: ["aria-label", "aria-labelledby"],
  });
}

export function render({ model, el }) {
  const host = document.createElement("div");
  host.className = "histoscope-widget";
  keepKeys(host);
  el.appendChild(host);
  const root = host.attachShadow({ mode: "open" });
  root.innerHTML = model.get("_page");
  nameApart(root);
  const page = root.querySelector(".histoscope-page");
  page.style.maxHeight = model.get("height") + "px";
  const vocabulary = JSON.parse(root.getElementById("histoscope-vocabulary").textContent);
  const store = storeOf(model);
  host.histoscopeData = store.data; // what the page holds, for a reader's console and the tests
  const source = liveSource(store, vocabulary);
  start(source, { root, flags: host, url: false });
  // The kernel hears that a view was drawn: where none is, it shows its saved view instead.
  try { model.send({ kind: "drawn" }); } catch (error) { /* a host without messages back */ }
  const resize = () => { page.style.maxHeight = model.get("height") + "px"; };
  model.on("change:height", resize);
  return () => model.off("change:height", resize);
}

// anywidget's hooks (the kernel's module adds `export default` around these two).
export function initialize({ model }) {
  storeOf(model);
}
