/* A collection's page: its indexing, live from the collection's socket (data-ws-path; the job as
 * it stands on connecting, then each update its worker publishes). The line under "Indexing" is
 * redrawn in place: the status, files and bytes done, the rate and time left from successive
 * updates, the file being read, the files not read, and a bar of files done. When a job starts
 * or ends while the page is open, the owner's buttons and the files table are read again from
 * the page's own address (a job that ended lists the files it indexed). Without script the
 * server's line stands and the page reloads itself while a job runs. */
(function () {
  "use strict";
  const { $, el, readJson, setText, fmtBytes, fmtInt, fmtDuration, rateMeter, say, ReconnectingSocket } = window.HomeAI;
  const root = $("index-live");
  if (!root) return;

  const ACTIVE = new Set(["queued", "running"]);
  const NEVER = { job: null, status: "never" };
  const PARTS = ["index-actions", "files"];  // what the server draws from whether a job is under way
  let shown = null;       // the state on show
  let meter = null;       // the shown job's rate of bytes
  let drawnActive = false; // whether the server drew PARTS with a job under way
  let reading = null;     // the page being read again for PARTS

  function statusText(state) {
    switch (state.status) {
      case "never": return gettext("Not indexed yet.");
      case "queued": return gettext("Waiting for a worker.");
      case "running": return gettext("Running");
      case "done": return gettext("Done");
      case "cancelled": return gettext("Cancelled");
      case "interrupted": return gettext("Interrupted: its worker stopped. Index again to go on.");
      default: return `${gettext("Stopped on an error")}: ${state.message || ""}`;
    }
  }

  // The figures after the status, as the server writes them, with the rate and time left while it runs.
  function facts(state) {
    if (state.job == null) return [];
    const parts = [
      say(gettext("%(done)s of %(total)s files"), { done: fmtInt(state.files_done), total: fmtInt(state.files_total) }),
      say(gettext("%(done)s of %(total)s"), { done: fmtBytes(state.bytes_done), total: fmtBytes(state.bytes_total) }),
    ];
    const rate = meter(state.bytes_done);
    if (state.status === "running" && rate > 0) {
      parts.push(say(gettext("%(rate)s/s"), { rate: fmtBytes(rate) }));
      parts.push(say(gettext("%(time)s left"), { time: fmtDuration((state.bytes_total - state.bytes_done) / rate) }));
    }
    parts.push(
      say(gettext("%(n)s read and embedded"), { n: fmtInt(state.files_embedded) }),
      say(gettext("%(n)s gone and forgotten"), { n: fmtInt(state.files_removed) }),
      say(gettext("%(n)s chunks"), { n: fmtInt(state.chunks) }),
    );
    if (state.current_file) parts.push(say(gettext("reading %(name)s"), { name: state.current_file }));
    return parts;
  }

  function drawBar(state) {
    const bar = $("index-bar");
    bar.hidden = state.job == null;
    if (state.files_total > 0) {
      bar.max = state.files_total;
      bar.value = state.files_done;
    } else if (ACTIVE.has(state.status)) {
      bar.removeAttribute("value");  // indeterminate until the folder's files are counted
    } else {
      bar.max = 1;
      bar.value = 1;
    }
  }

  function drawErrors(errors) {
    const list = $("index-errors");
    list.replaceChildren(...errors.map((e) => {
      const item = el("li");
      item.append(el("code", null, e.path), `: ${e.message}`);
      return item;
    }));
    list.hidden = !errors.length;
  }

  function draw(state) {
    $("index-progress").dataset.status = state.status;
    $("index-progress").dataset.job = state.job == null ? "" : String(state.job);
    setText("index-status", statusText(state));
    setText("index-facts", facts(state).map((part) => ` · ${part}`).join(""));
    drawBar(state);
    drawErrors(state.errors || []);
  }

  // News older than what is shown: the state sent on connecting can overtake an update published
  // just before it. A newer job replaces an older one, and a job's status and files only go forward.
  function isOlder(state) {
    if (!shown || shown.job == null) return false;
    if (state.job == null || state.job !== shown.job) return state.job == null || state.job < shown.job;
    const stage = (s) => (s.status === "queued" ? 0 : s.status === "running" ? 1 : 2);
    if (stage(state) !== stage(shown)) return stage(state) < stage(shown);
    return state.files_done < shown.files_done;
  }

  function onProgress(state) {
    if (isOlder(state)) return;
    if (!shown || state.job !== shown.job) meter = rateMeter();
    shown = state;
    draw(state);
    const active = ACTIVE.has(state.status);
    if (active !== drawnActive) {
      drawnActive = active;
      readParts();
    }
  }

  // The owner's buttons (Cancel while a job is under way) and the files table, as the server draws
  // them now; a page that cannot be read this way is reloaded instead.
  async function readParts() {
    if (reading) await reading.catch(() => {});
    reading = (async () => {
      const response = await fetch(location.pathname, { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!response.ok) throw new Error(String(response.status));
      const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
      for (const id of PARTS) {
        const part = fresh.getElementById(id);
        if ($(id) && part) $(id).replaceWith(document.adoptNode(part));
      }
    })();
    try {
      await reading;
    } catch (e) {
      console.warn("HomeAI: the collection's files could not be read again", e);
      location.reload();
    }
  }

  const initial = readJson("index-state") || NEVER;
  drawnActive = ACTIVE.has(initial.status);
  onProgress(initial);
  const status = $("index-connection");
  status.hidden = false;
  new ReconnectingSocket(root.dataset.wsPath, { handlers: { "index.progress": onProgress }, status, labels: { connected: gettext("Live") } }).start();
})();
