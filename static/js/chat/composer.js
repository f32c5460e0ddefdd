/* The composer: the message box (Enter sends, Shift+Enter breaks the line, it grows with its
 * text, and counts characters near the limit), the Max tokens field's range, Send and Stop. A
 * message sent waits in state.pending for the server's generation.queued (events.js). */

import { ui, config, state, charLength, activeOwnGen } from "./state.js";
import { updateControls, showBanner, hideBanner, withMaxTokens } from "./controls.js";
import { sendFrame } from "./socket.js";
import { renderMessage, scrollToBottom } from "./render.js";
import { setStatus } from "./stream.js";
import { sentSettings } from "./settings.js";
import { documentsFrame, sentDocuments, pickerKey, uploading } from "./documents.js";

const { say, fmtInt } = window.HomeAI;

export function autoResize() {
  ui.input.style.height = "auto";
  ui.input.style.height = `${ui.input.scrollHeight}px`;
}

// Only show the counter near the limit, where it helps.
export function updateCharCount() {
  const len = charLength(ui.input.value.trim());
  ui.charCount.hidden = len < config.max_chars * 0.8;
  ui.charCount.textContent = `${fmtInt(len)} / ${fmtInt(config.max_chars)}`;
  ui.charCount.classList.toggle("over", len > config.max_chars);
}

function onSubmit(event) {
  event.preventDefault();
  if (ui.send.disabled) return;
  const text = ui.input.value.trim();
  if (!text) { showBanner(gettext("Type a message first.")); return; }
  const length = charLength(text);
  if (length > config.max_chars) {
    showBanner(say(gettext("Your message is %(n)s characters; the limit is %(limit)s."), { n: fmtInt(length), limit: fmtInt(config.max_chars) }));
    return;
  }
  if (uploading()) { showBanner(gettext("Wait for the attached files to finish uploading.")); return; }
  const frame = withMaxTokens({ type: "chat.send", conversation: config.conversation, text });
  if (!frame) return;
  documentsFrame(frame);
  if (state.settingsUnsent && config.conversation == null) frame.settings = sentSettings(config.settings);
  const sentAt = performance.now();
  if (!sendFrame(frame)) { showBanner(gettext("Not connected to the server yet. Try again in a moment.")); return; }
  hideBanner();
  const userView = renderMessage({ role: "user", text, attachments: (frame.attachments || []).map((name) => ({ name })) });
  sentDocuments();
  state.pending = { userView, userEl: userView.el, text, sentAt };
  scrollToBottom();
  ui.input.value = "";
  autoResize();
  updateCharCount();
  updateControls();
}

function onKeyDown(event) {
  if (pickerKey(event)) return;  // the "#" picker's arrows, Enter and Escape
  // isComposing: Enter that confirms an IME candidate must not send.
  if (event.key !== "Enter" || event.shiftKey || event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
  event.preventDefault();
  if (typeof ui.form.requestSubmit === "function") ui.form.requestSubmit();
  else ui.form.dispatchEvent(new Event("submit", { cancelable: true }));
}

export function onStop() {
  const gen = activeOwnGen();
  if (!gen || !sendFrame({ type: "chat.cancel", generation: gen.id })) return;
  ui.stop.disabled = true;  // until the server confirms with generation.done
  setStatus(gen, gettext("Stopping…"), { busy: true });
}

export function initComposer() {
  ui.maxTokens.min = "1";
  ui.maxTokens.max = String(config.max_tokens_limit);
  ui.maxTokens.placeholder = String(config.default_max_tokens);
  ui.form.addEventListener("submit", onSubmit);
  ui.input.addEventListener("keydown", onKeyDown);
  ui.input.addEventListener("input", () => { autoResize(); updateCharCount(); });
  ui.stop.addEventListener("click", onStop);
  autoResize();
}
