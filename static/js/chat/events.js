/* The server's events on the socket, each to its handler (HANDLERS, given to connect() in
 * socket.js): an answer queued (the reply to our chat.send, or another tab's), its phases,
 * tokens, end and errors, where it is after a sync, the branch now shown, and new settings. */

import { ui, config, state, ACTIVE, FINISHED } from "./state.js";
import { updateControls, showBanner } from "./controls.js";
import { sendFrame } from "./socket.js";
import { renderMessage, showEmptyState } from "./render.js";
import { renderHistory } from "./history.js";
import { setStatus, clearStatus, showQueued, showPrefill, showNotice, appendToken, setText, finish } from "./stream.js";
import { setMessageId } from "./branches.js";
import { autoResize, updateCharCount } from "./composer.js";
import { setTitle, touchConversation } from "./sidebar.js";
import { onSettings } from "./settings.js";
import { SPEECH_HANDLERS, autoRead, read } from "./speech.js";
import { showToolCall, showToolCalls } from "./tools.js";

function onQueued(msg) {
  let gen = state.gens.get(msg.generation);
  if (!gen && state.pending) {
    // The reply to our own chat.send.
    gen = renderMessage({ role: "assistant", id: msg.message, generation: { id: msg.generation } }, true);
    gen.sentAt = state.pending.sentAt;
    setMessageId(state.pending.userView, msg.user_message, null);
    state.pending = null;
    if (autoRead()) read(msg.generation);
    if (config.conversation == null && msg.conversation != null) {
      config.conversation = msg.conversation;
      state.settingsUnsent = false;
      history.replaceState(null, "", `/chat/${msg.conversation}/`);
      setTitle(msg.conversation_title);
      if (ui.rename) ui.rename.hidden = false;
    }
    if (msg.conversation != null) touchConversation(msg.conversation, msg.conversation_title);
  } else if (!gen) {
    // Another tab of this user; show it only if it belongs to the conversation on screen.
    if (config.conversation == null || msg.conversation !== config.conversation) return;
    gen = renderMessage({ role: "assistant", generation: { id: msg.generation } }, false);
  }
  if (state.pendingAction && gen.own) {
    // The answer to our regenerate or edit: its branch came first and drew it.
    gen.sentAt = state.pendingAction.sentAt;
    state.pendingAction = null;
  }
  showQueued(gen, msg.position);
  updateControls();
}

// The branch now shown (after a regenerate, an edit or a switch, from this tab or another).
function onBranch(msg) {
  if (config.conversation == null || msg.conversation !== config.conversation) return;
  if (state.pendingAction) state.pendingAction = { sentAt: state.pendingAction.sentAt, drawn: true };
  for (const gen of state.gens.values()) cancelAnimationFrame(gen.frame);
  state.gens.clear();
  ui.messages.replaceChildren();
  renderHistory(msg.messages || []);
  // A switch ends here; a regenerate or edit waits for its generation.queued.
  const last = msg.messages && msg.messages[msg.messages.length - 1];
  if (!last || !last.generation || !ACTIVE.has(last.generation.status)) state.pendingAction = null;
  if (msg.conversation_title) setTitle(msg.conversation_title);
  updateControls();
}

function onPhase(msg) {
  const gen = state.gens.get(msg.generation);
  if (!gen || FINISHED.has(gen.status)) return;
  if (msg.phase !== "queued" && msg.phase !== "notice") gen.status = "running";
  switch (msg.phase) {
    case "queued": showQueued(gen, msg.position); break;
    case "load":
      if (msg.state === "start") setStatus(gen, gettext("Loading model…"), { busy: true });
      else setStatus(gen, gettext("Reading prompt…"), { busy: true });
      break;
    case "retrieve": setStatus(gen, gettext("Searching the documents…"), { busy: true }); break;
    case "prefill": showPrefill(gen, msg.done, msg.total); break;
    case "decode": clearStatus(gen); gen.el.classList.add("streaming"); break;
    case "notice": showNotice(gen, msg.message); break;
  }
}

function onToken(msg) {
  const gen = state.gens.get(msg.generation);
  if (!gen || FINISHED.has(gen.status)) return;
  if (gen.statusEl.childElementCount) clearStatus(gen);
  gen.status = "running";
  gen.el.classList.add("streaming");
  if (gen.sentAt !== null && !gen.ttftSent) {
    gen.ttftSent = true;
    gen.clientTtft = performance.now() - gen.sentAt;
    sendFrame({ type: "chat.ttft", generation: gen.id, ttft_ms: gen.clientTtft });
  }
  appendToken(gen, msg.text || "");
}

// A tool call of the answer (its card as it now stands) and the answer's text without the call.
function onTool(msg) {
  const gen = state.gens.get(msg.generation);
  if (!gen || FINISHED.has(gen.status)) return;
  if (typeof msg.text === "string") setText(gen, msg.text);
  if (msg.call.status !== "confirm") clearStatus(gen);
  else setStatus(gen, gettext("Waiting for your yes…"));
  showToolCall(gen, msg.call);
}

function onDone(msg) {
  const gen = state.gens.get(msg.generation);
  if (!gen) return;
  if (msg.tool_calls) showToolCalls(gen, msg.tool_calls);
  if (typeof msg.text === "string") setText(gen, msg.text);
  if (msg.notice) showNotice(gen, msg.notice);
  finish(gen, msg.status || "done", msg.metrics || null, msg.error || msg.message, msg.sources);
}

function onError(msg) {
  if (msg.generation != null) {
    const gen = state.gens.get(msg.generation);
    // bad_request naming a generation complains about our chat.ttft, not about the answer.
    if (msg.code === "bad_request") console.warn("HomeAI:", msg.message);
    else if (gen && !FINISHED.has(gen.status)) {
      if (typeof msg.text === "string") setText(gen, msg.text);  // what was saved: what a reload shows
      finish(gen, msg.code === "interrupted" ? "interrupted" : "error", null, msg.message);
    }
    return;
  }
  state.pendingAction = null;
  if (state.pending) {
    // The server refused our message: take it back out and give the text back to edit.
    state.pending.userEl.remove();
    if (!ui.input.value) { ui.input.value = state.pending.text; autoResize(); updateCharCount(); }
    state.pending = null;
    if (!ui.messages.querySelector(".message")) showEmptyState();
  }
  showBanner(msg.message || gettext("The server could not handle that request."));
  updateControls();
}

// Where an answer that may have missed events is now (the reply to chat.sync): its text as the
// database has it, which is never behind what was drawn unless tokens arrived since the save.
function onSync(msg) {
  const gen = state.gens.get(msg.generation);
  if (!gen || FINISHED.has(gen.status)) return;
  if (msg.status === "running") {
    gen.status = "running";
    gen.el.classList.add("streaming");
    if (gen.statusEl.classList.contains("warning")) clearStatus(gen);
  }
  if (typeof msg.text === "string" && msg.text.length > gen.text.length) setText(gen, msg.text);
}

export const HANDLERS = {
  "generation.queued": onQueued, "generation.phase": onPhase, "generation.token": onToken,
  "generation.done": onDone, "generation.tool": onTool, "generation.error": onError, "generation.sync": onSync,
  "conversation.branch": onBranch, "conversation.settings": onSettings, ...SPEECH_HANDLERS,
};
