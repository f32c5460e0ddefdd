/* An answer's stats line (TTFT, rates, tokens; the rest in its tooltip) and phase bar (the
 * server's time by phase, with a legend), drawn when the answer ends. */

import { modelLabel } from "./settings.js";

const { el, isNum, say, fmtMs, fmtRate, fmtInt } = window.HomeAI;
const PHASE_NAMES = { queue: pgettext("phase", "queue"), retrieve: pgettext("phase", "retrieve"), load: pgettext("phase", "load"), prefill: pgettext("phase", "prefill"), decode: pgettext("phase", "decode"), tool: pgettext("phase", "tools") };

function statsText(m) {
  const parts = [];
  if (isNum(m.ttft_ms)) parts.push(say(gettext("TTFT %(ms)s"), { ms: fmtMs(m.ttft_ms) }));
  if (isNum(m.prompt_tps)) parts.push(say(gettext("prompt %(rate)s tok/s"), { rate: fmtRate(m.prompt_tps) }));
  if (isNum(m.output_tps)) parts.push(say(gettext("output %(rate)s tok/s"), { rate: fmtRate(m.output_tps) }));
  if (isNum(m.output_tokens)) parts.push(say(ngettext("%(n)s token", "%(n)s tokens", m.output_tokens), { n: fmtInt(m.output_tokens) }));
  if (isNum(m.client_ttft_ms)) parts.push(say(gettext("browser TTFT %(ms)s"), { ms: fmtMs(m.client_ttft_ms) }));
  if (isNum(m.restored_tokens) && m.restored_tokens > 0) parts.push(say(gettext("restored %(n)s"), { n: fmtInt(m.restored_tokens) }));
  else if (isNum(m.cached_tokens) && m.cached_tokens > 0) parts.push(say(gettext("cached %(n)s"), { n: fmtInt(m.cached_tokens) }));
  if (m.cold) parts.push(gettext("cold load"));
  if (m.finish_reason === "length") parts.push(gettext("max tokens reached"));
  // An answer stopped while still queued has nothing worth a line.
  if (parts.length === 1 && m.output_tokens === 0) return "";
  return parts.join(" · ");
}

function statsTooltip(m) {
  const parts = m.model ? [modelLabel(m.model)] : [];
  if (isNum(m.prompt_tokens)) parts.push(say(gettext("%(n)s prompt tokens"), { n: fmtInt(m.prompt_tokens) }));
  if (isNum(m.tpot_ms)) parts.push(say(gettext("%(ms)s per output token"), { ms: fmtMs(m.tpot_ms) }));
  if (isNum(m.e2e_ms)) parts.push(say(gettext("total %(ms)s"), { ms: fmtMs(m.e2e_ms) }));
  if (m.finish_reason) parts.push(say(gettext("finish: %(reason)s"), { reason: m.finish_reason }));
  return parts.join(" · ");
}

export function renderMetrics(m) {
  const nodes = [];
  const text = statsText(m);
  if (text) {
    const line = el("div", "stats-line", text);
    const tip = statsTooltip(m);
    if (tip) line.title = tip;
    nodes.push(line);
  }
  // The server's phase split (inference.engine.timing.phase_ms), in the order the phases happen.
  const values = m.phase_ms || {};
  // Retrieve is shown only for answers drawn from documents.
  const phases = Object.keys(values).filter((key) => key !== "retrieve" || values[key] > 0);
  const total = phases.reduce((sum, key) => sum + values[key], 0);
  if (total <= 0) return nodes;
  const summary = phases.map((key) => `${PHASE_NAMES[key] || key} ${fmtMs(values[key])}`).join(" · ") + " · " + say(gettext("total %(ms)s"), { ms: fmtMs(total) });
  const bar = el("div", "phase-bar");
  bar.title = summary;
  bar.setAttribute("role", "img");
  bar.setAttribute("aria-label", say(gettext("Time by phase: %(summary)s"), { summary }));
  const legend = el("ul", "phase-legend");
  legend.setAttribute("aria-hidden", "true");  // the bar's label already says it
  for (const key of phases) {
    const seg = el("span", `seg seg-${key}`);
    seg.style.width = `${(values[key] / total) * 100}%`;
    seg.title = `${PHASE_NAMES[key] || key} ${fmtMs(values[key])}`;
    bar.append(seg);
    const item = el("li");
    item.append(el("span", `dot seg-${key}`), `${PHASE_NAMES[key] || key} ${fmtMs(values[key])}`);
    legend.append(item);
  }
  nodes.push(bar, legend);
  return nodes;
}
