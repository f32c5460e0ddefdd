/* HomeAI chat page: renders history, streams answers over one WebSocket, shows latency phases.
 * A user's text is only ever set through textContent; an answer is markdown, drawn by
 * HomeAI.renderMarkdown (markdown.js), which sanitises it: nothing from a model runs or loads. */
(function () {
  "use strict";

  const {
    $, el, readJson, isNum, say, fmtMs, fmtRate, fmtInt, copyText, copyButton, fetchJson, debounce, renderMarkdown, ReconnectingSocket,
  } = window.HomeAI;
  const PHASE_NAMES = { queue: pgettext("phase", "queue"), load: pgettext("phase", "load"), prefill: pgettext("phase", "prefill"), decode: pgettext("phase", "decode") };
  const ui = {
    layout: $("chat-layout"), sidebarToggle: $("sidebar-toggle"), backdrop: $("sidebar-backdrop"),
    convList: $("conversation-items"), heading: $("chat-heading"), status: $("connection-status"),
    banner: $("error-banner"), messages: $("messages"), form: $("composer"), input: $("message-input"),
    maxTokens: $("max-tokens"), send: $("send-button"), stop: $("stop-button"), charCount: $("char-count"),
    rename: $("rename-button"), search: $("conversation-search"), searchResults: $("search-results"),
    searchStatus: $("search-status"), searchItems: $("search-items"), convNav: $("conversation-nav"),
    settingsButton: $("settings-button"), settingsSummary: $("settings-summary"), settingsDialog: $("settings-dialog"),
    shortcutsButton: $("shortcuts-button"), shortcutsDialog: $("shortcuts-dialog"),
  };
  if (!ui.messages || !ui.form) return;

  const config = Object.assign(
    { ws_path: "/ws/chat/", conversation: null, default_max_tokens: 256, max_tokens_limit: 2048, max_chars: 16000 },
    readJson("chat-config"));
  config.settings = Object.assign({ model: "", system_prompt: "", temperature: null, top_p: null, max_tokens: null }, config.settings);
  config.models = config.models || [];
  config.defaults = config.defaults || {};
  config.presets = config.presets || [];
  const ACTIVE = new Set(["queued", "running"]);
  const FINISHED = new Set(["done", "cancelled", "interrupted", "error"]);
  const PAINT_EVERY_MS = 250;  // a streaming answer is redrawn four times a second (see appendToken)
  const SYNC_AFTER_MS = 3000;  // unfinished answers silent this long: ask the server where they are
  const WARM_UP = "A *warm-up*: `code`, [a link](https://example.org)\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nprint(1)\n```";

  const gens = new Map();   // generation id -> an answer's view (see renderMessage)
  let pending = null;       // our chat.send awaiting generation.queued: {userView, userEl, text, sentAt}
  let pendingAction = null; // our regenerate / edit / switch awaiting the server: {sentAt}
  let settingsUnsent = false; // a new chat's settings, kept here until its first chat.send carries them
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
    box.append(el("h2", null, gettext("How can I help?")),
      el("p", null, gettext("Answers come from the model running on your home server.")));
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
    view.actionsEl = el("div", "message-actions");
    view.copyEl = copyButton(gettext("Copy"), () => view.text, role === "user" ? gettext("Copy this message") : gettext("Copy this answer as markdown"));
    setMessageId(view, record.id, record.siblings);
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

  /* ---------- A message's actions: copy, edit or regenerate, and the "‹ 2 / 3 ›" switcher ---------- */

  // A message's id (known once the server stored it) and its alternatives; draws its actions.
  function setMessageId(view, id, siblings) {
    view.messageId = id == null ? null : id;
    view.siblings = siblings || null;
    if (id != null) view.el.dataset.message = String(id);
    buildActions(view);
  }

  function actionButton(label, title, onClick) {
    const button = el("button", "action-button", label);
    button.type = "button";
    button.title = title;
    button.setAttribute("aria-label", title);
    button.dataset.idle = "";  // disabled while an answer is active (updateControls)
    button.disabled = !actionsIdle();
    button.addEventListener("click", onClick);
    return button;
  }

  function buildActions(view) {
    const parts = [view.copyEl];
    if (view.messageId != null) {
      if (view.role === "user") parts.push(actionButton(gettext("Edit"), gettext("Edit this message and send it again"), () => openEditor(view)));
      else parts.push(actionButton(gettext("Regenerate"), gettext("Write this answer again"), () => regenerate(view)));
    }
    const sib = view.siblings;
    if (sib && sib.count > 1) {
      const mine = view.role === "user";
      const box = el("span", "sibling-switch");
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", say(mine ? gettext("Version %(index)s of %(count)s of this message") : gettext("Version %(index)s of %(count)s of this answer"), { index: sib.index, count: sib.count }));
      const prev = actionButton("‹", mine ? gettext("Previous version of this message") : gettext("Previous version of this answer"), () => switchTo(sib.ids[sib.index - 2]));
      const next = actionButton("›", mine ? gettext("Next version of this message") : gettext("Next version of this answer"), () => switchTo(sib.ids[sib.index]));
      prev.classList.add("sibling-prev");
      next.classList.add("sibling-next");
      if (sib.index <= 1) { prev.dataset.edge = ""; prev.disabled = true; }
      if (sib.index >= sib.count) { next.dataset.edge = ""; next.disabled = true; }
      box.append(prev, el("span", "sibling-count", `${sib.index} / ${sib.count}`), next);
      parts.push(box);
    }
    view.actionsEl.replaceChildren(...parts);
    updateActionButtons();
  }

  // Regenerate, edit and switch wait for the conversation's answer to end, and for the server.
  const conversationBusy = () => Boolean(pending) || Boolean(pendingAction) || [...gens.values()].some((g) => ACTIVE.has(g.status));

  const actionsIdle = () => Boolean(socket) && socket.open && !conversationBusy();

  function updateActionButtons() {
    const idle = actionsIdle();
    for (const button of ui.messages.querySelectorAll("button[data-idle]")) {
      button.disabled = !idle || button.hasAttribute("data-edge");
    }
  }

  // Sends a branch-changing frame; the server answers conversation.branch (then generation.queued).
  function sendAction(frame) {
    if (conversationBusy()) { showBanner(gettext("Wait for the answer to finish, or stop it first.")); return false; }
    if (!sendFrame(frame)) { showBanner(gettext("Not connected to the server yet. Try again in a moment.")); return false; }
    hideBanner();
    pendingAction = { sentAt: performance.now() };
    updateControls();
    return true;
  }

  function withMaxTokens(frame) {
    const maxTokens = readMaxTokens();
    if (maxTokens === undefined) return null;
    if (maxTokens !== null) frame.max_tokens = maxTokens;
    return frame;
  }

  function regenerate(view) {
    const frame = withMaxTokens({ type: "chat.regenerate", message: view.messageId });
    if (frame) sendAction(frame);
  }

  function switchTo(id) {
    if (id != null) sendAction({ type: "chat.switch", message: id });
  }

  // An inline editor in place of a user's message: Save & send makes a sibling message and answer.
  function openEditor(view) {
    if (view.editor) { view.editor.querySelector("textarea").focus(); return; }
    const editor = el("div", "message-editor");
    const area = el("textarea", "message-editor-input");
    area.value = view.text;
    area.rows = Math.min(10, Math.max(2, view.text.split("\n").length));
    area.setAttribute("aria-label", gettext("Edit your message"));
    const bar = el("div", "message-editor-bar");
    const cancel = el("button", "button button-secondary button-small", gettext("Cancel"));
    const save = el("button", "button button-primary button-small", gettext("Save & send"));
    cancel.type = save.type = "button";
    bar.append(cancel, save);
    editor.append(area, bar);
    const close = () => {
      editor.remove();
      view.editor = null;
      view.textEl.hidden = view.actionsEl.hidden = false;
      view.actionsEl.querySelector("button[data-idle]")?.focus();
    };
    const submit = () => {
      const text = area.value.trim();
      if (!text) { showBanner(gettext("Type a message first.")); return; }
      if (charLength(text) > config.max_chars) { showBanner(say(gettext("Your message is over %(n)s characters."), { n: fmtInt(config.max_chars) })); return; }
      const frame = withMaxTokens({ type: "chat.edit", message: view.messageId, text });
      if (frame) sendAction(frame);
    };
    cancel.addEventListener("click", close);
    save.addEventListener("click", submit);
    area.addEventListener("keydown", (e) => {
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); close(); }
      else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
    });
    view.editor = editor;
    view.textEl.hidden = view.actionsEl.hidden = true;
    view.el.insertBefore(editor, view.textEl);
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
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
    setStatus(gen, position > 0 ? say(gettext("Queued (position %(n)s)"), { n: position }) : gettext("Starting…"), { busy: true });
  }

  function showPrefill(gen, done, total) {
    if (!isNum(total) || total <= 0) { setStatus(gen, gettext("Reading prompt…"), { busy: true }); return; }
    const bar = el("progress", "prefill-progress");
    bar.max = total;
    bar.value = Math.min(done || 0, total);
    bar.setAttribute("aria-label", gettext("Prompt reading progress"));
    setStatus(gen, [bar, say(gettext("Reading prompt %(done)s/%(total)s tokens"), { done: fmtInt(done || 0), total: fmtInt(total) })]);
  }

  function showNotice(gen, message) {
    gen.noticeEl.textContent = message || "";
    gen.noticeEl.hidden = !message;
  }

  // Tokens arrive faster than a person reads (100+ a second from a small model): draw the text
  // so far at most every PAINT_EVERY_MS, in an animation frame, however many tokens came since.
  // Each drawing parses and sanitises the whole answer; on a 2-core box every millisecond the
  // page spends is one the model does not (bench_chat_render measures it).
  function appendToken(gen, text) {
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

  function setText(gen, text) {
    clearTimeout(gen.paintTimer);
    cancelAnimationFrame(gen.frame);
    gen.paintTimer = 0;
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

  /* ---------- Stats line and phase bar ---------- */

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

  /* ---------- Composer state ---------- */

  const activeOwnGen = () => [...gens.values()].find((g) => g.own && ACTIVE.has(g.status)) || null;

  function updateControls() {
    const active = activeOwnGen();
    const connected = Boolean(socket) && socket.open;
    ui.send.disabled = !connected || Boolean(pending) || Boolean(pendingAction) || Boolean(active);
    ui.send.title = connected ? "" : gettext("Waiting for the connection…");
    ui.stop.hidden = !active;
    if (!active) ui.stop.disabled = false;
    updateActionButtons();
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
      showBanner(say(gettext("Max tokens must be a whole number from 1 to %(limit)s, or empty for the default (%(default)s)."), { limit: fmtInt(config.max_tokens_limit), default: config.default_max_tokens }));
      ui.maxTokens.focus();
      return undefined;
    }
    return n;
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
    const maxTokens = readMaxTokens();
    if (maxTokens === undefined) return;
    const frame = { type: "chat.send", conversation: config.conversation, text };
    if (maxTokens !== null) frame.max_tokens = maxTokens;
    if (settingsUnsent && config.conversation == null) frame.settings = sentSettings(config.settings);
    const sentAt = performance.now();
    if (!sendFrame(frame)) { showBanner(gettext("Not connected to the server yet. Try again in a moment.")); return; }
    hideBanner();
    const userView = renderMessage({ role: "user", text });
    pending = { userView, userEl: userView.el, text, sentAt };
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
    setStatus(gen, gettext("Stopping…"), { busy: true });
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
      ui.sidebarToggle.setAttribute("aria-label", open ? gettext("Hide conversations") : gettext("Show conversations"));
    }
    if (open) $("new-conversation").focus();
  }

  /* ---------- The conversation's title: rename in place ---------- */

  function setTitle(title) {
    ui.heading.textContent = title || gettext("New chat");
    document.title = `${title || gettext("Chat")} · HomeAI`;
    if (config.conversation != null) {
      const link = ui.convList && ui.convList.querySelector(`a.conversation-link[data-conversation="${config.conversation}"] .conversation-title`);
      if (link && title) link.textContent = title;
    }
  }

  function startRename() {
    if (config.conversation == null || ui.heading.hidden) return;
    const input = el("input", "title-input");
    input.type = "text";
    input.maxLength = 120;
    input.value = ui.heading.textContent;
    input.setAttribute("aria-label", gettext("Conversation name"));
    let done = false;
    const end = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      if (save && title && title !== ui.heading.textContent) {
        try {
          const data = await fetchJson(`/chat/${config.conversation}/rename/`, { title });
          setTitle(data.title);
        } catch (e) { showBanner(e.message); }
      }
      input.remove();
      ui.heading.hidden = ui.rename.hidden = false;
      ui.rename.focus();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); end(true); }
      else if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); end(false); }
    });
    input.addEventListener("blur", () => end(true));
    ui.heading.hidden = ui.rename.hidden = true;
    ui.heading.after(input);
    input.focus();
    input.select();
  }

  /* ---------- Search: the sidebar's list gives way to the matches while there is a query ---------- */

  let searchSeq = 0;

  async function runSearch() {
    const query = ui.search.value.trim();
    const seq = ++searchSeq;
    if (!query) { showSearch(false); return; }
    showSearch(true);
    ui.searchStatus.textContent = gettext("Searching…");
    let data;
    try { data = await fetchJson(`/chat/search/?q=${encodeURIComponent(query)}`); } catch (e) {
      if (seq === searchSeq) ui.searchStatus.textContent = e.message;
      return;
    }
    if (seq !== searchSeq) return;  // a newer query is on its way
    const results = data.results || [];
    ui.searchStatus.textContent = results.length ? say(ngettext("%(n)s chat found", "%(n)s chats found", results.length), { n: results.length }) : gettext("No chats match.");
    ui.searchItems.replaceChildren(...results.map((r) => {
      const link = el("a", "search-result");
      link.href = `/chat/${r.id}/`;
      link.dataset.conversation = String(r.id);
      link.append(el("span", "search-title", r.title || gettext("Untitled chat")));
      if (r.snippet) link.append(el("span", "search-snippet", r.snippet));
      const item = el("li");
      item.append(link);
      return item;
    }));
  }

  function showSearch(on) {
    ui.searchResults.hidden = !on;
    ui.convNav.hidden = on;
    if (!on) { ui.searchItems.replaceChildren(); ui.searchStatus.textContent = ""; }
  }

  function clearSearch() {
    ui.search.value = "";
    searchSeq++;
    showSearch(false);
  }

  function focusSearch() {
    if (window.matchMedia("(max-width: 820px)").matches) setSidebarOpen(true);
    ui.search.focus();
    ui.search.select();
  }

  /* ---------- Chat settings: a dialog; a summary chip in the header ---------- */

  const SETTING_FIELDS = [
    ["model", "setting-model"], ["system_prompt", "setting-system-prompt"], ["temperature", "setting-temperature"],
    ["top_p", "setting-top-p"], ["max_tokens", "setting-max-tokens"],
  ];
  const NUMBER_FIELDS = SETTING_FIELDS.slice(2);

  // A model's short name where it has one ("smollm2:135m"), else its file name.
  function modelLabel(name) {
    const model = config.models.find((m) => m.name === name);
    return (model && model.alias) || name;
  }

  function fillModelSelect(selected) {
    const fallback = el("option", null, say(gettext("Server default (%(model)s)"), { model: modelLabel(config.defaults.model) }));
    fallback.value = "";
    const options = [fallback];
    const names = config.models.map((m) => m.name);
    if (selected && !names.includes(selected)) names.push(selected);  // a model no longer listed stays visible
    for (const name of names) {
      const model = config.models.find((m) => m.name === name);
      const label = model && model.alias ? `${model.alias} · ${name}` : name;
      const option = el("option", null, model && model.held ? label : say(gettext("%(model)s (no worker holds it now)"), { model: label }));
      option.value = name;
      options.push(option);
    }
    $("setting-model").replaceChildren(...options);
    $("setting-model").value = selected || "";
  }
  const settingsUi = {
    form: $("settings-form"), preset: $("preset-select"), presetDelete: $("preset-delete"), error: $("settings-error"),
    count: $("system-prompt-count"), reset: $("settings-reset"), presetSave: $("preset-save"),
    presetRow: $("save-preset-row"), presetName: $("preset-name"), presetConfirm: $("preset-save-confirm"),
  };
  let dialogOpener = null;

  // Only the settings that are set: a chat.send or chat.settings frame, or a preset to save.
  function sentSettings(values) {
    const out = {};
    for (const [name] of SETTING_FIELDS) {
      const v = values[name];
      out[name] = v === "" || v == null ? null : v;
    }
    return out;
  }

  // The settings a preset holds (the ones it sets).
  const heldNames = (held) => Object.keys(held || {}).filter((k) => held[k] !== null && held[k] !== "");

  // The preset that matches the most of the conversation's settings, if any matches.
  function matchingPreset(values) {
    let best = null;
    for (const p of config.presets) {
      const names = heldNames(p.settings);
      if (names.length && names.every((k) => values[k] === p.settings[k]) && (!best || names.length > heldNames(best.settings).length)) best = p;
    }
    return best;
  }

  // "Precise · System prompt · 512 tokens": a preset's name, then what it does not say.
  function summariseSettings(values) {
    const preset = matchingPreset(values);
    const held = new Set(preset ? heldNames(preset.settings) : []);
    const parts = preset ? [preset.name] : [];
    const say = { model: (v) => modelLabel(v), system_prompt: () => gettext("System prompt"), temperature: (v) => interpolate(gettext("temp %(v)s"), { v }, true), top_p: (v) => interpolate(gettext("top p %(v)s"), { v }, true), max_tokens: (v) => interpolate(gettext("%(n)s tokens"), { n: fmtInt(v) }, true) };
    for (const [name] of SETTING_FIELDS) {
      const v = values[name];
      if (!held.has(name) && v !== null && v !== "" && v !== undefined) parts.push(say[name](v));
    }
    return parts.length ? parts.join(" · ") : gettext("Default settings");
  }

  function showSettingsSummary() {
    const text = summariseSettings(config.settings);
    ui.settingsSummary.textContent = text;
    const values = SETTING_FIELDS.map(([name, id]) => `${document.querySelector(`label[for="${id}"]`).textContent}: ${config.settings[name] === null || config.settings[name] === "" ? gettext("default") : config.settings[name]}`);
    ui.settingsButton.title = `${gettext("Chat settings (Ctrl+Shift+S)")}\n${values.join("\n")}`;
    ui.settingsButton.classList.toggle("is-custom", text !== gettext("Default settings"));
  }

  function fillPresetSelect(selected) {
    const options = [el("option", null, gettext("Custom"))];
    options[0].value = "";
    const groups = [[gettext("Built-in"), config.presets.filter((p) => p.builtin)], [gettext("Yours"), config.presets.filter((p) => !p.builtin)]];
    for (const [label, list] of groups) {
      if (!list.length) continue;
      const group = el("optgroup");
      group.label = label;
      for (const p of list) {
        const option = el("option", null, p.name);
        option.value = String(p.id);
        group.append(option);
      }
      options.push(group);
    }
    settingsUi.preset.replaceChildren(...options);
    settingsUi.preset.value = selected == null ? "" : String(selected);
    settingsUi.presetDelete.hidden = !selectedPreset() || selectedPreset().builtin;
  }

  const selectedPreset = () => config.presets.find((p) => String(p.id) === settingsUi.preset.value) || null;

  function fillSettingsForm(values) {
    fillModelSelect(values.model);
    for (const [name, id] of SETTING_FIELDS.slice(1)) {
      const v = values[name];
      $(id).value = v === null || v === undefined ? "" : String(v);
      const def = config.defaults[name];
      if (name !== "system_prompt") $(id).placeholder = def == null ? "" : say(gettext("%(value)s (default)"), { value: def });
    }
    updatePromptCount();
  }

  function updatePromptCount() {
    const limit = config.system_prompt_chars || 4000;
    const len = charLength($("setting-system-prompt").value);
    settingsUi.count.textContent = say(gettext("%(n)s / %(limit)s characters"), { n: fmtInt(len), limit: fmtInt(limit) });
    settingsUi.count.classList.toggle("over", len > limit);
  }

  // The form's values, checked; null (with the reason shown) when one is out of range.
  function readSettingsForm() {
    const out = { model: $("setting-model").value, system_prompt: $("setting-system-prompt").value.trim() };
    const limit = config.system_prompt_chars || 4000;
    if (charLength(out.system_prompt) > limit) return settingsError(say(gettext("The system prompt is over %(limit)s characters."), { limit: fmtInt(limit) }), "setting-system-prompt");
    const ranges = { temperature: [0, 5, false], top_p: [0, 1, false], max_tokens: [1, config.max_tokens_limit, true] };
    for (const [name, id] of NUMBER_FIELDS) {
      const input = $(id);
      const raw = input.value.trim();
      if (!raw && !input.validity.badInput) { out[name] = null; continue; }
      const n = Number(raw);
      const [low, high, whole] = ranges[name];
      if (!raw || !Number.isFinite(n) || n < low || n > high || (whole && !Number.isInteger(n))) {
        const label = document.querySelector(`label[for="${id}"]`).textContent;
        return settingsError(say(whole ? gettext("%(label)s must be a whole number from %(low)s to %(high)s, or empty for the default.") : gettext("%(label)s must be a number from %(low)s to %(high)s, or empty for the default."), { label, low, high: fmtInt(high) }), id);
      }
      out[name] = n;
    }
    settingsUi.error.hidden = true;
    return out;
  }

  function settingsError(message, focusId) {
    settingsUi.error.textContent = message;
    settingsUi.error.hidden = false;
    if (focusId) $(focusId).focus();
    return null;
  }

  function openDialog(dialog, opener) {
    if (dialog.open) return;
    for (const other of document.querySelectorAll("dialog[open]")) other.close();
    dialogOpener = opener || document.activeElement;
    dialog.showModal();
  }

  function openSettings() {
    fillSettingsForm(config.settings);
    const match = matchingPreset(config.settings);
    fillPresetSelect(match ? match.id : null);
    settingsUi.error.hidden = true;
    settingsUi.presetRow.hidden = true;
    openDialog(ui.settingsDialog, ui.settingsButton);
    $("setting-system-prompt").focus();
  }

  function onPresetPicked() {
    const preset = selectedPreset();
    settingsUi.presetDelete.hidden = !preset || preset.builtin;
    if (!preset) return;
    // A preset sets the values it holds; the others go back to the defaults (but the model:
    // a preset without one keeps the model chosen).
    const values = { model: $("setting-model").value, system_prompt: "", temperature: null, top_p: null, max_tokens: null };
    for (const [name] of SETTING_FIELDS) if (preset.settings[name] != null) values[name] = preset.settings[name];
    fillSettingsForm(values);
  }

  function saveSettings(event) {
    event.preventDefault();
    const values = readSettingsForm();
    if (!values) return;
    if (config.conversation == null) {
      // A new chat has no id yet: its first chat.send carries the settings.
      config.settings = Object.assign({}, values);
      settingsUnsent = true;
      showSettingsSummary();
    } else if (!sendFrame({ type: "chat.settings", conversation: config.conversation, settings: sentSettings(values) })) {
      settingsError(gettext("Not connected to the server yet. Try again in a moment."));
      return;
    }
    ui.settingsDialog.close();
  }

  function onSettings(msg) {
    if (msg.conversation !== config.conversation) return;
    config.settings = Object.assign({}, config.settings, msg.settings);
    showSettingsSummary();
  }

  async function savePreset() {
    const name = settingsUi.presetName.value.trim();
    if (!name) { settingsError(gettext("Give the preset a name."), "preset-name"); return; }
    const values = readSettingsForm();
    if (!values) return;
    try {
      const data = await fetchJson("/chat/presets/", { name, settings: sentSettings(values) });
      config.presets.push(data.preset);
      fillPresetSelect(data.preset.id);
      settingsUi.presetRow.hidden = true;
      settingsUi.presetName.value = "";
      settingsUi.preset.focus();
    } catch (e) { settingsError(e.message, "preset-name"); }
  }

  async function deletePreset() {
    const preset = selectedPreset();
    if (!preset || preset.builtin || !window.confirm(say(gettext("Delete the preset %(name)s?"), { name: preset.name }))) return;
    try {
      await fetchJson(`/chat/presets/${preset.id}/delete/`, {});
      config.presets = config.presets.filter((p) => p !== preset);
      fillPresetSelect(null);
      showSettingsSummary();
      settingsUi.preset.focus();
    } catch (e) { settingsError(e.message); }
  }

  function initSettings() {
    showSettingsSummary();
    ui.settingsButton.addEventListener("click", openSettings);
    settingsUi.form.addEventListener("submit", saveSettings);
    settingsUi.preset.addEventListener("change", onPresetPicked);
    settingsUi.presetDelete.addEventListener("click", deletePreset);
    $("setting-system-prompt").maxLength = config.system_prompt_chars || 4000;
    $("setting-max-tokens").max = String(config.max_tokens_limit);
    $("setting-system-prompt").addEventListener("input", updatePromptCount);
    settingsUi.form.addEventListener("input", (e) => { if (e.target !== settingsUi.preset && e.target !== settingsUi.presetName) settingsUi.preset.value = ""; });
    settingsUi.reset.addEventListener("click", () => { fillSettingsForm({}); settingsUi.preset.value = ""; settingsUi.presetDelete.hidden = true; });
    settingsUi.presetSave.addEventListener("click", () => { settingsUi.presetRow.hidden = false; settingsUi.presetName.focus(); });
    settingsUi.presetConfirm.addEventListener("click", savePreset);
    settingsUi.presetName.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); savePreset(); } });
  }

  /* ---------- Dialogs and keyboard shortcuts ---------- */

  const isTextField = (node) => node instanceof HTMLElement && (node.isContentEditable || node.matches("input, textarea, select"));
  const lastAnswer = () => [...ui.messages.querySelectorAll(".message.assistant")].pop() || null;
  const viewOf = (node) => node && [...gens.values()].find((g) => g.el === node);

  function initDialogs() {
    for (const dialog of [ui.settingsDialog, ui.shortcutsDialog]) {
      for (const button of dialog.querySelectorAll("[data-close]")) button.addEventListener("click", () => dialog.close());
      // Focus goes back to what opened the dialog.
      dialog.addEventListener("close", () => { if (dialogOpener && dialogOpener.isConnected) dialogOpener.focus(); });
      // A click on the backdrop (the dialog element itself, outside its body) closes it.
      dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });
    }
    ui.shortcutsButton.addEventListener("click", () => openDialog(ui.shortcutsDialog, ui.shortcutsButton));
  }

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

  /* ---------- Server events ---------- */

  function onQueued(msg) {
    let gen = gens.get(msg.generation);
    if (!gen && pending) {
      // The reply to our own chat.send.
      gen = renderMessage({ role: "assistant", id: msg.message, generation: { id: msg.generation } }, true);
      gen.sentAt = pending.sentAt;
      setMessageId(pending.userView, msg.user_message, null);
      pending = null;
      if (config.conversation == null && msg.conversation != null) {
        config.conversation = msg.conversation;
        settingsUnsent = false;
        history.replaceState(null, "", `/chat/${msg.conversation}/`);
        setTitle(msg.conversation_title);
        if (ui.rename) ui.rename.hidden = false;
      }
      if (msg.conversation != null) touchConversation(msg.conversation, msg.conversation_title);
    } else if (!gen) {
      // Another tab of this user; show it only if it belongs to the conversation on screen.
      if (config.conversation == null || msg.conversation !== config.conversation) return;
      gen = renderMessage({ role: "assistant", generation: { id: msg.generation } }, false);
    }
    if (pendingAction && gen.own) {
      // The answer to our regenerate or edit: its branch came first and drew it.
      gen.sentAt = pendingAction.sentAt;
      pendingAction = null;
    }
    showQueued(gen, msg.position);
    updateControls();
  }

  // The branch now shown (after a regenerate, an edit or a switch, from this tab or another).
  function onBranch(msg) {
    if (config.conversation == null || msg.conversation !== config.conversation) return;
    if (pendingAction) pendingAction = { sentAt: pendingAction.sentAt, drawn: true };
    for (const gen of gens.values()) cancelAnimationFrame(gen.frame);
    gens.clear();
    ui.messages.replaceChildren();
    renderHistory(msg.messages || []);
    // A switch ends here; a regenerate or edit waits for its generation.queued.
    const last = msg.messages && msg.messages[msg.messages.length - 1];
    if (!last || !last.generation || !ACTIVE.has(last.generation.status)) pendingAction = null;
    if (msg.conversation_title) setTitle(msg.conversation_title);
    updateControls();
  }

  function onPhase(msg) {
    const gen = gens.get(msg.generation);
    if (!gen || FINISHED.has(gen.status)) return;
    if (msg.phase !== "queued" && msg.phase !== "notice") gen.status = "running";
    switch (msg.phase) {
      case "queued": showQueued(gen, msg.position); break;
      case "load":
        if (msg.state === "start") setStatus(gen, gettext("Loading model…"), { busy: true });
        else setStatus(gen, gettext("Reading prompt…"), { busy: true });
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
        if (typeof msg.text === "string") setText(gen, msg.text);  // what was saved: what a reload shows
        finish(gen, msg.code === "interrupted" ? "interrupted" : "error", null, msg.message);
      }
      return;
    }
    pendingAction = null;
    if (pending) {
      // The server refused our message: take it back out and give the text back to edit.
      pending.userEl.remove();
      if (!ui.input.value) { ui.input.value = pending.text; autoResize(); updateCharCount(); }
      pending = null;
      if (!ui.messages.querySelector(".message")) showEmptyState();
    }
    showBanner(msg.message || gettext("The server could not handle that request."));
    updateControls();
  }

  // Where an answer that may have missed events is now (the reply to chat.sync): its text as the
  // database has it, which is never behind what was drawn unless tokens arrived since the save.
  function onSync(msg) {
    const gen = gens.get(msg.generation);
    if (!gen || FINISHED.has(gen.status)) return;
    if (msg.status === "running") {
      gen.status = "running";
      gen.el.classList.add("streaming");
      if (gen.statusEl.classList.contains("warning")) clearStatus(gen);
    }
    if (typeof msg.text === "string" && msg.text.length > gen.text.length) setText(gen, msg.text);
  }

  const HANDLERS = {
    "generation.queued": onQueued, "generation.phase": onPhase, "generation.token": onToken,
    "generation.done": onDone, "generation.error": onError, "generation.sync": onSync,
    "conversation.branch": onBranch, "conversation.settings": onSettings,
  };

  // Events are not stored: those sent while the socket or the server's message bus was down are
  // gone. So the page asks where its unfinished answers are (chat.sync) after every reconnect,
  // and whenever they have all been silent for SYNC_AFTER_MS: a done it missed then arrives from
  // the database, and a running answer's text catches up.
  let lastEventAt = performance.now();
  let syncTimer = 0;

  function unfinishedIds() {
    return [...gens.values()].filter((g) => ACTIVE.has(g.status)).map((g) => g.id).slice(-100);
  }

  function requestSync() {
    const ids = unfinishedIds();
    if (ids.length) sendFrame({ type: "chat.sync", generations: ids });
    lastEventAt = performance.now();
  }

  function watchForSilence() {
    if (!unfinishedIds().length) { syncTimer = 0; return; }
    if (performance.now() - lastEventAt >= SYNC_AFTER_MS) requestSync();
    syncTimer = setTimeout(watchForSilence, SYNC_AFTER_MS / 2);
  }

  function handleEvent(handler) {
    return (msg) => {
      lastEventAt = performance.now();
      handler(msg);
      if (!syncTimer) syncTimer = setTimeout(watchForSilence, SYNC_AFTER_MS / 2);
    };
  }
  for (const type of Object.keys(HANDLERS)) HANDLERS[type] = handleEvent(HANDLERS[type]);

  /* ---------- WebSocket ---------- */

  const sendFrame = (frame) => Boolean(socket) && socket.send(frame);

  function onConnection(state, { reconnected }) {
    if (reconnected) requestSync();
    if (state !== "connected") pendingAction = null;
    if (state !== "connected" && pending) {
      pending.userEl.classList.add("unconfirmed");
      pending = null;
      showBanner(gettext("The connection dropped before your message was confirmed. Reload to check whether it was sent."), false);
    }
    updateControls();
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
    if (g.status === "queued") setStatus(gen, gettext("Queued"), { busy: true });
    else if (g.status === "running") {
      if (gen.text) gen.el.classList.add("streaming");
      else setStatus(gen, gettext("Generating…"), { busy: true });
    } else finish(gen, g.status, g.metrics, g.error);
  }

  function init() {
    ui.maxTokens.min = "1";
    ui.maxTokens.max = String(config.max_tokens_limit);
    ui.maxTokens.placeholder = String(config.default_max_tokens);
    renderHistory(readJson("history-data") || []);
    // The first drawing compiles markdown-it, DOMPurify and highlight.js: do it while the person
    // types, not while the model writes their first answer.
    setTimeout(() => renderMarkdown(document.createElement("div"), WARM_UP), 0);

    ui.form.addEventListener("submit", onSubmit);
    ui.input.addEventListener("keydown", onKeyDown);
    ui.input.addEventListener("input", () => { autoResize(); updateCharCount(); });
    ui.stop.addEventListener("click", onStop);
    ui.banner.title = gettext("Click to dismiss");
    ui.banner.addEventListener("click", hideBanner);
    if (ui.sidebarToggle) {
      ui.sidebarToggle.addEventListener("click", () => setSidebarOpen(!ui.layout.classList.contains("sidebar-open")));
    }
    if (ui.backdrop) ui.backdrop.addEventListener("click", () => setSidebarOpen(false));
    document.addEventListener("keydown", onShortcut);
    ui.search.addEventListener("input", debounce(runSearch, 250));
    ui.search.addEventListener("search", runSearch);  // the field's own clear button
    if (ui.rename) ui.rename.addEventListener("click", startRename);
    ui.heading.addEventListener("dblclick", startRename);
    initSettings();
    initDialogs();
    for (const form of document.querySelectorAll("form[data-confirm]")) {
      form.addEventListener("submit", (e) => { if (!window.confirm(form.dataset.confirm)) e.preventDefault(); });
    }
    autoResize();
    socket = new ReconnectingSocket(config.ws_path, { handlers: HANDLERS, status: ui.status, onState: onConnection, maxDelayMs: 5000 });
    updateControls();
    socket.start();
  }

  init();
})();
