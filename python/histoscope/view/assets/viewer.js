// histoscope viewer: the page served by `histoscope view`, asking the local server for its data.
import { serverSource } from "./api.js";
import { start } from "./app.js";

// The server traded the address's token for a cookie as it sent the page: the token leaves
// the address bar, so it is not kept in the history, a bookmark or a shared link.
function forgetToken() {
  const address = new URL(location.href);
  if (!address.searchParams.has("token")) return;
  address.searchParams.delete("token");
  history.replaceState(history.state, "", address.pathname + address.search + address.hash);
}

forgetToken();
start(serverSource());
