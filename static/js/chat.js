/* HomeAI chat page: renders history, streams answers over one WebSocket, shows latency phases.
 * A user's text is only ever set through textContent; an answer is markdown, drawn by
 * HomeAI.renderMarkdown (markdown.js), which sanitises it: nothing from a model runs or loads. */
(function () {
  "use strict";

  const { $, el, readJson, isNum, fmtMs, fmtRate, fmtInt, copyButton, renderMarkdown, ReconnectingSocket } = window.HomeAI;
  const ui = {
    layout: $("chat-layout"), sidebarToggle: $("sidebar-toggle"), backdrop: $("sidebar-backdrop"),
    convList: $("conversation-items"), heading: $("chat-heading"), status: $("connection-status"),
    banner: $("error-banner"), messages: $("messages"), form: $("composer"), input: $("message-input"),
    maxTokens: $("max-tokens"), send: $("send-button"), stop: $("stop-button"), charCount: $("char-count"),
  };
  if (!ui.messages || !ui.form) return;

  const config = Object.assign(
    { ws_path: "/ws/chat/", conversation: null, default_max_tokens: 256, max_tokens_limit: 2048, max_chars: 16000 },
    readJson("chat-config"));
  const ACTIVE = new Set(["queued", "running"]);
  const FINISHED = new Set(["done", "cancelled", "interrupted", "error"]);

  const gens = new Map();   // generation id -> an answer's view (see renderMessage)
  let pending = null;       // our chat.send awaiting generation.queued: {userEl, text, sentAt}
  let socket = null;        // the ReconnectingSocket, from init()
  let bannerTimer = null;

  // Count code points like the server (Python len) does, not UTF-16 units: an emoji is one.
  function charLength(text) {
    let n = 0;
    for (const _ of text) n++;  // eslint-disable-line no-unused-vars
    return n;
  }

  /* ---------- Scrolling: stay pinned to the bottom only if the reader already was ---------- */

  const nearBottom = () => ui.messages.scrollHeight - ui.messages.scrollTop - ui.messages.clientHeight < 48;
  const scrollToBottom = () => { ui.messages.scrollTop = ui.messages.scrollHeight; };
  function keepPinned(mutate) {
    const pinned = nearBottom();
    mutate();
    if (pinned) scrollToBottom();
  }

  /* ---------- Message elements ---------- */

  function removeEmptyState() {
    const empty = ui.messages.querySelector(".empty-state");
    if (empty) empty.remove();
  }

  function showEmptyState() {
    const box = el("div", "empty-state");
    box.append(el("h2", null, "How can I help?"),
      el("p", null, "Answers come from the model running on your home server."));
    ui.messages.append(box);
  }

  // A message's text: the user's as typed (CSS keeps its line breaks), an answer as markdown.
  function paintText(view) {
    if (view.role === "user") view.textEl.textContent = view.text;
    else renderMarkdown(view.textEl, view.text);
  }

  /* One message, appended to the list. record: a turn as the history sends it ({id, role, text,
   * generation}); own: this page follows the answer (Stop and Send wait on it), because it sent it
   * or it was running when the page loaded. Returns the message's view: its element and parts,
   * and for an answer with a generation, the live record kept in `gens`. */
  function renderMessage(record, own = false) {
    removeEmptyState();
    const role = record.role === "user" ? "user" : "assistant";
    const view = { role, text: record.text || "", el: el("div", `message ${role}`), textEl: el("div", "message-text") };
    if (record.id != null) view.el.dataset.message = String(record.id);
    view.actionsEl = el("div", "message-actions");
    view.actionsEl.append(copyButton("Copy", () => view.text, role === "user" ? "Copy this message" : "Copy this answer as markdown"));
    if (role === "user") view.el.append(view.textEl, view.actionsEl);
    else {
      Object.assign(view, {
        noticeEl: el("div", "message-notice"), statusEl: el("div", "message-status"), metricsEl: el("div", "message-metrics"),
      });
      view.noticeEl.hidden = true;
      view.metricsEl.hidden = true;
      view.el.append(view.noticeEl, view.textEl, view.statusEl, view.metricsEl, view.actionsEl);
      if (record.generation) trackGeneration(view, record.generation, own);
    }
    paintText(view);
    keepPinned(() => ui.messages.append(view.el));
    return view;
  }

  // An answer with a generation: its live state, found by id when the socket's events arrive.
  function trackGeneration(view, g, own) {
    Object.assign(view, {
      id: g.id, own, status: g.status || "queued", sentAt: null, ttftSent: false, clientTtft: null, frame: 0,
    });
    view.el.dataset.generation = String(g.id);
    if (ACTIVE.has(view.status)) {
      view.actionsEl.hidden = true;  // until the answer is whole
      // Screen readers hold announcements while aria-busy, then read the finished answer once.
      view.textEl.setAttribute("aria-live", "polite");
      view.textEl.setAttribute("aria-busy", "true");
    }
    gens.set(g.id, view);
  }

  function setStatus(gen, parts, opts = {}) {
    gen.statusEl.className = "message-status" + (opts.busy ? " is-busy" : "") + (opts.kind ? ` ${opts.kind}` : "");
    gen.statusEl.replaceChildren(...[].concat(parts).map((p) => (typeof p === "string" ? el("span", null, p) : p)));
  }
  const clearStatus = (gen) => setStatus(gen, []);

  function showQueued(gen, position) {
    setStatus(gen, position > 0 ? `Queued (position ${position})` : "Starting…", { busy: true });
  }

  function showPrefill(gen, done, total) {
    if (!isNum(total) || total <= 0) { setStatus(gen, "Reading prompt…", { busy: true }); return; }
    const bar = el("progress", "prefill-progress");
    bar.max = total;
    bar.value = Math.min(done || 0, total);
    bar.setAttribute("aria-label", "Prompt reading progress");
    setStatus(gen, [bar, `Reading prompt ${fmtInt(done || 0)}/${fmtInt(total)} tokens`]);
  }

  function showNotice(gen, message) {
    gen.noticeEl.textContent = message || "";
    gen.noticeEl.hidden = !message;
  }

  // Tokens can arrive faster than the screen refreshes: render the text so far at most once a
  // frame, however many tokens came since the last one.
  function appendToken(gen, text) {
    gen.text += text;
    if (gen.frame) return;
    gen.frame = requestAnimationFrame(() => {
      gen.frame = 0;
      keepPinned(() => paintText(gen));
    });
  }

  function setText(gen, text) {
    cancelAnimationFrame(gen.frame);
    gen.frame = 0;
    gen.text = text || "";
    keepPinned(() => paintText(gen));
  }

  function finish(gen, status, metrics, errorText) {
    gen.status = status;
    gen.el.dataset.status = status;
    gen.el.classList.remove("streaming");
    gen.el.classList.toggle("is-empty", status === "done" && !gen.text);
    gen.textEl.setAttribute("aria-busy", "false");
    gen.actionsEl.hidden = false;
    if (status === "cancelled") setStatus(gen, el("span", "tag", "Stopped"));
    else if (status === "interrupted") setStatus(gen, "Interrupted: the worker stopped mid-answer.", { kind: "warning" });
    else if (status === "error") setStatus(gen, errorText || "Something went wrong while generating this answer.", { kind: "error" });
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

  /* ---------- Stats line and phase bar ---------- */

  function statsText(m) {
    const parts = [];
    if (isNum(m.ttft_ms)) parts.push(`TTFT ${fmtMs(m.ttft_ms)}`);
    if (isNum(m.prompt_tps)) parts.push(`prompt ${fmtRate(m.prompt_tps)} tok/s`);
    if (isNum(m.output_tps)) parts.push(`output ${fmtRate(m.output_tps)} tok/s`);
    if (isNum(m.output_tokens)) parts.push(`${fmtInt(m.output_tokens)} ${m.output_tokens === 1 ? "token" : "tokens"}`);
    if (isNum(m.client_ttft_ms)) parts.push(`browser TTFT ${fmtMs(m.client_ttft_ms)}`);
    if (isNum(m.cached_tokens) && m.cached_tokens > 0) parts.push(`cached ${fmtInt(m.cached_tokens)}`);
    if (m.cold) parts.push("cold load");
    if (m.finish_reason === "length") parts.push("max tokens reached");
    // An answer stopped while still queued has nothing worth a line.
    if (parts.length === 1 && m.output_tokens === 0) return "";
    return parts.join(" · ");
  }

  function statsTooltip(m) {
    const parts = [];
    if (isNum(m.prompt_tokens)) parts.push(`${fmtInt(m.prompt_tokens)} prompt tokens`);
    if (isNum(m.tpot_ms)) parts.push(`${fmtMs(m.tpot_ms)} per output token`);
    if (isNum(m.e2e_ms)) parts.push(`total ${fmtMs(m.e2e_ms)}`);
    if (m.finish_reason) parts.push(`finish: ${m.finish_reason}`);
    return parts.join(" · ");
  }

  function renderMetrics(m) {
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
    const phases = Object.keys(values);
    const total = phases.reduce((sum, key) => sum + values[key], 0);
    if (total <= 0) return nodes;
    const summary = phases.map((key) => `${key} ${fmtMs(values[key])}`).join(" · ") + ` · total ${fmtMs(total)}`;
    const bar = el("div", "phase-bar");
    bar.title = summary;
    bar.setAttribute("role", "img");
    bar.setAttribute("aria-label", `Time by phase: ${summary}`);
    const legend = el("ul", "phase-legend");
    legend.setAttribute("aria-hidden", "true");  // the bar's label already says it
    for (const key of phases) {
      const seg = el("span", `seg seg-${key}`);
      seg.style.width = `${(values[key] / total) * 100}%`;
      seg.title = `${key} ${fmtMs(values[key])}`;
      bar.append(seg);
      const item = el("li");
      item.append(el("span", `dot seg-${key}`), `${key} ${fmtMs(values[key])}`);
      legend.append(item);
    }
    nodes.push(bar, legend);
    return nodes;
  }

  /* ---------- Composer state ---------- */

  const activeOwnGen = () => [...gens.values()].find((g) => g.own && ACTIVE.has(g.status)) || null;

  function updateControls() {
    const active = activeOwnGen();
    const connected = Boolean(socket) && socket.open;
    ui.send.disabled = !connected || Boolean(pending) || Boolean(active);
    ui.send.title = connected ? "" : "Waiting for the connection…";
    ui.stop.hidden = !active;
    if (!active) ui.stop.disabled = false;
  }

  function showBanner(message, autoHide = true) {
    clearTimeout(bannerTimer);
    ui.banner.textContent = message;
    ui.banner.hidden = false;
    if (autoHide) bannerTimer = setTimeout(hideBanner, 8000);
  }
  function hideBanner() {
    clearTimeout(bannerTimer);
    ui.banner.hidden = true;
  }

  function autoResize() {
    ui.input.style.height = "auto";
    ui.input.style.height = `${ui.input.scrollHeight}px`;
  }

  // Only show the counter near the limit, where it helps.
  function updateCharCount() {
    const len = charLength(ui.input.value.trim());
    ui.charCount.hidden = len < config.max_chars * 0.8;
    ui.charCount.textContent = `${fmtInt(len)} / ${fmtInt(config.max_chars)}`;
    ui.charCount.classList.toggle("over", len > config.max_chars);
  }

  // Returns a number, null for "use the default", or undefined when invalid (banner shown).
  function readMaxTokens() {
    const raw = ui.maxTokens.value.trim();
    if (!raw && !ui.maxTokens.validity.badInput) return null;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > config.max_tokens_limit) {
      showBanner(`Max tokens must be a whole number from 1 to ${fmtInt(config.max_tokens_limit)}, or empty for the default (${config.default_max_tokens}).`);
      ui.maxTokens.focus();
      return undefined;
    }
    return n;
  }

  function onSubmit(event) {
    event.preventDefault();
    if (ui.send.disabled) return;
    const text = ui.input.value.trim();
    if (!text) { showBanner("Type a message first."); return; }
    const length = charLength(text);
    if (length > config.max_chars) {
      showBanner(`Your message is ${fmtInt(length)} characters; the limit is ${fmtInt(config.max_chars)}.`);
      return;
    }
    const maxTokens = readMaxTokens();
    if (maxTokens === undefined) return;
    const frame = { type: "chat.send", conversation: config.conversation, text };
    if (maxTokens !== null) frame.max_tokens = maxTokens;
    const sentAt = performance.now();
    if (!sendFrame(frame)) { showBanner("Not connected to the server yet. Try again in a moment."); return; }
    hideBanner();
    pending = { userEl: renderMessage({ role: "user", text }).el, text, sentAt };
    scrollToBottom();
    ui.input.value = "";
    autoResize();
    updateCharCount();
    updateControls();
  }

  function onKeyDown(event) {
    // isComposing: Enter that confirms an IME candidate must not send.
    if (event.key !== "Enter" || event.shiftKey || event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
    event.preventDefault();
    if (typeof ui.form.requestSubmit === "function") ui.form.requestSubmit();
    else ui.form.dispatchEvent(new Event("submit", { cancelable: true }));
  }

  function onStop() {
    const gen = activeOwnGen();
    if (!gen || !sendFrame({ type: "chat.cancel", generation: gen.id })) return;
    ui.stop.disabled = true;  // until the server confirms with generation.done
    setStatus(gen, "Stopping…", { busy: true });
  }

  /* ---------- Sidebar ---------- */

  function touchConversation(id, title) {
    if (!ui.convList) return;
    const emptyItem = ui.convList.querySelector(".conversation-empty");
    if (emptyItem) emptyItem.remove();
    let link = ui.convList.querySelector(`a.conversation-link[data-conversation="${id}"]`);
    if (!link) {
      link = el("a", "conversation-link");
      link.dataset.conversation = String(id);
      link.href = `/chat/${id}/`;
      link.append(el("span", "conversation-title"), el("time", "conversation-time"));
      const item = el("li");
      item.append(link);
      ui.convList.prepend(item);
    }
    if (title) link.querySelector(".conversation-title").textContent = title;
    const time = link.querySelector(".conversation-time");
    const now = new Date();
    time.dateTime = now.toISOString();
    time.textContent = now.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
    ui.convList.prepend(link.parentElement);  // the list is newest first
    for (const other of ui.convList.querySelectorAll("a.conversation-link[aria-current]")) other.removeAttribute("aria-current");
    link.setAttribute("aria-current", "page");
  }

  function setSidebarOpen(open) {
    ui.layout.classList.toggle("sidebar-open", open);
    if (ui.sidebarToggle) {
      ui.sidebarToggle.setAttribute("aria-expanded", String(open));
      ui.sidebarToggle.setAttribute("aria-label", open ? "Hide conversations" : "Show conversations");
    }
    if (open) $("new-conversation").focus();
  }

  /* ---------- Server events ---------- */

  function onQueued(msg) {
    let gen = gens.get(msg.generation);
    if (!gen && pending) {
      // The reply to our own chat.send.
      gen = renderMessage({ role: "assistant", generation: { id: msg.generation } }, true);
      gen.sentAt = pending.sentAt;
      pending = null;
      if (config.conversation == null && msg.conversation != null) {
        config.conversation = msg.conversation;
        history.replaceState(null, "", `/chat/${msg.conversation}/`);
        ui.heading.textContent = msg.conversation_title || "New chat";
        document.title = `${msg.conversation_title || "Chat"} · HomeAI`;
      }
      if (msg.conversation != null) touchConversation(msg.conversation, msg.conversation_title);
    } else if (!gen) {
      // Another tab of this user; show it only if it belongs to the conversation on screen.
      if (config.conversation == null || msg.conversation !== config.conversation) return;
      gen = renderMessage({ role: "assistant", generation: { id: msg.generation } }, false);
    }
    showQueued(gen, msg.position);
    updateControls();
  }

  function onPhase(msg) {
    const gen = gens.get(msg.generation);
    if (!gen || FINISHED.has(gen.status)) return;
    if (msg.phase !== "queued" && msg.phase !== "notice") gen.status = "running";
    switch (msg.phase) {
      case "queued": showQueued(gen, msg.position); break;
      case "load":
        if (msg.state === "start") setStatus(gen, "Loading model…", { busy: true });
        else setStatus(gen, "Reading prompt…", { busy: true });
        break;
      case "prefill": showPrefill(gen, msg.done, msg.total); break;
      case "decode": clearStatus(gen); gen.el.classList.add("streaming"); break;
      case "notice": showNotice(gen, msg.message); break;
    }
  }

  function onToken(msg) {
    const gen = gens.get(msg.generation);
    if (!gen || FINISHED.has(gen.status)) return;
    if (gen.statusEl.childElementCount) clearStatus(gen);
    gen.status = "running";
    gen.el.classList.add("streaming");
    if (gen.sentAt !== null && !gen.ttftSent) {
      gen.ttftSent = true;
      gen.clientTtft = performance.now() - gen.sentAt;
      sendFrame({ type: "chat.ttft", generation: gen.id, ttft_ms: gen.clientTtft });
    }
    appendToken(gen, msg.text || "");
  }

  function onDone(msg) {
    const gen = gens.get(msg.generation);
    if (!gen) return;
    if (typeof msg.text === "string") setText(gen, msg.text);
    if (msg.notice) showNotice(gen, msg.notice);
    finish(gen, msg.status || "done", msg.metrics || null, msg.error || msg.message);
  }

  function onError(msg) {
    if (msg.generation != null) {
      const gen = gens.get(msg.generation);
      // bad_request naming a generation complains about our chat.ttft, not about the answer.
      if (msg.code === "bad_request") console.warn("HomeAI:", msg.message);
      else if (gen && !FINISHED.has(gen.status)) {
        finish(gen, msg.code === "interrupted" ? "interrupted" : "error", null, msg.message);
      }
      return;
    }
    if (pending) {
      // The server refused our message: take it back out and give the text back to edit.
      pending.userEl.remove();
      if (!ui.input.value) { ui.input.value = pending.text; autoResize(); updateCharCount(); }
      pending = null;
      if (!ui.messages.querySelector(".message")) showEmptyState();
    }
    showBanner(msg.message || "The server could not handle that request.");
    updateControls();
  }

  const HANDLERS = {
    "generation.queued": onQueued, "generation.phase": onPhase, "generation.token": onToken,
    "generation.done": onDone, "generation.error": onError,
  };

  /* ---------- WebSocket ---------- */

  const sendFrame = (frame) => Boolean(socket) && socket.send(frame);

  function onConnection(state, { reconnected }) {
    if (reconnected) releaseAfterReconnect();
    if (state !== "connected" && pending) {
      pending.userEl.classList.add("unconfirmed");
      pending = null;
      showBanner("The connection dropped before your message was confirmed. Reload to check whether it was sent.", false);
    }
    updateControls();
  }

  // Events sent while we were away are gone, so a "done" may have been missed: stop blocking
  // Send on those answers. Later tokens still land in them.
  function releaseAfterReconnect() {
    for (const gen of gens.values()) {
      if (!gen.own || !ACTIVE.has(gen.status)) continue;
      gen.own = false;
      setStatus(gen, "The connection dropped while answering. Reload the page if this answer doesn't finish.", { kind: "warning" });
    }
  }

  /* ---------- Start-up ---------- */

  function renderHistory(turns) {
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
    if (g.status === "queued") setStatus(gen, "Queued", { busy: true });
    else if (g.status === "running") {
      if (gen.text) gen.el.classList.add("streaming");
      else setStatus(gen, "Generating…", { busy: true });
    } else finish(gen, g.status, g.metrics, g.error);
  }

  function init() {
    ui.maxTokens.min = "1";
    ui.maxTokens.max = String(config.max_tokens_limit);
    ui.maxTokens.placeholder = String(config.default_max_tokens);
    renderHistory(readJson("history-data") || []);

    ui.form.addEventListener("submit", onSubmit);
    ui.input.addEventListener("keydown", onKeyDown);
    ui.input.addEventListener("input", () => { autoResize(); updateCharCount(); });
    ui.stop.addEventListener("click", onStop);
    ui.banner.title = "Click to dismiss";
    ui.banner.addEventListener("click", hideBanner);
    if (ui.sidebarToggle) {
      ui.sidebarToggle.addEventListener("click", () => setSidebarOpen(!ui.layout.classList.contains("sidebar-open")));
    }
    if (ui.backdrop) ui.backdrop.addEventListener("click", () => setSidebarOpen(false));
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || !ui.layout.classList.contains("sidebar-open")) return;
      setSidebarOpen(false);
      if (ui.sidebarToggle) ui.sidebarToggle.focus();
    });
    for (const form of document.querySelectorAll("form[data-confirm]")) {
      form.addEventListener("submit", (e) => { if (!window.confirm(form.dataset.confirm)) e.preventDefault(); });
    }
    autoResize();
    socket = new ReconnectingSocket(config.ws_path, { handlers: HANDLERS, status: ui.status, onState: onConnection });
    updateControls();
    socket.start();
  }

  init();
})();
