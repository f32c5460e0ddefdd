/* The page's one WebSocket: sendFrame, connect (each server event to its handler), what a
 * dropped connection does to a message not yet confirmed, and catching up on missed events. */

import { ui, config, state, ACTIVE } from "./state.js";
import { updateControls, showBanner } from "./controls.js";
import { offlineCopy, OFFLINE_LABELS, backOnline, probe } from "./offline.js";

const { ReconnectingSocket } = window.HomeAI;
const SYNC_AFTER_MS = 3000;  // unfinished answers silent this long: ask the server where they are

export const sendFrame = (frame) => Boolean(state.socket) && state.socket.send(frame);

// Events are not stored: those sent while the socket or the server's message bus was down are
// gone. So the page asks where its unfinished answers are (chat.sync) after every reconnect,
// and whenever they have all been silent for SYNC_AFTER_MS: a done it missed then arrives from
// the database, and a running answer's text catches up.
let lastEventAt = performance.now();
let syncTimer = 0;

function unfinishedIds() {
  return [...state.gens.values()].filter((g) => ACTIVE.has(g.status)).map((g) => g.id).slice(-100);
}

function requestSync() {
  const ids = unfinishedIds();
  if (ids.length) sendFrame({ type: "chat.sync", generations: ids });
  lastEventAt = performance.now();
}

function watchForSilence() {
  if (!unfinishedIds().length) { syncTimer = 0; return; }
  if (performance.now() - lastEventAt >= SYNC_AFTER_MS) requestSync();
  syncTimer = setTimeout(watchForSilence, SYNC_AFTER_MS / 2);
}

function handleEvent(handler) {
  return (msg) => {
    lastEventAt = performance.now();
    handler(msg);
    if (!syncTimer) syncTimer = setTimeout(watchForSilence, SYNC_AFTER_MS / 2);
  };
}

function onConnection(connection, { reconnected }) {
  if (offlineCopy) { if (connection === "connected") backOnline(); else probe(); return; }
  if (reconnected) requestSync();
  if (connection !== "connected") state.pendingAction = null;
  if (connection !== "connected" && state.pending) {
    state.pending.userEl.classList.add("unconfirmed");
    state.pending = null;
    showBanner(gettext("The connection dropped before your message was confirmed. Reload to check whether it was sent."), false);
  }
  updateControls();
}

// handlers: {type: fn(msg)}, the server's events (events.js).
export function connect(handlers) {
  const watched = Object.fromEntries(Object.entries(handlers).map(([type, handler]) => [type, handleEvent(handler)]));
  state.socket = new ReconnectingSocket(config.ws_path, { handlers: watched, status: ui.status, labels: offlineCopy ? OFFLINE_LABELS : {}, onState: onConnection, maxDelayMs: 5000 });
  updateControls();
  state.socket.start();
}
