/* What can be pressed now, the error banner, and the Max tokens field's value (withMaxTokens:
 * Send, Regenerate and Edit all pass it on). updateControls runs after every change of the
 * shared state: Send waits for the connection and for the answer on its way, Stop shows while
 * this page's own answer runs, and a message's actions (button[data-idle]) wait for the whole
 * conversation to be idle. */

import { ui, config, state, activeOwnGen, conversationBusy, connected } from "./state.js";

const { say, fmtInt } = window.HomeAI;
let bannerTimer = null;

export const actionsIdle = () => connected() && !conversationBusy();

export function updateActionButtons() {
  const idle = actionsIdle();
  for (const button of ui.messages.querySelectorAll("button[data-idle]")) {
    button.disabled = !idle || button.hasAttribute("data-edge");
  }
}

export function updateControls() {
  const active = activeOwnGen();
  const open = connected();
  ui.send.disabled = !open || Boolean(state.pending) || Boolean(state.pendingAction) || Boolean(active);
  ui.send.title = open ? "" : gettext("Waiting for the connection…");
  ui.stop.hidden = !active;
  if (!active) ui.stop.disabled = false;
  updateActionButtons();
}

export function showBanner(message, autoHide = true) {
  clearTimeout(bannerTimer);
  ui.banner.textContent = message;
  ui.banner.hidden = false;
  if (autoHide) bannerTimer = setTimeout(hideBanner, 8000);
}
export function hideBanner() {
  clearTimeout(bannerTimer);
  ui.banner.hidden = true;
}

// Returns a number, null for "use the default", or undefined when invalid (banner shown).
function readMaxTokens() {
  const raw = ui.maxTokens.value.trim();
  if (!raw && !ui.maxTokens.validity.badInput) return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > config.max_tokens_limit) {
    showBanner(say(gettext("Max tokens must be a whole number from 1 to %(limit)s, or empty for the default (%(default)s)."), { limit: fmtInt(config.max_tokens_limit), default: config.default_max_tokens }));
    ui.maxTokens.focus();
    return undefined;
  }
  return n;
}

// frame, with the Max tokens field's value if one is set; null when it is invalid (banner shown).
export function withMaxTokens(frame) {
  const maxTokens = readMaxTokens();
  if (maxTokens === undefined) return null;
  if (maxTokens !== null) frame.max_tokens = maxTokens;
  return frame;
}

export function initBanner() {
  ui.banner.title = gettext("Click to dismiss");
  ui.banner.addEventListener("click", hideBanner);
}
