/* A branch as the server stored it, drawn whole: the history the page loads with, and the
 * branch conversation.branch sends after a regenerate, an edit or a switch. */

import { ui, ACTIVE } from "./state.js";
import { renderMessage, showEmptyState, scrollToBottom } from "./render.js";
import { setStatus, showNotice, finish } from "./stream.js";
import { showToolCalls } from "./tools.js";

export function renderHistory(turns) {
  for (const turn of turns) {
    const g = turn.role === "user" ? null : turn.generation;
    const view = renderMessage(turn, Boolean(g) && ACTIVE.has(g.status));
    if (g) showStoredState(view, g);
  }
  if (!ui.messages.querySelector(".message")) showEmptyState();
  scrollToBottom();
}

// An answer as the page found it: waiting, still being written, or finished with its metrics.
function showStoredState(gen, g) {
  showNotice(gen, g.notice);
  showToolCalls(gen, g.tool_calls);
  if (g.status === "queued") setStatus(gen, gettext("Queued"), { busy: true });
  else if (g.status === "running") {
    if (gen.text) gen.el.classList.add("streaming");
    else setStatus(gen, gettext("Generating…"), { busy: true });
  } else finish(gen, g.status, g.metrics, g.error, g.sources);
}
