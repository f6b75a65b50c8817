// histoscope: the order of the keys, in the overview and among the cards of each section:
// key order, largest first by a statistic of the overview's run, or farthest first from a
// compared run, with the comparison as a table of links to the cards. The order and the
// compared run are kept in the URL; each new order is announced with its first keys.

import * as a11y from "./a11y.js";
import { formatValue } from "./format.js";
import { naturalOrder } from "./names.js";

// What the keys can be ordered by (orders.RANKINGS on the server, and the comparison).
export const ORDERS = {
  "": "key order",
  absmax_last: "last largest absolute value",
  absmax_peak: "largest absolute value over the steps",
  std_last: "last standard deviation",
  std_growth: "growth of the standard deviation since the first step",
  nonfinite: "most NaN or infinite values in a step",
  zeros_last: "last share of zeros",
  distance: "distance to the compared run",
};

// How many keys an announcement names.
const ANNOUNCED = 3;

export function makeOrder(app) {
  const { state, source, $ } = app;
  const live = a11y.speaker($("order-live"));
  const available = Boolean(source.ranking && source.compare);
  $("order-controls").hidden = !available;
  let asked = 0, unsaid = false;

  // `tags` in the chosen order: ranked keys first, the rest after them in key order.
  function orderKeys(tags) {
    if (!state.ranking) return tags;
    const rank = (tag) => (state.ranking.has(tag) ? state.ranking.get(tag) : Infinity);
    return [...tags].sort((a, b) => rank(a) - rank(b) || naturalOrder(a, b));
  }

  function overviewRun() {
    return $("overview-run").value || app.shownRuns()[0];
  }

  // The two runs compare mode sets side by side: the overview's run, then the compared one.
  function comparedPair() {
    const a = overviewRun();
    return state.compareWith && a && a !== state.compareWith ? [a, state.compareWith] : null;
  }

  function drawChoices() {
    const select = $("order");
    if (!select.options.length) {
      select.append(...Object.entries(ORDERS).map(([value, name]) => new Option(name, value)));
    }
    select.value = state.order;
    select.querySelector('option[value="distance"]').disabled = !state.compareWith;
    const runs = $("compare-run");
    // A report compares only the pairs it holds (source.comparedWith); the server, any.
    const comparable = source.comparedWith ? new Set(source.comparedWith(overviewRun())) : null;
    const others = state.runs.filter((run) => run !== overviewRun() && (!comparable || comparable.has(run)));
    const wanted = ["", ...others];
    if ([...runs.options].map((o) => o.value).join("\n") !== wanted.join("\n")) {
      runs.replaceChildren(new Option("no other run", ""), ...others.map((run) => new Option(app.runLabel(run), run)));
    }
    runs.value = others.includes(state.compareWith) ? state.compareWith : "";
  }

  // The comparison as a table: rank, key (a link opening its card), and the distances.
  function drawTable(answer) {
    const panel = $("compare-panel");
    panel.hidden = !answer;
    if (!answer) return;
    $("compare-heading").textContent = "Keys of " + app.runLabel(answer.a) + " against " + app.runLabel(answer.b) +
      ", farthest first (" + answer.rows.length + ")";
    const body = $("compare-rows");
    body.replaceChildren(...answer.rows.map((row, i) => {
      const tr = document.createElement("tr");
      const link = document.createElement("a");
      link.href = "#";
      link.textContent = row.key;
      link.addEventListener("click", (event) => {
        event.preventDefault();
        app.openCard(row.key, row.step_a);
      });
      const scaled = row.scaled === null && row.wasserstein ? "infinity" : formatValue(row.scaled);
      const cells = [String(i + 1), link, scaled, formatValue(row.wasserstein), formatValue(row.ks),
        formatValue(row.mean_shift), formatValue(row.std_change)];
      tr.append(...cells.map((cell, c) => {
        const td = document.createElement(c === 1 ? "th" : "td");
        if (c === 1) td.scope = "row";
        td.append(cell);
        return td;
      }));
      return tr;
    }));
  }

  function announce(keys, values, answer) {
    const name = ORDERS[state.order];
    const first = keys.slice(0, ANNOUNCED).map((key, i) => key + " (" + formatValue(values[i]) + ")").join(", ");
    const what = answer ? app.runLabel(answer.a) + " compared with " + app.runLabel(answer.b) + ": " : "";
    live(what + "keys ordered by " + name + (keys.length ? ", first " + first : ", none to order"));
  }

  // Asks the server for the order, then places the cards and redraws the overview in it.
  async function loadOrder(spoken) {
    drawChoices();
    if (!available) return;
    const ask = ++asked;
    // A choice to announce stays to announce when a refresh asks again before it is answered.
    unsaid = unsaid || Boolean(spoken);
    let answer = null, keys = [], values = [];
    if (state.order === "distance" && state.compareWith) {
      answer = await source.compare(overviewRun(), state.compareWith);
      keys = answer.rows.map((row) => row.key);
      values = answer.rows.map((row) => row.scaled);
    } else if (state.order && state.order !== "distance") {
      const ranked = await source.ranking(overviewRun(), state.order);
      keys = ranked.keys;
      values = ranked.values;
    }
    if (ask !== asked) return; // a later choice was made meanwhile
    const before = state.ranking ? [...state.ranking.keys()].join("\n") : "";
    state.ranking = state.order && (state.order !== "distance" || answer) ? new Map(keys.map((k, i) => [k, i])) : null;
    drawTable(answer);
    if ((state.ranking ? keys.join("\n") : "") !== before) {
      app.placeCards();
      app.mountInView();
    }
    if (unsaid) {
      unsaid = false;
      announce(keys, values, answer);
    }
  }

  $("order").addEventListener("change", () => {
    state.order = $("order").value;
    app.remember();
    loadOrder(true);
  });
  $("compare-run").addEventListener("change", () => {
    state.compareWith = $("compare-run").value;
    state.order = state.compareWith ? "distance" : (state.order === "distance" ? "" : state.order);
    app.remember();
    loadOrder(true);
    // The cards draw the shown runs: the compared one among them, so both are on each card.
    if (state.compareWith && !state.shown.has(state.compareWith)) {
      state.shown.add(state.compareWith);
      app.drawRuns();
      app.refresh(true);
    } else {
      app.redrawMounted();
    }
    app.loadOverview(true);
  });

  return { orderKeys, loadOrder, comparedPair };
}
