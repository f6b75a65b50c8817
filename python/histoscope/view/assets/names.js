// histoscope: how names are shown on every page. Keys are ordered as people count (layer 2
// before layer 10), placed in sections by their path (before the first "/", or for a
// PyTorch name with no "/", its top-level module: conv1.weight_grad goes to conv1), and
// an overview section of many rows is grouped by module path. Long names are shortened
// in the middle, and run names to the part that tells them apart; the full name always
// stays on hover and in what a screen reader says.

const collator = new Intl.Collator("en", { numeric: true });

// Names in counting order: "layer2" before "layer10".
export function naturalOrder(a, b) {
  return collator.compare(a, b);
}

// A filter as typed, of keys or of runs: a regular expression when it is one, else a
// plain substring; case is ignored either way.
export function keyMatcher(text) {
  if (!text) return () => true;
  try {
    const pattern = new RegExp(text, "i");
    return (name) => pattern.test(name);
  } catch (error) {
    const lower = text.toLowerCase();
    return (name) => name.toLowerCase().includes(lower);
  }
}

// `text` cut to at most `most` characters by an ellipsis in the middle, keeping both ends:
// the start says where a name belongs, the end which one it is.
export function elide(text, most) {
  if (text.length <= most) return text;
  const keep = Math.max(2, most - 1);
  const head = Math.ceil(keep / 2);
  return text.slice(0, head) + "\u2026" + text.slice(text.length - (keep - head));
}

// The parts of a dotted module path: "encoder.layers.3.weight" has the module
// "encoder.layers.3" and the leaf "weight".
function dotted(key) {
  return key.split(".");
}

// How many leading modules every dotted key (with no "/") shares and passes over: sections
// start below them, so a model whose names all begin with "model." is not one section
// called "model", unless the modules below are too many to be sections (the 24 blocks
// of layers.0 to layers.23 stay one section, "layers").
export function sharedDepth(tags, most = 12) {
  const paths = tags.filter((tag) => !tag.includes("/") && tag.includes(".")).map(dotted);
  if (paths.length < 2) return 0;
  let depth = 0;
  for (;;) {
    const first = paths[0][depth];
    if (!paths.every((parts) => parts.length > depth + 2 && parts[depth] === first)) return depth;
    if (new Set(paths.map((parts) => parts[depth + 1])).size > most) return depth;
    depth += 1;
  }
}

// The section a key goes to before any declaration: the part before its first "/"; for a
// dotted name with no "/", its module below the `depth` shared by all (conv1.weight_grad
// goes to conv1); else the top level.
export function pathSection(tag, depth) {
  const slash = tag.indexOf("/");
  if (slash > 0) return tag.slice(0, slash);
  const parts = dotted(tag);
  if (parts.length > 1) return parts.slice(0, Math.min(depth + 1, parts.length - 1)).join(".");
  return "(top level)";
}

// A key as a row of its section says it: without the section's name in front.
export function rowLabel(tag, section) {
  for (const joint of ["/", "."]) {
    if (tag.startsWith(section + joint) && tag.length > section.length + 1) return tag.slice(section.length + 1);
  }
  return tag;
}

// Each run's name as shown (`short`) and as spoken (`spoken`): the prefix and suffix all
// runs share are cut at a word and shown as an ellipsis, and what is left is elided in
// the middle past `most` characters; speech says the whole distinguishing part, with no
// ellipsis (which a screen reader reads out as "dot dot dot"). Runs named
// runs/Nov16_14-18-08_DESKTOP and runs/Nov16_14-20-33_DESKTOP show as "…14-18-08…" and
// "…14-20-33…".
export function runLabels(runs, most = 24) {
  const out = new Map();
  const prefix = runs.length > 1 ? prefixCut(runs[0], commonPrefix(runs)) : 0;
  const rest = runs.map((run) => run.slice(prefix));
  const suffix = runs.length > 1 ? suffixCut(rest[0], commonSuffix(rest)) : 0;
  for (const run of runs) {
    const middle = run.slice(prefix, run.length - suffix);
    if (!middle) {
      out.set(run, { short: elide(run, most), spoken: run });
      continue;
    }
    const marks = (prefix ? 1 : 0) + (suffix ? 1 : 0);
    const short = (prefix ? "\u2026" : "") + elide(middle, most - marks) + (suffix ? "\u2026" : "");
    out.set(run, { short, spoken: middle });
  }
  return out;
}

function commonPrefix(names) {
  let n = 0;
  while (names.every((name) => n < name.length && name[n] === names[0][n])) n += 1;
  return n;
}

function commonSuffix(names) {
  let n = 0;
  const at = (name) => name[name.length - 1 - n];
  while (names.every((name) => n < name.length && at(name) === at(names[0]))) n += 1;
  return n;
}

// Where names break into words: not at ".", which numbers such as lr-0.03 hold.
const SEPARATOR = /[\/_\- :]/;
// Shares shorter than this are kept: an ellipsis would hide as much as it saves.
const LEAST_CUT = 4;

// How much of a shared prefix of `length` characters of `name` to cut: up to its last
// separator, so the distinguishing part starts a word ("lr-0.3" and "lr-0.03" keep 0.3).
function prefixCut(name, length) {
  let cut = length;
  while (cut > 0 && !SEPARATOR.test(name[cut - 1])) cut -= 1;
  return cut >= LEAST_CUT ? cut : 0;
}

// How much of a shared suffix of `length` characters of `name` to cut: from its first
// separator on, so the distinguishing part ends a word.
function suffixCut(name, length) {
  let cut = length;
  while (cut > 0 && !SEPARATOR.test(name[name.length - cut])) cut -= 1;
  return cut >= LEAST_CUT ? cut : 0;
}

// An overview section's rows (each { tag, label }, in order) as a tree no wider than
// `limit` rows a level: past it, rows are grouped by module path (encoder.layers.3), and
// where names have no path to group by, into runs of neighbours ("layer000 to layer021").
// A group is { group: label, rows: [...] }, its rows again rows or groups.
export function groupRows(rows, limit = 60, depth = 1) {
  if (rows.length <= limit) return rows;
  const parts = new Map();
  for (const row of rows) {
    const path = row.label.split(/[./]/).slice(0, -1);
    const key = path.slice(0, depth).join(".");
    if (!parts.has(key)) parts.set(key, []);
    parts.get(key).push(row);
  }
  const deeper = rows.some((row) => row.label.split(/[./]/).length - 1 > depth);
  if (parts.size === 1 && deeper) return groupRows(rows, limit, depth + 1);
  if (parts.size > 1 && parts.size <= limit && !parts.has("")) {
    return [...parts].map(([key, members]) => (members.length === 1 ? members[0]
      : { group: key, rows: groupRows(members, limit, depth + 1) }));
  }
  // No path to group by, or more modules than fit: runs of neighbours, as many as there
  // are members in each (the square root), so both levels stay short.
  const units = parts.size > limit ? [...parts].map(([key, members]) =>
    (members.length === 1 ? members[0] : { group: key, rows: groupRows(members, limit, depth + 1) })) : rows;
  const size = Math.ceil(units.length / Math.min(limit, Math.ceil(Math.sqrt(units.length))));
  const out = [];
  for (let i = 0; i < units.length; i += size) {
    const chunk = units.slice(i, i + size);
    const first = unitName(chunk[0]), last = unitName(chunk[chunk.length - 1]);
    out.push({ group: chunk.length > 1 ? first + " to " + last : first, rows: groupRows(chunk, limit, depth) });
  }
  return out;
}

function unitName(unit) {
  return unit.group === undefined ? unit.label : unit.group;
}

// Every key row under `node`, however deep.
export function keysUnder(node) {
  return node.group === undefined ? [node] : node.rows.flatMap(keysUnder);
}
