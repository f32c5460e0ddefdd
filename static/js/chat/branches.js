/* A message's actions and the branches they make: copy, Edit on the person's messages (an
 * editor in place), Regenerate on answers, and the "‹ 2 / 3 ›" switcher between a message's
 * versions. Each sends chat.edit, chat.regenerate or chat.switch; the server answers with the
 * branch now shown (conversation.branch, events.js). */

import { config, state, charLength, conversationBusy } from "./state.js";
import { actionsIdle, updateActionButtons, updateControls, showBanner, hideBanner, withMaxTokens } from "./controls.js";
import { sendFrame } from "./socket.js";
import { speakerButton } from "./speech.js";

const { el, say, fmtInt } = window.HomeAI;

// A message's id (known once the server stored it) and its alternatives; draws its actions.
export function setMessageId(view, id, siblings) {
  view.messageId = id == null ? null : id;
  view.siblings = siblings || null;
  if (id != null) view.el.dataset.message = String(id);
  buildActions(view);
}

function actionButton(label, title, onClick) {
  const button = el("button", "action-button", label);
  button.type = "button";
  button.title = title;
  button.setAttribute("aria-label", title);
  button.dataset.idle = "";  // disabled while an answer is active (updateControls)
  button.disabled = !actionsIdle();
  button.addEventListener("click", onClick);
  return button;
}

function buildActions(view) {
  const parts = [view.copyEl];
  if (view.role === "assistant" && view.id != null && config.speech) parts.push(speakerButton(view));
  if (view.messageId != null) {
    if (view.role === "user") parts.push(actionButton(gettext("Edit"), gettext("Edit this message and send it again"), () => openEditor(view)));
    else parts.push(actionButton(gettext("Regenerate"), gettext("Write this answer again"), () => regenerate(view)));
  }
  const sib = view.siblings;
  if (sib && sib.count > 1) {
    const mine = view.role === "user";
    const box = el("span", "sibling-switch");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", say(mine ? gettext("Version %(index)s of %(count)s of this message") : gettext("Version %(index)s of %(count)s of this answer"), { index: sib.index, count: sib.count }));
    const prev = actionButton("‹", mine ? gettext("Previous version of this message") : gettext("Previous version of this answer"), () => switchTo(sib.ids[sib.index - 2]));
    const next = actionButton("›", mine ? gettext("Next version of this message") : gettext("Next version of this answer"), () => switchTo(sib.ids[sib.index]));
    prev.classList.add("sibling-prev");
    next.classList.add("sibling-next");
    if (sib.index <= 1) { prev.dataset.edge = ""; prev.disabled = true; }
    if (sib.index >= sib.count) { next.dataset.edge = ""; next.disabled = true; }
    box.append(prev, el("span", "sibling-count", `${sib.index} / ${sib.count}`), next);
    parts.push(box);
  }
  view.actionsEl.replaceChildren(...parts);
  updateActionButtons();
}

// Sends a branch-changing frame; the server answers conversation.branch (then generation.queued).
function sendAction(frame) {
  if (conversationBusy()) { showBanner(gettext("Wait for the answer to finish, or stop it first.")); return false; }
  if (!sendFrame(frame)) { showBanner(gettext("Not connected to the server yet. Try again in a moment.")); return false; }
  hideBanner();
  state.pendingAction = { sentAt: performance.now() };
  updateControls();
  return true;
}

export function regenerate(view) {
  const frame = withMaxTokens({ type: "chat.regenerate", message: view.messageId });
  if (frame) sendAction(frame);
}

function switchTo(id) {
  if (id != null) sendAction({ type: "chat.switch", message: id });
}

// An inline editor in place of a user's message: Save & send makes a sibling message and answer.
function openEditor(view) {
  if (view.editor) { view.editor.querySelector("textarea").focus(); return; }
  const editor = el("div", "message-editor");
  const area = el("textarea", "message-editor-input");
  area.value = view.text;
  area.rows = Math.min(10, Math.max(2, view.text.split("\n").length));
  area.setAttribute("aria-label", gettext("Edit your message"));
  const bar = el("div", "message-editor-bar");
  const cancel = el("button", "button button-secondary button-small", gettext("Cancel"));
  const save = el("button", "button button-primary button-small", gettext("Save & send"));
  cancel.type = save.type = "button";
  bar.append(cancel, save);
  editor.append(area, bar);
  const close = () => {
    editor.remove();
    view.editor = null;
    view.textEl.hidden = view.actionsEl.hidden = false;
    view.actionsEl.querySelector("button[data-idle]")?.focus();
  };
  const submit = () => {
    const text = area.value.trim();
    if (!text) { showBanner(gettext("Type a message first.")); return; }
    if (charLength(text) > config.max_chars) { showBanner(say(gettext("Your message is over %(n)s characters."), { n: fmtInt(config.max_chars) })); return; }
    const frame = withMaxTokens({ type: "chat.edit", message: view.messageId, text });
    if (frame) sendAction(frame);
  };
  cancel.addEventListener("click", close);
  save.addEventListener("click", submit);
  area.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); close(); }
    else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  });
  view.editor = editor;
  view.textEl.hidden = view.actionsEl.hidden = true;
  view.el.insertBefore(editor, view.textEl);
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
}
