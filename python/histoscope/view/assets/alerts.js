// histoscope: the findings of the diagnosis, as a list of alerts that open their card, a
// badge on each card concerned, and a spoken (and, if asked, sounded) note of new ones.

import * as a11y from "./a11y.js";
import { notable } from "./state.js";

export function makeAlerts(app) {
  const { state, source, $ } = app;
  const alertsLive = a11y.speaker($("alerts-live"));

  function drawFindingsBadge(card) {
    const found = state.findings.filter((f) => f.key === card.tag && notable(state, f));
    card.node.classList.toggle("has-findings", found.length > 0);
    const badge = card.node.querySelector(".findings");
    if (!badge) return;
    badge.hidden = !found.length;
    badge.textContent = found.length ? "\u26A0 " + found.map((f) => f.kind + " in " + f.run).join(", ") : "";
  }

  async function loadFindings() {
    const answer = await source.findings();
    state.findings = answer.findings || [];
    const list = $("alerts");
    $("alerts-section").hidden = state.findings.length === 0;
    list.replaceChildren(...state.findings.map((finding) => {
      const item = document.createElement("li");
      item.className = "alert-" + finding.severity;
      const link = document.createElement("a");
      link.href = "#";
      link.textContent = finding.severity + ": " + finding.message;
      link.addEventListener("click", (event) => {
        event.preventDefault();
        app.openCard(finding.key, finding.first_step);
      });
      item.appendChild(link);
      return item;
    }));
    const fresh = state.findings.filter((f) => !state.announced.has(f.kind + f.run + f.key));
    for (const f of fresh) state.announced.add(f.kind + f.run + f.key);
    if (fresh.length) {
      alertsLive(fresh.length + " new finding" + (fresh.length > 1 ? "s" : "") + ": " + fresh.map((f) => f.message).join("; "));
      if ($("alert-sound").checked) { a11y.startSound(); a11y.playEdge(); }
    }
    for (const card of state.cards.values()) drawFindingsBadge(card);
  }

  return { drawFindingsBadge, loadFindings };
}
