/* The keyboard shortcuts, one listener on the document (the shortcuts dialog lists them, and
 * its "?" button opens it): new chat, search, settings, copy or regenerate the last answer, and
 * Esc (clear the search, close the sidebar, stop the answer). */

import { ui, state, activeOwnGen } from "./state.js";
import { openDialog } from "./dialogs.js";
import { clearSearch, focusSearch, setSidebarOpen } from "./sidebar.js";
import { openSettings } from "./settings.js";
import { regenerate } from "./branches.js";
import { onStop } from "./composer.js";

const { copyText } = window.HomeAI;

const isTextField = (node) => node instanceof HTMLElement && (node.isContentEditable || node.matches("input, textarea, select"));
const lastAnswer = () => [...ui.messages.querySelectorAll(".message.assistant")].pop() || null;
const viewOf = (node) => node && [...state.gens.values()].find((g) => g.el === node);

function onShortcut(e) {
  if (e.defaultPrevented || e.isComposing) return;
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (document.querySelector("dialog[open]")) return;  // a dialog handles its own keys (Esc closes it)
  if (mod && e.shiftKey && key === "o") { e.preventDefault(); location.assign("/chat/"); return; }
  if (mod && !e.shiftKey && key === "k") { e.preventDefault(); focusSearch(); return; }
  if (mod && e.shiftKey && key === "s") { e.preventDefault(); openSettings(); return; }
  if (mod && e.shiftKey && key === "c") {
    e.preventDefault();
    const view = viewOf(lastAnswer());
    if (view) copyText(view.text);
    return;
  }
  if (mod && e.shiftKey && key === "r") {
    e.preventDefault();
    const answer = lastAnswer();
    const view = answer && (viewOf(answer) || null);
    if (view && view.messageId != null) regenerate(view);
    return;
  }
  if (key === "?" && !mod && !isTextField(e.target)) { e.preventDefault(); openDialog(ui.shortcutsDialog, document.activeElement); return; }
  if (key === "Escape") {
    if (e.target === ui.search) { e.preventDefault(); clearSearch(); return; }
    if (ui.layout.classList.contains("sidebar-open")) {
      setSidebarOpen(false);
      if (ui.sidebarToggle) ui.sidebarToggle.focus();
      return;
    }
    if (activeOwnGen() && !ui.stop.disabled) { e.preventDefault(); onStop(); }
  }
}

export function initShortcuts() {
  document.addEventListener("keydown", onShortcut);
  ui.shortcutsButton.addEventListener("click", () => openDialog(ui.shortcutsDialog, ui.shortcutsButton));
}
