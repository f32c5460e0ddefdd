/* HomeAI chat page: renders history, streams answers over one WebSocket, shows latency phases.
 * The entry module (chat.html loads it after the scripts it uses as globals: Django's JavaScript
 * catalog, common.js and markdown.js, window.HomeAI): draws the history, wires each part of the
 * page, then connects. A user's text is only ever set through textContent; an answer is markdown,
 * drawn by HomeAI.renderMarkdown (markdown.js), which sanitises it: nothing from a model runs or loads. */

import { ui } from "./state.js";
import { initBanner } from "./controls.js";
import { connect } from "./socket.js";
import { renderHistory } from "./history.js";
import { HANDLERS } from "./events.js";
import { initComposer } from "./composer.js";
import { initSidebar } from "./sidebar.js";
import { initSettings } from "./settings.js";
import { initDialogs } from "./dialogs.js";
import { initShortcuts } from "./shortcuts.js";
import { initTravel } from "./travel.js";
import { initOffline } from "./offline.js";
import { initDocuments } from "./documents.js";

const { readJson, renderMarkdown } = window.HomeAI;
const WARM_UP = "A *warm-up*: `code`, [a link](https://example.org)\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint(1)\n```";

function init() {
  renderHistory(readJson("history-data") || []);
  // The first drawing compiles markdown-it, DOMPurify and highlight.js: do it while the person
  // types, not while the model writes their first answer.
  setTimeout(() => renderMarkdown(document.createElement("div"), WARM_UP), 0);
  initComposer();
  initDocuments();
  initBanner();
  initSidebar();
  initShortcuts();
  initSettings();
  initDialogs();
  initTravel();
  initOffline();
  connect(HANDLERS);
}

if (ui.messages && ui.form) init();
