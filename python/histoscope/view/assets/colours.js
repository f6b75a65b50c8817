// histoscope: the colours of runs. Ten colours, as far apart as could be found for normal
// vision and for protanopia, deuteranopia and tritanopia alike, each with at least 3:1
// contrast against the card it is drawn on, in light and in dark mode (viewer.css holds
// them as --run-0 to --run-9; tests/test_colours.py checks both claims). The runs shown
// take them in order, so up to ten shown runs never share one; in an overlay each run has
// a dash pattern as well, so no run is told apart by colour alone.

export const PALETTE_SIZE = 10;

// Solid, then dashes and dots of distinct rhythms: the overlay's eight runs each have one.
const DASHES = ["", "7 3", "2 2.5", "10 3 2 3", "4 4", "1.5 3.5", "14 4", "6 2 2 2 2 2"];

const positions = new Map();

// The runs shown, in the order they take the colours.
export function assignRunColours(runs) {
  positions.clear();
  runs.forEach((run, i) => positions.set(run, i));
}

function position(run) {
  return positions.has(run) ? positions.get(run) : 0;
}

// The run's colour as a CSS value that follows the page's light or dark mode.
export function runColour(run) {
  return "var(--run-" + (position(run) % PALETTE_SIZE) + ")";
}

// The run's dash pattern in an overlay ("" for a solid line).
export function runDash(run) {
  return DASHES[position(run) % DASHES.length];
}

// `colour` at `share` percent over `background` (CSS custom properties or colours): the
// graded fills of a ridgeline, faint at the back and full at the front.
export function shade(colour, share, background) {
  return "color-mix(in srgb, " + colour + " " + Math.round(share) + "%, " + background + ")";
}
