/* The page's dialogs (chat settings, sharing, keyboard shortcuts): one open at a time, modal; each closes
 * on its close buttons and on a click on its backdrop, and gives the focus back to what opened it. */

import { ui } from "./state.js";

let dialogOpener = null;

export function openDialog(dialog, opener) {
  if (dialog.open) return;
  for (const other of document.querySelectorAll("dialog[open]")) other.close();
  dialogOpener = opener || document.activeElement;
  dialog.showModal();
}

export function initDialogs() {
  for (const dialog of [ui.settingsDialog, ui.shareDialog, ui.shortcutsDialog]) {
    for (const button of dialog.querySelectorAll("[data-close]")) button.addEventListener("click", () => dialog.close());
    // Focus goes back to what opened the dialog.
    dialog.addEventListener("close", () => { if (dialogOpener && dialogOpener.isConnected) dialogOpener.focus(); });
    // A click on the backdrop (the dialog element itself, outside its body) closes it.
    dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });
  }
}
