/* The chat page and the service worker (templates/offline/sw.js). A page the worker served from
 * its copy (<html data-offline-copy>: the server could not be reached) is shown read-only with
 * a notice, and reloads itself once the server answers again (its socket connects, or, when the
 * socket is refused, the page's address answers): the live page replaces the copy.
 * A live page asks the worker to keep it, the chat list and the files it loaded, for next time;
 * <html data-offline-ready> says when that is done ("true": a copy is kept). */

import { ui, config } from "./state.js";

const { $ } = window.HomeAI;
const RELOADED = "homeai.offline-reloaded";  // sessionStorage: a copy already reloaded itself once

export const offlineCopy = document.documentElement.hasAttribute("data-offline-copy");
export const OFFLINE_LABELS = { connecting: gettext("Offline"), reconnecting: gettext("Offline") };

function showReadOnly() {
  document.body.classList.add("offline-copy");
  ui.input.disabled = true;
  ui.maxTokens.disabled = true;
  ui.input.placeholder = gettext("Offline: read only");
  const notice = $("offline-notice");
  notice.hidden = false;
  // A chat this device never kept gets the chat list's copy: say so.
  const asked = location.pathname.match(/\/(\d+)\/$/);
  $("offline-not-kept").hidden = !asked || Number(asked[1]) === config.conversation;
}

// The server answers again, so the live page replaces the copy. A copy that a reload brought
// back (the server answered the socket or the probe, not the page) waits until this page has
// itself seen the server unreachable, so it never reloads in a loop.
let sawUnreachable = false;
export function backOnline() {
  if (sessionStorage.getItem(RELOADED) === location.pathname && !sawUnreachable) return;
  sessionStorage.setItem(RELOADED, location.pathname);
  location.reload();
}

// The socket closed: is it the network, or only the socket? A signed-out session's socket is
// refused by a server that answers; the reload then leads to the sign-in page. The request
// goes past the service worker (it is no navigation) and costs nothing while offline.
let probing = false;
export async function probe() {
  if (probing) return;
  probing = true;
  try {
    await fetch(location.href, { cache: "no-store", redirect: "manual", credentials: "same-origin" });
  } catch (e) {
    sawUnreachable = true;
    return;
  } finally {
    probing = false;
  }
  backOnline();
}

function keepForOffline() {
  sessionStorage.removeItem(RELOADED);
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.addEventListener("message", (event) => {
    if (event.data && event.data.type === "kept") document.documentElement.dataset.offlineReady = String(event.data.kept);
  });
  navigator.serviceWorker.startMessages();
  navigator.serviceWorker.ready.then((registration) => {
    const loaded = performance.getEntriesByType("resource").map((entry) => entry.name);
    registration.active.postMessage({ type: "keep", urls: [location.href, ...loaded] });
  });
}

export function initOffline() {
  if (offlineCopy) showReadOnly();
  else keepForOffline();
}
