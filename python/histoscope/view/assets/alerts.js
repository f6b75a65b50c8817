// histoscope: the findings of the diagnosis, first on the page: how many of each severity,
// the worst keys as links to their cards, every finding in a list that opens its card, a
// badge on each card concerned, and a spoken (and, if asked, sounded) note of new ones;
// then what reading the files found that no chart shows (damage skipped, tags kept apart).

import * as a11y from "./a11y.js";
import { notable } from "./state.js";

// The worst keys linked from the summary: enough to start with, few enough for one line.
const WORST_KEYS = 5;

export function makeAlerts(app) {
  const { state, source, $ } = app;
  const alertsLive = a11y.speaker($("alerts-live"));

  function rank(finding) {
    return state.severities.indexOf(finding.severity);
  }

  function drawFindingsBadge(card) {
    const found = state.findings.filter((f) => f.key === card.tag && notable(state, f));
    card.node.classList.toggle("has-findings", found.length > 0);
    const badge = card.node.querySelector(".findings");
    if (!badge) return;
    badge.hidden = !found.length;
    badge.textContent = found.length ? "\u26A0 " + found.map((f) => f.kind + " in " + app.runLabel(f.run)).join(", ") : "";
  }

  function openLink(text, finding) {
    const link = document.createElement("a");
    link.href = "#";
    link.textContent = text;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      app.openCard(finding.key, finding.first_step);
    });
    return link;
  }

  // "2 errors, 1 warning, 3 info": the most severe first, each severity counted ("info"
  // has no plural).
  function counted(findings) {
    const parts = [];
    for (const severity of [...state.severities].reverse()) {
      const n = findings.filter((f) => f.severity === severity).length;
      if (n) parts.push(n + " " + severity + (n === 1 || severity === "info" ? "" : "s"));
    }
    return parts.join(", ");
  }

  // The summary: the counts, then the keys of the most severe findings, each once.
  function drawSummary() {
    const findings = [...state.findings].sort((a, b) => rank(b) - rank(a) || a.first_step - b.first_step);
    $("findings-count").textContent = findings.length ? counted(findings) : "None: the diagnosis found nothing to flag";
    const seen = new Set();
    const worst = findings.filter((f) => notable(state, f) && !seen.has(f.key) && seen.add(f.key)).slice(0, WORST_KEYS);
    $("worst-keys").replaceChildren(...worst.map((finding) => {
      const item = document.createElement("li");
      item.className = "alert-" + finding.severity;
      item.append(openLink(finding.key, finding), " " + finding.severity + ": " + finding.kind + " in " + app.runLabel(finding.run));
      return item;
    }));
    $("worst-keys").hidden = worst.length === 0;
    $("alerts-section").hidden = findings.length === 0;
    $("alerts-heading").textContent = "Every finding (" + findings.length + ")";
    $("alerts").replaceChildren(...findings.map((finding) => {
      const item = document.createElement("li");
      item.className = "alert-" + finding.severity;
      item.appendChild(openLink(finding.severity + ": " + finding.message, finding));
      return item;
    }));
  }

  // Each note once, as text: a file's damage or its shared tags, under its run.
  function drawNotes(notes) {
    $("notes-section").hidden = notes.length === 0;
    $("notes-heading").textContent = "Notes on reading the files (" + notes.length + ")";
    $("notes").replaceChildren(...notes.map((note) => {
      const item = document.createElement("li");
      item.className = "note-" + note.kind;
      item.textContent = app.runLabel(note.run) + ": " + note.text;
      return item;
    }));
  }

  // What is new since the last answer, in one message: a second message would cut off the first.
  function news(findings, notes) {
    const fresh = findings.filter((f) => !state.announced.has(f.kind + f.run + f.key));
    for (const f of fresh) state.announced.add(f.kind + f.run + f.key);
    const freshNotes = notes.filter((n) => !state.announced.has("note" + n.run + n.text));
    for (const n of freshNotes) state.announced.add("note" + n.run + n.text);
    const parts = [];
    if (fresh.length) {
      parts.push(fresh.length + " new finding" + (fresh.length > 1 ? "s" : "") + ": " + fresh.map((f) => f.message).join("; "));
    }
    if (freshNotes.length) {
      parts.push(freshNotes.length + " new note" + (freshNotes.length > 1 ? "s" : "") + " on reading the files: " +
        freshNotes.map((n) => app.runLabel(n.run) + ": " + n.text).join("; "));
    }
    return { findings: fresh.length, message: parts.join(". ") };
  }

  async function loadFindings() {
    const answer = await source.findings();
    state.findings = answer.findings || [];
    drawSummary();
    const notes = answer.notes || [];
    drawNotes(notes);
    const fresh = news(state.findings, notes);
    if (fresh.message) alertsLive(fresh.message);
    if (fresh.findings && $("alert-sound").checked) { a11y.startSound(); a11y.playEdge(); }
    for (const card of state.cards.values()) drawFindingsBadge(card);
    app.drawOverview();
  }

  return { drawFindingsBadge, loadFindings };
}
