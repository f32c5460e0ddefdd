/* Drawing messages: renderMessage draws every one (a history turn, the person's new message, an
 * answer as it starts) and returns its view. Also the list's empty state and its scrolling. */

import { ui, state, ACTIVE } from "./state.js";
import { setMessageId } from "./branches.js";
import { attachmentChips, linkCitations } from "./documents.js";

const { el, copyButton, renderMarkdown } = window.HomeAI;

// Scrolling: stay pinned to the bottom only if the reader already was.
const nearBottom = () => ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 48;
export const scrollToBottom = () => { ui.messages.scrollTop = ui.messages.scrollHeight; };
export function keepPinned(mutate) {
  const pinned = nearBottom();
  mutate();
  if (pinned) scrollToBottom();
}

function removeEmptyState() {
  const empty = ui.messages.querySelector(".empty-state");
  if (empty) empty.remove();
}

export function showEmptyState() {
  const box = el("div", "empty-state");
  box.append(el("h2", null, gettext("How can I help?")),
    el("p", null, gettext("Answers come from the model running on your home server.")));
  ui.messages.append(box);
}

// A message's text: the user's as typed (CSS keeps its line breaks), an answer as markdown.
export function paintText(view) {
  if (view.role === "user") view.textEl.textContent = view.text;
  else {
    renderMarkdown(view.textEl, view.text);
    linkCitations(view.textEl, view.sources);
  }
}

/* One message, appended to the list. record: a turn as the history sends it ({id, role, text,
 * generation}); own: this page follows the answer (Stop and Send wait on it), because it sent it
 * or it was running when the page loaded. Returns the message's view: its element and parts,
 * and for an answer with a generation, the live record kept in `state.gens`. */
export function renderMessage(record, own = false) {
  removeEmptyState();
  const role = record.role === "user" ? "user" : "assistant";
  const view = { role, text: record.text || "", el: el("div", `message ${role}`), textEl: el("div", "message-text") };
  view.actionsEl = el("div", "message-actions");
  view.copyEl = copyButton(gettext("Copy"), () => view.text, role === "user" ? gettext("Copy this message") : gettext("Copy this answer as markdown"));
  if (role === "assistant" && record.generation) view.id = record.generation.id;  // its speaker button
  setMessageId(view, record.id, record.siblings);
  if (role === "user") {
    const chips = attachmentChips(record.attachments);
    view.el.append(...(chips ? [view.textEl, chips] : [view.textEl]), view.actionsEl);
  } else {
    Object.assign(view, {
      noticeEl: el("div", "message-notice"), statusEl: el("div", "message-status"), metricsEl: el("div", "message-metrics"),
      sourcesEl: el("div", "message-sources"), sources: [],
    });
    view.noticeEl.hidden = true;
    view.metricsEl.hidden = true;
    view.sourcesEl.hidden = true;
    view.el.append(view.noticeEl, view.textEl, view.sourcesEl, view.statusEl, view.metricsEl, view.actionsEl);
    if (record.generation) trackGeneration(view, record.generation, own);
  }
  paintText(view);
  keepPinned(() => ui.messages.append(view.el));
  return view;
}

// An answer with a generation: its live state, found by id when the socket's events arrive.
function trackGeneration(view, g, own) {
  Object.assign(view, {
    id: g.id, own, status: g.status || "queued", sentAt: null, ttftSent: false, clientTtft: null, frame: 0,
  });
  view.el.dataset.generation = String(g.id);
  if (ACTIVE.has(view.status)) {
    view.actionsEl.hidden = true;  // until the answer is whole
    // Screen readers hold announcements while aria-busy, then read the finished answer once.
    view.textEl.setAttribute("aria-live", "polite");
    view.textEl.setAttribute("aria-busy", "true");
  }
  state.gens.set(g.id, view);
}
