// histoscope viewer: the page served by `histoscope view`, asking the local server for its data.
import { serverSource } from "./api.js";
import { start } from "./app.js";

start(serverSource());
