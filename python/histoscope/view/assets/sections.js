// histoscope: the sections of keys, each key's card placed in its section, the filter, and
// which cards are near enough to the viewport to be drawn, so that a model with a thousand
// keys keeps a small page.

import { keyMatcher, naturalOrder, pathSection, sharedDepth } from "./names.js";

const NEAR_PX = 600; // cards this close to the viewport are drawn, farther ones released

// A glob (`*` any run of characters, `?` one) as an anchored regular expression.
export function globToRegExp(glob) {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp("^" + body + "$");
}

// Where a key goes: the section `define_metric` declared (the last matching declaration
// wins), else its path's (see names.js pathSection, `depth` the modules every dotted key
// shares); and whether it was declared hidden.
export function placeKey(tag, layout, depth = 0) {
  let section = pathSection(tag, depth);
  let hidden = false;
  for (const declared of layout) {
    if (!declared.regexp) declared.regexp = globToRegExp(declared.pattern);
    if (!declared.regexp.test(tag)) continue;
    if (declared.section) section = declared.section;
    hidden = Boolean(declared.hidden);
  }
  return { section, hidden };
}

export function makeSections(app) {
  const { state, $ } = app;

  let observed = () => {}; // called once the observer has reported where the cards are
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      const card = state.cards.get(entry.target.dataset.tag);
      if (!card) continue;
      if (entry.isIntersecting) app.mount(card);
      else app.unmount(card);
    }
    observed();
  // The document as the root, not the implicit one: in a frame (TensorBoard's tab) the
  // implicit root clips the cards to the frame's edges before the margin is added.
  }, { root: document, rootMargin: NEAR_PX + "px 0px" });

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

  // Which section and visibility each key has; rebuilt when keys or declarations change.
  function placeCards() {
    const bySection = new Map();
    const depth = sharedDepth(state.tags);
    for (const tag of state.tags) {
      const place = placeKey(tag, state.layout, depth);
      if (!bySection.has(place.section)) bySection.set(place.section, { name: place.section, shown: [], hidden: [] });
      bySection.get(place.section)[place.hidden ? "hidden" : "shown"].push(tag);
    }
    const open = new Map([...app.root.querySelectorAll("details.section")].map((d) => [d.dataset.section, d.open]));
    for (const section of bySection.values()) {
      section.shown = app.orderKeys(section.shown);
      section.hidden = app.orderKeys(section.hidden);
    }
    state.sections = [...bySection.values()].sort((a, b) => naturalOrder(a.name, b.name));
    // Moving a node out of the page takes its focus: a card being read when a refresh or
    // a new order places the cards again keeps it.
    const focused = $("sections").contains(app.root.activeElement) ? app.root.activeElement : null;
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
    if (focused && focused.isConnected && app.root.activeElement !== focused) focused.focus({ preventScroll: true });
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
    seen.forEach(app.mount);
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
    app.drawOverview();
    app.describeStatus();
  }

  // The filter emptied, when it hides a card about to be opened.
  function clearFilter() {
    state.filter = "";
    $("filter").value = "";
    applyFilter();
  }

  $("filter").value = state.filter;
  $("filter").addEventListener("input", () => {
    state.filter = $("filter").value;
    applyFilter();
    app.remember();
  });

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

  return { placeCards, mountInView, applyFilter, clearFilter, nextReport };
}
