// histoscope report: the viewer's page over the data embedded in the file, for reading offline
// from file:// with no server and no network. The data is gzip-compressed JSON in base64.

import { start } from "./app.js";
import { embeddedSource } from "./embedded.js";
import { readVocabulary } from "./state.js";

async function embedded() {
  const text = document.getElementById("histoscope-data").textContent.trim();
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

embedded().then((data) => {
  const vocabulary = readVocabulary();
  start(embeddedSource(data, vocabulary.stats, vocabulary.overviewSteps));
});
