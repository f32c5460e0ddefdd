/* An answer's tool calls, each a folded card (tool, arguments, result, milliseconds), drawn from
 * generation.tool events, the answer's end and the stored history. A call that acts on the world
 * waits for the person's yes here (chat.tool_confirm). Arguments and results are put in as text,
 * never as HTML: a tool's answer is whatever its server sent. */

import { sendFrame } from "./socket.js";
import { keepPinned } from "./render.js";

const { el, say, fmtMs } = window.HomeAI;

const STATUS = {
  running: gettext("running…"),
  confirm: gettext("waiting for your yes"),
  done: gettext("done"),
  error: gettext("failed"),
  refused: gettext("not run"),
};

function block(label, text) {
  const box = el("div", "tool-part");
  box.append(el("div", "tool-label", label), el("pre", "tool-text", text));
  return box;
}

function summaryText(call) {
  const parts = [say(gettext("Tool: %(name)s"), { name: call.tool }), STATUS[call.status] || call.status];
  if (typeof call.ms === "number" && call.status !== "refused") parts.push(fmtMs(call.ms));
  return parts.join(" · ");
}

function confirmBar(gen, call) {
  const bar = el("div", "tool-confirm");
  bar.append(el("span", null, gettext("This tool acts on the world. Run it?")));
  const answer = (allow) => {
    for (const button of bar.querySelectorAll("button")) button.disabled = true;
    sendFrame({ type: "chat.tool_confirm", generation: gen.id, call: call.index, allow });
  };
  const yes = el("button", "button button-primary", gettext("Run it"));
  yes.type = "button";
  yes.addEventListener("click", () => answer(true));
  const no = el("button", "button", gettext("Don't run it"));
  no.type = "button";
  no.addEventListener("click", () => answer(false));
  bar.append(yes, no);
  return bar;
}

// Draw or update one call's card on the answer gen (a view from render.js).
export function showToolCall(gen, call) {
  keepPinned(() => {
    if (!gen.toolsEl) {
      gen.toolsEl = el("div", "tool-calls");
      gen.el.insertBefore(gen.toolsEl, gen.textEl);
    }
    let card = gen.toolsEl.querySelector(`[data-call="${Number(call.index)}"]`);
    if (!card) {
      card = el("details", "tool-card");
      card.dataset.call = String(Number(call.index));
      gen.toolsEl.append(card);
    }
    card.dataset.status = call.status;
    const summary = el("summary", null, summaryText(call));
    const parts = [summary, block(gettext("Arguments"), JSON.stringify(call.arguments ?? {}, null, 2))];
    if (typeof call.result === "string") parts.push(block(call.status === "done" ? gettext("Result") : gettext("Why"), call.result));
    if (call.status === "confirm") {  // any tab of the person may answer
      parts.push(confirmBar(gen, call));
      card.open = true;
    } else if (call.status !== "confirm") card.open = false;
    card.replaceChildren(...parts);
  });
}

export function showToolCalls(gen, calls) {
  for (const call of calls || []) showToolCall(gen, call);
}
