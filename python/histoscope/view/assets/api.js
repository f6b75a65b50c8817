// histoscope viewer: the data source that asks the server the page came from: `histoscope
// view`, or TensorBoard with the histoscope tab, which serves the page under its own path;
// so every address is relative to the page's. The report has another source with the same
// methods, answering from the data embedded in the file.

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined) continue;
    for (const item of [].concat(value)) search.append(key, String(item));
  }
  return search.toString();
}

async function getJSON(path, params) {
  const response = await fetch(path + "?" + query(params || {}), { cache: "no-store" });
  // A refusal says how to get in (the token): shown, and announced, as it is.
  if (response.status === 403) throw new Error((await response.text()).trim());
  if (!response.ok) throw new Error(path + ": " + response.status);
  return response.json();
}

// The listing the page came with (see viewer._page), answered once instead of asking.
function listedWithPage() {
  const element = document.getElementById("histoscope-runs");
  if (!element) return null;
  element.remove();
  return JSON.parse(element.textContent);
}

export function serverSource() {
  let listed = listedWithPage();
  return {
    live: true,       // runs and steps grow: poll
    rawBuckets: true, // the exact buckets of a step can be asked for
    runs: () => {
      const answer = listed;
      listed = null;
      return answer ? Promise.resolve(answer) : getJSON("api/runs");
    },
    tags: (runs) => getJSON("api/tags", { run: runs }),
    series: (tag, runs, since) => getJSON("api/series", { tag, run: runs, since }),
    card: (tag, runs, options) => getJSON("api/card", {
      tag, run: runs, step: options.step, from: options.from, to: options.to, steps: options.steps,
    }),
    buckets: (tag, step, runs) => getJSON("api/buckets", { tag, step, run: runs }),
    overview: (run, stat, against) => getJSON("api/overview", against ? { run, stat, against } : { run, stat }),
    ranking: (run, by) => getJSON("api/ranking", { run, by }),
    compare: (a, b, stepA, stepB) => getJSON("api/compare", { run: [a, b], step_a: stepA, step_b: stepB }),
    findings: () => getJSON("api/findings").catch(() => ({ findings: [] })),
    spectral: (tag, runs) => getJSON("api/spectral", { tag, run: runs }),
  };
}
