// histoscope: a data source over the report's data held in the page, answering what the
// server's api.js answers: the report's embedded data (report.js), or the data a notebook's
// widget holds and grows as the kernel sends it (widget.js).

import { positionAt } from "./state.js";

// One step's statistic for the overview, as view/answers.py overview_value computes it on
// the server (tests/test_page_rules.py holds the two to the same numbers).
export function overviewValue(stat, stats, quantiles, i) {
  const pick = (name, fallback) => (stats[name][i] === null ? fallback : stats[name][i]);
  if (stat === "std") return pick("std", (quantiles[i][6] - quantiles[i][2]) / 2);
  if (stat === "absmax") return Math.max(Math.abs(pick("min", quantiles[i][0])), Math.abs(pick("max", quantiles[i][8])));
  if (stat === "nonfinite") return stats.nonfinite[i] || 0;
  if (stat === "zeros") return stats.zeros[i];
  return pick("mean", quantiles[i][4]);
}

const BASIS_POINTS = [0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000];

// TensorBoard's nine distribution percentiles of counts over bins, by the core's rule
// (rust/bins/compressor.rs, value for value; tests/test_page_rules.py): each basis point
// interpolated inside the first bin with a count whose cumulative weight passes it, a bin
// adding no weight skipped; past the last, the greatest edge. A step with no values has none.
export function percentiles(edges, counts) {
  const total = counts.reduce((sum, c) => sum + c, 0);
  if (!(total > 0)) return BASIS_POINTS.map(() => null);
  const full = BASIS_POINTS[BASIS_POINTS.length - 1];
  let cumulative = 0;
  const weights = counts.map((c) => (cumulative += (c * full) / total));
  const before = (i) => (i === 0 ? 0 : weights[i - 1]);
  const first = edges[0], last = edges[edges.length - 1];
  let passed = 0;
  return BASIS_POINTS.map((bp) => {
    while (passed < weights.length && weights[passed] <= bp) passed += 1;
    let i = passed;
    while (i < weights.length && weights[i] === before(i)) i += 1;
    if (i === weights.length) return last;
    const lhs = i === 0 || before(i) === 0 ? first : Math.max(edges[i], first);
    const rhs = Math.min(edges[i + 1], last);
    return lhs + ((bp - before(i)) * (rhs - lhs)) / (weights[i] - before(i));
  });
}

// maidr's thinning, as the core's thin_indices: the indices round-half-even(linspace(0,
// n - 1, most)), without repeats.
export function thin(n, most) {
  if (n <= most) return [...Array(n).keys()];
  // The core's arithmetic: k times one step, the last index itself, so that a value a
  // float lands just past a half rounds as NumPy's linspace rounds it.
  const step = (n - 1) / (most - 1);
  const out = new Set();
  for (let k = 0; k < most; k++) {
    const x = k === most - 1 ? n - 1 : k * step;
    const floor = Math.floor(x);
    const rounded = x - floor === 0.5 ? (floor % 2 === 0 ? floor : floor + 1) : Math.round(x);
    out.add(rounded);
  }
  return [...out];
}

function embeddedAnswer(table, first, second) {
  const answer = (table[first] || {})[second];
  if (!answer) throw new Error("the report holds no answer for " + first + " and " + second);
  return answer;
}

export function embeddedSource(data, statNames, overviewSteps) {
  // Percentiles are worked out from the counts when first asked for, to keep the file small.
  const quantilesOf = (card, entry) => {
    if (!entry.quantiles) entry.quantiles = entry.counts.map((c) => percentiles(card.edges, c));
    return entry.quantiles;
  };
  const stepsOf = (runs) => [...new Set(runs.flatMap((run) => data.steps[run] || []))].sort((a, b) => a - b);
  const at = (entry, i) => (i < 0 ? null : {
    step: entry.steps[i], counts: entry.counts[i],
    stats: Object.fromEntries(statNames.filter((name) => name in entry.stats).map((name) => [name, entry.stats[name][i]])),
  });
  return {
    live: false,
    rawBuckets: false,
    runs: async () => ({ runs: data.runs }),
    tags: async (runs) => ({
      tags: data.tags.map((t) => ({ tag: t.tag, runs: t.runs.filter((r) => runs.includes(r)) })).filter((t) => t.runs.length),
      versions: {}, reading: [], layout: data.layout, steps: stepsOf(runs),
    }),
    series: async (tag, runs) => ({
      tag,
      series: runs.filter((run) => data.cards[tag].runs[run]).map((run) => {
        const entry = data.cards[tag].runs[run];
        return { run, generation: 0, from: 0, more: false, steps: entry.steps,
          quantiles: quantilesOf(data.cards[tag], entry) };
      }),
    }),
    card: async (tag, runs, options) => {
      const card = data.cards[tag];
      return {
        tag, edges: card.edges,
        runs: runs.filter((run) => card.runs[run]).map((run) => {
          const entry = card.runs[run];
          const inRange = entry.steps.map((s, i) => i).filter((i) =>
            (options.from === null || entry.steps[i] >= options.from) && (options.to === null || entry.steps[i] <= options.to));
          const keep = options.steps ? thin(inRange.length, options.steps).map((k) => inRange[k]) : inRange;
          const current = options.step === null ? entry.steps.length - 1 : positionAt(entry.steps, options.step);
          return {
            run, steps: keep.map((i) => entry.steps[i]), counts: keep.map((i) => entry.counts[i]),
            current: at(entry, current), previous: at(entry, current - 1),
            first: entry.steps[0], last: entry.steps[entry.steps.length - 1],
          };
        }),
      };
    },
    overview: async (run, stat) => {
      const columns = stepsOf([run]);
      const kept = thin(columns.length, overviewSteps).map((i) => columns[i]);
      const rows = {};
      for (const t of data.tags) {
        const entry = data.cards[t.tag].runs[run];
        if (!entry) continue;
        rows[t.tag] = kept.map((step) => {
          const i = positionAt(entry.steps, step);
          return i < 0 ? null : overviewValue(stat, entry.stats, quantilesOf(data.cards[t.tag], entry), i);
        });
      }
      return { run, stat, steps: kept, rows };
    },
    findings: async () => ({ findings: data.findings }),
    // The spectral figures embedded by report.py (view/spectral.py), answered as api/spectral.
    spectral: async (tag, runs) => {
      const held = data.spectral;
      if (!held) return null;
      const figure = (run, name) => ((held.runs[run] || {})[tag + "/" + name]) || [];
      return {
        tag, band: held.band, figures: held.figures,
        runs: runs.map((run) => Object.fromEntries([["run", run]].concat(held.figures.map((f) => [f, figure(run, f)]))))
          .filter((entry) => held.figures.some((f) => entry[f].length)),
      };
    },
    // Rankings and comparisons made when the report was written (view/report_orders.py).
    ranking: data.orders ? async (run, by) => embeddedAnswer(data.orders.rankings, run, by) : undefined,
    compare: data.orders ? async (a, b) => embeddedAnswer(data.orders.compare, a, b) : undefined,
    comparedWith: (a) => Object.keys((data.orders && data.orders.compare[a]) || {}),
    overviewDistance: false,
  };
}
