/* HomeAI's shared page helpers, as one namespace: window.HomeAI.
 * Loaded by base.html before every page's own script (both deferred, so in order). Number formats
 * match dashboard/latency/text.py, so a value reads the same in a server sentence and on the page. */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);

  // The parsed contents of a json_script element; null when it is missing or unreadable.
  function readJson(id) {
    const node = $(id);
    try { return node ? JSON.parse(node.textContent) : null; } catch (e) { return null; }
  }

  // An element with a class and text. Text is only ever set through textContent, never as HTML.
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text != null) node.textContent = text;
    return node;
  }

  function setText(id, text) {
    const node = $(id);
    if (node) node.textContent = text;
  }

  /* ---------- Numbers ---------- */

  const isNum = (v) => typeof v === "number" && Number.isFinite(v);

  // Numbers in the page's language (<html lang>, set by the server): "1,234.5", "1.234,5", ...
  const LANG = document.documentElement.lang || undefined;
  const formats = new Map();
  function fmtNum(n, digits = 0) {
    if (!formats.has(digits)) {
      formats.set(digits, new Intl.NumberFormat(LANG, { minimumFractionDigits: digits, maximumFractionDigits: digits }));
    }
    return formats.get(digits).format(n);
  }
  const say = (text, values) => interpolate(text, values, true);  // say(gettext("… %(name)s …"), {name})

  // A duration: 0.1 ms steps below 10 ms, whole ms below a second, then seconds.
  function fmtMs(ms) {
    if (!isNum(ms)) return "–";
    if (ms === 0) return say(gettext("%(n)s ms"), { n: fmtNum(0) });
    const size = Math.abs(ms);
    if (size < 10) return say(gettext("%(n)s ms"), { n: fmtNum(ms, 1) });
    if (size < 1000) return say(gettext("%(n)s ms"), { n: fmtNum(ms) });
    if (size < 10000) return say(gettext("%(n)s s"), { n: fmtNum(ms / 1000, 2) });
    return say(gettext("%(n)s s"), { n: fmtNum(ms / 1000, 1) });
  }

  const fmtRate = (r) => (!isNum(r) ? "–" : r >= 100 ? fmtNum(r) : fmtNum(r, 1));
  const fmtInt = (n) => (isNum(n) ? fmtNum(n) : "–");

  function fmtBytes(n) {
    if (!isNum(n)) return "–";
    for (const [unit, size] of [["GB", 1e9], ["MB", 1e6], ["kB", 1e3]]) {
      if (n >= size) return `${fmtNum(n / size, n >= 100 * size ? 0 : 1)} ${unit}`;
    }
    return `${fmtNum(n)} B`;
  }

  // A time left: whole seconds below 90 s, minutes below 90 min, then hours.
  function fmtDuration(s) {
    if (!Number.isFinite(s) || s < 0) return "–";
    if (s < 90) return say(gettext("%(n)s s"), { n: fmtNum(Math.ceil(s)) });
    if (s < 5400) return say(gettext("%(n)s min"), { n: fmtNum(Math.ceil(s / 60)) });
    return say(gettext("%(n)s h"), { n: fmtNum(s / 3600, 1) });
  }

  /* rateMeter(): a function that takes successive readings of a growing count (bytes done) and
   * returns its rate per second, each reading's rate since the one before averaged in (0.3 of the
   * newest), so bursts and pauses do not swing it; NaN until a second reading. */
  function rateMeter() {
    let last = null;
    let rate = NaN;
    return (count) => {
      const now = performance.now() / 1000;
      if (last && now > last.t && count >= last.count) {
        const instant = (count - last.count) / (now - last.t);
        rate = Number.isFinite(rate) ? 0.7 * rate + 0.3 * instant : instant;
      }
      last = { t: now, count };
      return rate;
    };
  }

  function fmtCount(n) {
    if (!isNum(n)) return "–";
    if (n >= 1e9) return say(gettext("%(n)s billion"), { n: fmtNum(n / 1e9, n >= 1e11 ? 0 : 1) });
    if (n >= 1e6) return say(gettext("%(n)s million"), { n: fmtNum(n / 1e6, n >= 1e8 ? 0 : 1) });
    return fmtInt(n);
  }

  /* ---------- Clipboard ---------- */

  // navigator.clipboard exists only in a secure context (https, localhost). HomeAI is often served
  // over plain http on a LAN address, so the old path, a selected textarea and execCommand("copy"),
  // stays as the fallback. Resolves to whether the text reached the clipboard.
  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return true;
      } catch (e) { /* denied or unfocused: try the fallback */ }
    }
    const area = el("textarea", "clipboard-helper");
    area.value = text;
    area.setAttribute("readonly", "");  // no on-screen keyboard on phones
    const focused = document.activeElement;
    document.body.append(area);
    area.select();
    area.setSelectionRange(0, text.length);  // iOS selects nothing with select() alone
    let copied = false;
    try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
    area.remove();
    if (focused && typeof focused.focus === "function") focused.focus({ preventScroll: true });
    return copied;
  }

  // A button that copies getText() when clicked and says "Copied" (or "Copy failed") for a moment.
  function copyButton(label, getText, title) {
    const button = el("button", "copy-button", label);
    button.type = "button";
    if (title) button.title = title;
    button.setAttribute("aria-live", "polite");  // the feedback is read out where the focus is
    let timer = null;
    button.addEventListener("click", async () => {
      const copied = await copyText(getText());
      button.textContent = copied ? gettext("Copied") : gettext("Copy failed");
      button.dataset.copied = String(copied);
      clearTimeout(timer);
      timer = setTimeout(() => {
        button.textContent = label;
        delete button.dataset.copied;
      }, 1600);
    });
    return button;
  }

  /* ---------- JSON requests ---------- */

  // The page's CSRF token: a {% csrf_token %} field on the page, else Django's cookie.
  function csrfToken() {
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) return field.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  /* fetchJson(url, body?): GET, or POST body as JSON with the CSRF token. Resolves to the parsed
   * answer; rejects with an Error whose message is the server's sentence ({code, message, field}). */
  async function fetchJson(url, body) {
    const init = { credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== undefined) {
      Object.assign(init, { method: "POST", body: JSON.stringify(body) });
      Object.assign(init.headers, { "Content-Type": "application/json", "X-CSRFToken": csrfToken() });
    }
    let response;
    try { response = await fetch(url, init); } catch (e) { throw new Error(gettext("The server could not be reached.")); }
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const error = new Error((data && data.message) || say(gettext("The server answered %(status)s."), { status: response.status }));
      error.field = data && data.field;
      throw error;
    }
    return data;
  }

  // fn, called once calls have stopped for waitMs.
  function debounce(fn, waitMs) {
    let timer = null;
    return (...args) => {
      clearTimeout(timer);
      timer = setTimeout(() => fn(...args), waitMs);
    };
  }

  /* ---------- A WebSocket that reconnects ---------- */

  const STATE_LABELS = { connecting: gettext("Connecting…"), connected: gettext("Connected"), reconnecting: gettext("Reconnecting…") };

  /* new ReconnectingSocket(path, options).start(): a JSON WebSocket to this host's `path` that
   * reconnects with exponential backoff (minDelayMs doubling up to maxDelayMs), and at once when the
   * browser comes back online.
   *   handlers: {type: fn(msg)}   each incoming frame goes to the handler of its "type"; others are dropped
   *   status:   element            its data-state and text follow the connection: connecting, connected, reconnecting
   *   labels:   {state: text}      the status texts, over STATE_LABELS
   *   onState:  fn(state, {reconnected})  after every change; reconnected: an open that follows a lost connection
   * send(frame) sends JSON and says whether the socket was open; `open` says whether it is now. */
  const SIGNED_OUT = 4401;  // dashboard.sockets: the server closes a socket whose session signed out
  const TOO_MANY = 4429;  // dashboard.sockets: this person has as many sockets open as they may

  class ReconnectingSocket {
    constructor(path, { handlers = {}, status = null, labels = {}, onState = null, minDelayMs = 1000, maxDelayMs = 10000 } = {}) {
      Object.assign(this, { path, handlers, status, onState, minDelayMs, maxDelayMs });
      this.labels = Object.assign({}, STATE_LABELS, labels);
      this.socket = null;
      this.everConnected = false;
      this.delay = minDelayMs;
      this.retryTimer = null;
    }

    get open() { return Boolean(this.socket) && this.socket.readyState === WebSocket.OPEN; }

    start() {
      // Back online after sleep or Wi-Fi loss: retry now instead of waiting out the backoff.
      window.addEventListener("online", () => { if (this.retryTimer) this.connect(); });
      this.connect();
      return this;
    }

    connect() {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
      const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + this.path;
      const socket = new WebSocket(url);
      this.socket = socket;
      socket.addEventListener("open", () => {
        this.delay = this.minDelayMs;
        const reconnected = this.everConnected;
        this.everConnected = true;
        this.setState("connected", { reconnected });
      });
      socket.addEventListener("message", (event) => this.dispatch(event.data));
      socket.addEventListener("close", (event) => {
        if (this.socket !== socket) return;
        this.socket = null;
        if (event.code === SIGNED_OUT) {  // this session signed out (here or in another tab): sign in again
          location.assign("/accounts/login/?next=" + encodeURIComponent(location.pathname));
          return;
        }
        this.setState(this.everConnected ? "reconnecting" : "connecting", { reconnected: false });
        if (event.code === TOO_MANY) this.delay = this.maxDelayMs;  // slowly: another tab may close
        this.retryTimer = setTimeout(() => this.connect(), this.delay);
        this.delay = Math.min(this.delay * 2, this.maxDelayMs);
      });
    }

    dispatch(raw) {
      let msg;
      try { msg = JSON.parse(raw); } catch (e) { return; }
      const handler = msg && this.handlers[msg.type];
      if (!handler) return;
      try { handler(msg); } catch (e) { console.error("HomeAI: handling a socket event failed", msg.type, e); }
    }

    setState(state, detail) {
      if (this.status) {
        this.status.dataset.state = state;
        this.status.textContent = this.labels[state];
      }
      if (this.onState) this.onState(state, detail);
    }

    send(frame) {
      if (!this.open) return false;
      this.socket.send(JSON.stringify(frame));
      return true;
    }
  }

  // A read-only field worth copying whole (a new API key) selects itself when focused. Here rather
  // than in an onfocus attribute: the Content-Security-Policy allows no inline script.
  for (const input of document.querySelectorAll("[data-select-on-focus]")) {
    input.addEventListener("focus", () => input.select());
  }

  // The top bar's menu is a drop-down popover only below 720 px (app.css): one left open while a
  // phone turns to landscape would hang over the bar, so it closes when the screen widens.
  const menu = $("topbar-menu");
  if (menu && typeof menu.hidePopover === "function") {
    window.matchMedia("(min-width: 721px)").addEventListener("change", (e) => {
      if (e.matches && menu.matches(":popover-open")) menu.hidePopover();
    });
  }

  // The installable app's service worker (templates/offline/sw.js), named by base.html's manifest
  // link. Browsers allow one on https and on localhost only; elsewhere the site works as before.
  const manifest = document.querySelector("link[rel=manifest][data-service-worker]");
  if (manifest && "serviceWorker" in navigator) {
    navigator.serviceWorker.register(manifest.dataset.serviceWorker).catch((e) => console.warn("HomeAI: no service worker", e));
  }

  window.HomeAI = Object.freeze({
    $, el, readJson, setText, isNum, fmtNum, say, fmtMs, fmtRate, fmtInt, fmtBytes, fmtCount, fmtDuration, rateMeter,
    copyText, copyButton, fetchJson, debounce, ReconnectingSocket,
  });
})();
