/* The chat page's shared state, imported by its other modules: the page's elements (`ui`), the
 * server's configuration (`config`: the conversation's id, set once its first message is saved,
 * its settings and the presets change as the page goes), and `state`, what the modules change as
 * messages and answers come and go, with the questions they all ask of it. */

const { $, readJson } = window.HomeAI;

export const ui = {
  layout: $("chat-layout"), sidebarToggle: $("sidebar-toggle"), backdrop: $("sidebar-backdrop"),
  convList: $("conversation-items"), heading: $("chat-heading"), status: $("connection-status"),
  banner: $("error-banner"), messages: $("messages"), form: $("composer"), input: $("message-input"),
  maxTokens: $("max-tokens"), send: $("send-button"), stop: $("stop-button"), charCount: $("char-count"),
  rename: $("rename-button"), search: $("conversation-search"), searchResults: $("search-results"),
  searchStatus: $("search-status"), searchItems: $("search-items"), convNav: $("conversation-nav"),
  settingsButton: $("settings-button"), settingsSummary: $("settings-summary"), settingsDialog: $("settings-dialog"),
  shortcutsButton: $("shortcuts-button"), shortcutsDialog: $("shortcuts-dialog"),
  shareButton: $("share-button"), shareDialog: $("share-dialog"), importForm: $("import-form"), importFile: $("import-file"),
};

export const config = Object.assign(
  { ws_path: "/ws/chat/", conversation: null, default_max_tokens: 256, max_tokens_limit: 2048, max_chars: 16000 },
  readJson("chat-config"));
config.settings = Object.assign({ model: "", system_prompt: "", temperature: null, top_p: null, max_tokens: null }, config.settings);
config.models = config.models || [];
config.defaults = config.defaults || {};
config.presets = config.presets || [];

export const ACTIVE = new Set(["queued", "running"]);
export const FINISHED = new Set(["done", "cancelled", "interrupted", "error"]);

export const state = {
  gens: new Map(),        // generation id -> an answer's view (see renderMessage in render.js)
  pending: null,          // our chat.send awaiting generation.queued: {userView, userEl, text, sentAt}
  pendingAction: null,    // our regenerate / edit / switch awaiting the server: {sentAt}
  settingsUnsent: false,  // a new chat's settings, kept here until its first chat.send carries them
  socket: null,           // the ReconnectingSocket, from connect() in socket.js
};

// Count code points like the server (Python len) does, not UTF-16 units: an emoji is one.
export function charLength(text) {
  let n = 0;
  for (const _ of text) n++;  // eslint-disable-line no-unused-vars
  return n;
}

// The answer this page follows (Stop and Send wait on it) while it is queued or running.
export const activeOwnGen = () => [...state.gens.values()].find((g) => g.own && ACTIVE.has(g.status)) || null;

// Regenerate, edit and switch wait for the conversation's answer to end, and for the server.
export const conversationBusy = () => Boolean(state.pending) || Boolean(state.pendingAction) || [...state.gens.values()].some((g) => ACTIVE.has(g.status));

export const connected = () => Boolean(state.socket) && state.socket.open;
