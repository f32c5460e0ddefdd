/* An answer as it is written: its status line (queued, loading the model, reading the prompt),
 * its text drawn again as tokens arrive, and its end: the final status, and the stats line and
 * phase bar (metrics.js). `gen` is the answer's view, from renderMessage (render.js). */

import { keepPinned, paintText } from "./render.js";
import { renderSources } from "./documents.js";
import { renderMetrics } from "./metrics.js";
import { updateControls } from "./controls.js";

const { el, isNum, say, fmtInt } = window.HomeAI;
const PAINT_EVERY_MS = 250;  // a streaming answer is redrawn four times a second (see appendToken)

export function setStatus(gen, parts, opts = {}) {
  gen.statusEl.className = "message-status" + (opts.busy ? " is-busy" : "") + (opts.kind ? ` ${opts.kind}` : "");
  gen.statusEl.replaceChildren(...[].concat(parts).map((p) => (typeof p === "string" ? el("span", null, p) : p)));
}
export const clearStatus = (gen) => setStatus(gen, []);

export function showQueued(gen, position) {
  setStatus(gen, position > 0 ? say(gettext("Queued (position %(n)s)"), { n: position }) : gettext("Starting…"), { busy: true });
}

export function showPrefill(gen, done, total) {
  if (!isNum(total) || total <= 0) { setStatus(gen, gettext("Reading prompt…"), { busy: true }); return; }
  const bar = el("progress", "prefill-progress");
  bar.max = total;
  bar.value = Math.min(done || 0, total);
  bar.setAttribute("aria-label", gettext("Prompt reading progress"));
  setStatus(gen, [bar, say(gettext("Reading prompt %(done)s/%(total)s tokens"), { done: fmtInt(done || 0), total: fmtInt(total) })]);
}

export function showNotice(gen, message) {
  gen.noticeEl.textContent = message || "";
  gen.noticeEl.hidden = !message;
}

// Tokens arrive faster than a person reads (100+ a second from a small model): draw the text
// so far at most every PAINT_EVERY_MS, in an animation frame, however many tokens came since.
// Each drawing parses and sanitises the whole answer; on a 2-core box every millisecond the
// page spends is one the model does not (bench_chat_render measures it).
export function appendToken(gen, text) {
  gen.text += text;
  if (gen.frame || gen.paintTimer) return;
  const wait = Math.max(0, (gen.paintedAt || 0) + PAINT_EVERY_MS - performance.now());
  gen.paintTimer = setTimeout(() => {
    gen.paintTimer = 0;
    gen.frame = requestAnimationFrame(() => {
      gen.frame = 0;
      gen.paintedAt = performance.now();
      keepPinned(() => paintText(gen));
    });
  }, wait);
}

export function setText(gen, text) {
  clearTimeout(gen.paintTimer);
  cancelAnimationFrame(gen.frame);
  gen.paintTimer = 0;
  gen.frame = 0;
  gen.text = text || "";
  keepPinned(() => paintText(gen));
}

export function finish(gen, status, metrics, errorText, sources) {
  gen.status = status;
  if (sources && sources.length) {
    // The answer's [n] markers become links, and its Sources list is drawn under it.
    gen.sources = sources;
    keepPinned(() => {
      paintText(gen);
      gen.sourcesEl.replaceChildren(renderSources(sources));
      gen.sourcesEl.hidden = false;
    });
  }
  gen.el.dataset.status = status;
  gen.el.classList.remove("streaming");
  gen.el.classList.toggle("is-empty", status === "done" && !gen.text);
  gen.textEl.setAttribute("aria-busy", "false");
  gen.actionsEl.hidden = false;
  if (status === "cancelled") setStatus(gen, el("span", "tag", gettext("Stopped")));
  else if (status === "interrupted") setStatus(gen, gettext("Interrupted: the worker stopped mid-answer."), { kind: "warning" });
  else if (status === "error") setStatus(gen, errorText || gettext("Something went wrong while generating this answer."), { kind: "error" });
  else clearStatus(gen);
  if (metrics) {
    if (!isNum(metrics.client_ttft_ms) && isNum(gen.clientTtft)) metrics.client_ttft_ms = gen.clientTtft;
    keepPinned(() => {
      gen.metricsEl.replaceChildren(...renderMetrics(metrics));
      gen.metricsEl.hidden = !gen.metricsEl.childElementCount;
    });
  }
  updateControls();
}
