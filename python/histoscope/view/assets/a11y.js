// histoscope's accessibility pieces shared by the chart page and the viewer: speech through
// an ARIA live region, tones (Web Audio, created only when sound is asked for), braille
// cells, the keys and the text/sound/braille switches both pages answer to, and number formats.

// Braille cells filled from the bottom: empty, then one to four rows of dots.
export const CELLS = ["\u2800", "\u28C0", "\u28E4", "\u28F6", "\u28FF"];

export const numberFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

// Screen readers speak a live region only when its text changes, so a repeated
// message is cleared first and written back a moment later.
export function speaker(live) {
  let pending = 0;
  return function speak(message) {
    clearTimeout(pending);
    if (live.textContent === message) {
      live.textContent = "";
      pending = setTimeout(() => { live.textContent = message; }, 150);
    } else {
      live.textContent = message;
    }
  };
}

// One audio context per page, made on the first key press that asks for sound.
let audio = null;

export function startSound() {
  audio = audio || new (window.AudioContext || window.webkitAudioContext)();
  if (audio.state === "suspended") audio.resume();
}

export function tone(frequency, pan, seconds) {
  if (!audio) return;
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

// Pitch rises with the level (0 to 1) over two octaves and a half from 200 Hz; the pan
// runs from the left speaker for the first position to the right for the last.
export function playLevel(level, position, positions) {
  const pan = positions > 1 ? (2 * position) / (positions - 1) - 1 : 0;
  tone(200 * Math.pow(2, 2.5 * level), pan, 0.15);
}

export function playEdge() {
  tone(110, 0, 0.08);
}

export function brailleCells(row) {
  const peak = Math.max(...row);
  return row.map((value) => CELLS[peak > 0 ? Math.ceil((4 * value) / peak) : 0]);
}

// The braille line of `row` in `box`, the cell at `index` marked as the cursor.
export function drawBraille(box, row, index, id) {
  const cells = brailleCells(row);
  const mark = document.createElement("mark");
  if (id) mark.id = id;
  mark.textContent = cells[index];
  box.replaceChildren(cells.slice(0, index).join(""), mark, cells.slice(index + 1).join(""));
}

// Tenths of a percent, halves rounded up (toFixed alone rounds the binary value).
export function percent(part, whole) {
  const share = whole > 0 ? Math.round((1000 * part) / whole) / 10 : 0;
  return share.toFixed(1) + "%";
}

// The keys both pages share; a page adds its own in the same words.
export function modeKey(key) {
  const lower = key.length === 1 ? key.toLowerCase() : key;
  return { t: "text", s: "sound", b: "braille", r: "review", h: "keys", "?": "keys" }[lower];
}

// The text, sound and braille switches every page shares: flips `state[mode]`, says so
// through `speak`, and lets the page redraw its braille line or play the point under the
// cursor. Sound starts on the key press that asks for it, never before. True if handled.
export function toggle(state, mode, speak, hooks) {
  const on = (name) => name + (state[mode] ? " on" : " off");
  if (mode === "text") {
    state.text = !state.text;
    speak(on("Text"));
  } else if (mode === "sound") {
    state.sound = !state.sound;
    if (state.sound) startSound();
    speak(on("Sound"));
    if (hooks && hooks.sound) hooks.sound();
  } else if (mode === "braille") {
    state.braille = !state.braille;
    if (hooks && hooks.braille) hooks.braille();
    speak(on("Braille"));
  } else {
    return false;
  }
  return true;
}
