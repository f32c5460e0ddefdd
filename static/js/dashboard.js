/* HomeAI latency dashboard: draws the server's Plotly figures (dashboard/latency/figures.py) and keeps
 * them live from /ws/dashboard/. Every [data-chart="name"] element shows the payload's figures[name]:
 * a new chart needs no code here. Only the charts the feed grows (timeline, throughput, steps) have
 * their own. The feed carries metrics only; the one piece of text on this page, a prompt preview the
 * server already limited to its owner and admins, is set through textContent. */
(function () {
  "use strict";

  const { $, el, readJson, setText, isNum, fmtNum, say, fmtMs, fmtRate, fmtInt, fmtBytes, fmtCount, ReconnectingSocket } = window.HomeAI;
  const root = $("dashboard");
  const TABLE_ROWS = 50;
  const REFRESH_DELAY_MS = 800;
  const PLOT_CONFIG = {
    displaylogo: false, responsive: true,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "toggleSpikelines", "hoverClosestCartesian", "hoverCompareCartesian"],
  };

  if (!window.Plotly) return;
  const charts = {};  // name -> element, for every [data-chart] on the page
  for (const div of document.querySelectorAll("[data-chart]")) charts[div.dataset.chart] = div;
  if (!root) {
    // A request's detail page: its figures, drawn once.
    const figures = readJson("chart-figures") || {};
    for (const name of Object.keys(charts)) draw(name, figures[name]);
    return;
  }

  // What this script reads from the server rather than mirrors: the timeline's phases, cut and
  // sizes (figures.timeline_config), and which statuses are still in flight.
  const config = readJson("dashboard-config") || {};
  const timeline = config.timeline;
  const ACTIVE = new Set(config.active);
  let data = readJson("dashboard-data") || {};
  const rows = new Map();   // id -> row of a request the server or the feed reported finished (or active at load)
  const live = new Map();   // id -> {row, starts: {phase: epoch s}, phase}: requests in flight, from the feed
  const ended = new Map();  // id -> the live entry of a request the feed saw end, until the server's figure has it
  let selected = data.selected || null;
  let pinned = false;       // the reader chose a request: keep it instead of following the newest
  let refreshTimer = null;
  let refreshing = null;

  /* ---------- Time ---------- */

  // Wall-clock strings in the server's time zone, exactly as figures.wall() writes them.
  const wall = (t) => new Date((t + (data.utc_offset_s || 0)) * 1000).toISOString().slice(0, 23).replace("T", " ");
  const clock = (t) => wall(t).slice(11, 19);

  /* ---------- Plotly ---------- */

  function cssVar(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  // Server figures carry light-theme text colours; the page's CSS variables know the real theme.
  function themed(layout, name) {
    const l = Object.assign({}, layout);
    l.font = Object.assign({}, layout.font, { color: cssVar("--text-muted", "#6a717d") });
    l.hoverlabel = {
      bgcolor: cssVar("--surface", "#fff"), bordercolor: cssVar("--border-strong", "#ccc"),
      font: { color: cssVar("--text", "#1d2025"), size: 12 },
    };
    l.uirevision = name;  // keep the reader's zoom and hidden traces across live redraws
    return l;
  }

  function draw(name, fig) {
    const div = charts[name];
    if (!div || !fig) return;
    const empty = !figureHasData(fig);
    div.classList.toggle("is-empty", empty);
    const layout = themed(fig.layout || {}, name);
    // Axes around nothing (all ticks at 00:00:00) only distract from the "no data" note.
    for (const key of axisKeys(layout)) layout[key] = Object.assign({}, layout[key], { visible: !empty });
    if (empty) Object.assign(layout, { shapes: [], annotations: [] });
    Plotly.react(div, fig.data, layout, PLOT_CONFIG);
  }

  function axisKeys(layout) { return Object.keys(layout).filter((k) => /^[xy]axis\d*$/.test(k)); }

  // A chart that was empty gets its first points from the feed: bring its axes back.
  function markFilled(div) {
    if (!div.classList.contains("is-empty")) return;
    div.classList.remove("is-empty");
    const update = {};
    for (const key of axisKeys(div.layout)) update[`${key}.visible`] = true;
    Plotly.relayout(div, update);
  }

  function figureHasData(fig) {
    return (fig.data || []).some((t) => Array.isArray(t.x) && t.x.some((v) => v !== null && v !== undefined));
  }

  /* ---------- Timeline: the server's bars for finished requests, growing bars from the feed ---------- */

  const rowLabel = (row) => timeline.row_label.replace("{id}", row.id).replace("{username}", row.username || "").trim();

  function allRows() {
    const all = new Map(rows);
    for (const [id, entry] of live) all.set(id, entry.row);
    return all;
  }

  // The server's cut (stats.timeline_rows): the newest rows that still share a readable time axis.
  function timelineRows() {
    const newest = [...allRows().values()].sort((a, b) => b.t_arrive - a.t_arrive).slice(0, timeline.rows);
    return newest.length ? newest.filter((r) => r.t_arrive >= newest[0].t_arrive - timeline.window_s) : [];
  }

  // A request the feed follows: each phase from its start to the next one's, the last to now (or its end).
  function liveSegments(entry, now) {
    const order = timeline.phases.filter((p) => isNum(entry.starts[p]));
    return order.map((phase, i) => {
      const start = entry.starts[phase];
      const end = i + 1 < order.length ? entry.starts[order[i + 1]] : Math.max(entry.end ?? now, start);
      return [phase, start, (end - start) * 1000];
    });
  }

  // The server's figure, less the rows no longer shown, plus a growing bar for each request in flight.
  function timelineFigure() {
    const base = (data.figures && data.figures.timeline) || { data: [], layout: {} };
    const shown = timelineRows();
    const fromServer = new Set(shown.map((r) => r.id).filter((id) => !live.has(id) && !ended.has(id)));
    const traces = base.data.map((trace) => {
      const keep = [];
      (trace.customdata || []).forEach((id, i) => { if (fromServer.has(id)) keep.push(i); });
      const pick = (key) => keep.map((i) => trace[key][i]);
      return Object.assign({}, trace, { y: pick("y"), x: pick("x"), base: pick("base"), customdata: pick("customdata") });
    });
    const byPhase = new Map(traces.map((trace) => [trace.meta, trace]));
    const now = Date.now() / 1000;
    for (const row of shown) {
      const entry = live.get(row.id) || ended.get(row.id);
      for (const [phase, start, ms] of entry ? liveSegments(entry, now) : []) {
        const trace = byPhase.get(phase);
        if (!trace) continue;
        trace.y.push(rowLabel(row));
        trace.x.push(Math.round(ms * 1000) / 1000);
        trace.base.push(wall(start));
        trace.customdata.push(row.id);
      }
    }
    const size = timeline.height;
    const layout = Object.assign({}, base.layout, { height: Math.max(size.min, size.base + size.per_row * shown.length) });
    layout.yaxis = Object.assign({}, base.layout.yaxis, { categoryarray: shown.map(rowLabel) });
    return { data: traces, layout };
  }

  function renderTimeline() { draw("timeline", timelineFigure()); }

  /* ---------- Feed events ---------- */

  function matchesFilter(ev) {
    const model = data.filters && data.filters.model;
    return !model || ev.model === model;
  }

  function baseRow(ev) {
    return {
      id: ev.generation, user_id: ev.user_id, username: ev.username, client: ev.client, model: ev.model,
      status: ev.status, t_arrive: ev.t_arrive, t_end: null, text_visible: null, prompt_preview: null,
    };
  }

  function onUpdate(ev) {
    if (!matchesFilter(ev)) return;
    let entry = live.get(ev.generation);
    if (!entry) {
      const known = rows.get(ev.generation);
      if (known && !ACTIVE.has(known.status)) return;  // a late update after the request ended
      entry = { row: Object.assign(baseRow(ev), known ? { prompt_preview: known.prompt_preview, text_visible: known.text_visible } : {}), starts: { queue: ev.t_arrive } };
      live.set(ev.generation, entry);
      rows.delete(ev.generation);
    }
    const phase = ev.phase === "queued" ? "queue" : ev.phase;
    if (phase === "queue" && entry.phase && entry.phase !== "queue") return;  // the web's "queued" came after the worker's news
    if (timeline.phases.includes(phase) && !isNum(entry.starts[phase])) entry.starts[phase] = phase === "queue" ? ev.t_arrive : ev.t;
    entry.phase = phase;
    Object.assign(entry.row, { status: ev.status, prompt_tokens: ev.prompt_tokens, output_tokens: ev.output_tokens });
    renderTable();
    ensureTicking();
  }

  function onDone(ev) {
    if (!matchesFilter(ev)) return;
    const previous = live.get(ev.generation);
    live.delete(ev.generation);
    // Its bar stops growing here, and stays until the refresh brings the server's exact one.
    if (previous) ended.set(ev.generation, Object.assign(previous, { end: ev.t }));
    const metrics = Object.assign({}, ev.metrics || {});
    delete metrics.token_times_ms;
    delete metrics.itl_ms;
    const row = Object.assign(baseRow(ev), metrics, { status: ev.status, t_end: ev.t });
    if (previous) Object.assign(row, { prompt_preview: previous.row.prompt_preview, text_visible: previous.row.text_visible });
    const isNew = !rows.has(row.id);
    rows.set(row.id, row);
    renderTimeline();
    if (isNew) addThroughputPoint(row);
    bumpRequestCount();
    renderTable();
    if (!pinned && row.status === "done" && (row.output_tokens || 0) >= 2) selected = row.id;
    scheduleRefresh();
  }

  function addThroughputPoint(row) {
    const div = charts.throughput;
    if (!div || !div.data || !(isNum(row.prompt_tps) || isNum(row.output_tps))) return;
    const x = wall(row.t_arrive);
    const ratio = isNum(row.prompt_tps) && isNum(row.output_tps) && row.output_tps > 0 ? row.prompt_tps / row.output_tps : null;
    const values = { prompt_tps: row.prompt_tps ?? null, output_tps: row.output_tps ?? null, ratio };
    const indices = [];
    const update = { x: [], y: [], customdata: [] };
    div.data.forEach((trace, i) => {
      if (!(trace.meta in values)) return;
      indices.push(i);
      update.x.push([x]);
      update.y.push([values[trace.meta]]);
      update.customdata.push([row.id]);
    });
    if (indices.length) Plotly.extendTraces(div, update, indices);
    markFilled(div);
  }

  // Steps arrive four times a second; the chart takes them once a second (see ensureTicking).
  let pendingSteps = [];
  let stepsTimer = null;
  function onSteps(ev) {
    if (!Array.isArray(ev.steps) || !ev.steps.length) return;
    pendingSteps.push(...ev.steps);
    const cap = data.max_steps || 3000;
    if (pendingSteps.length > 2 * cap) pendingSteps = pendingSteps.slice(-cap);  // a tab hidden for long
    if (!stepsTimer) stepsTimer = setTimeout(flushSteps, 1000);
  }

  function flushSteps() {
    stepsTimer = null;
    if (document.hidden) { stepsTimer = setTimeout(flushSteps, 1000); return; }
    const cap = data.max_steps || 3000;
    const steps = pendingSteps.slice(-cap);
    pendingSteps = [];
    const div = charts.steps;
    if (!div || !div.data || !steps.length) return;
    const xs = steps.map((s) => wall(s.t));
    const round3 = (v) => (v == null ? null : Math.round(v * 1000) / 1000);
    const pick = {
      prefill: (s) => s.prefill || 0,
      decode: (s) => s.decode || 0,
      ms: (s) => round3(s.step_ms || s.ms),  // the whole step where the record has it, as figures.py
      predicted_ms: (s) => round3(s.predicted_ms),  // the cost model's prediction, before the step ran
    };
    const policies = steps.map((s) => s.policy || "");
    const indices = [];
    const update = { x: [], y: [], customdata: [] };
    div.data.forEach((trace, i) => {
      if (!pick[trace.meta]) return;
      indices.push(i);
      update.x.push(xs);
      update.y.push(steps.map(pick[trace.meta]));
      update.customdata.push(policies);
    });
    if (indices.length) Plotly.extendTraces(div, update, indices, cap);
    markFilled(div);
  }

  /* ---------- Panels outside the charts ---------- */

  function renderSummary(s) {
    if (!s) return;
    setText("kpi-requests", fmtInt(s.requests));
    setText("kpi-requests-sub", say(gettext("%(n)s finished"), { n: fmtInt(s.done) }));
    setText("kpi-ttft", fmtMs(s.ttft_p50_ms));
    setText("kpi-ttft-sub", isNum(s.ttft_p90_ms) ? say(gettext("median · p90 %(ms)s"), { ms: fmtMs(s.ttft_p90_ms) }) : gettext("median"));
    setText("kpi-prompt", fmtRate(s.prompt_tps_p50));
    setText("kpi-output", fmtRate(s.output_tps_p50));
    setText("kpi-ratio", isNum(s.ratio_p50) ? `${fmtNum(s.ratio_p50, 1)}×` : "–");
    setText("kpi-speech", fmtMs(s.speech_first_p50_ms));
    setText("kpi-speech-sub", say(ngettext("median of %(n)s answer read aloud", "median of %(n)s answers read aloud", s.speech_readings || 0), { n: fmtInt(s.speech_readings || 0) }));
    setText("kpi-itl", isNum(s.itl_p50_ms) ? say(gettext("gap p50 %(p50)s · p99 %(p99)s"), { p50: fmtMs(s.itl_p50_ms), p99: fmtMs(s.itl_p99_ms) }) : "");
  }

  function bumpRequestCount() {
    if (data.summary) data.summary.requests = rows.size + live.size;
    setText("kpi-requests", fmtInt(rows.size + live.size));
  }

  function renderWhy(why, info, hw) {
    if (!why) return;
    setText("why-model", (info && info.name) || "–");
    setText("why-bytes", fmtBytes(why.model_bytes));
    setText("why-params", fmtCount(why.n_params));
    setText("why-bw", isNum(why.bandwidth_gbs) ? `${fmtNum(why.bandwidth_gbs, 1)} GB/s` : "–");
    setText("why-flops", isNum(why.gflops) ? `${fmtInt(why.gflops)} GFLOP/s` : "–");
    setText("why-decode-ceiling", isNum(why.decode_ceiling_tps) ? `≈ ${fmtRate(why.decode_ceiling_tps)} tok/s` : "–");
    setText("why-prefill-ceiling", isNum(why.prefill_ceiling_tps) ? `≈ ${fmtRate(why.prefill_ceiling_tps)} tok/s` : "–");
    const list = $("why-sentences");
    if (list) list.replaceChildren(...(why.sentences || []).map((s) => el("li", null, s)));
    let note = "";
    if (hw && hw.gpu) note = say(gettext("Hardware figures: %(label)s (bandwidth = bus width × memory clock; FLOP/s = FP32 cores × clock)."), { label: hw.label });
    else if (hw && hw.host) note = say(gettext("Hardware figures %(label)s: bandwidth = every core reading one large array; FLOP/s = a float32 matrix multiply (numpy)."), { label: hw.label });
    setText("why-hardware", note);
  }

  function renderFit(fit) {
    setText("fit-text", fit ? fit.text : gettext("Prompts of different lengths (warm, no model load) give the fit its slope."));
  }

  // The staff policy switch: it asks every worker to change schedule; the pressed button
  // follows what the workers report, so it changes when they actually have.
  let pendingPolicy = null;

  // POST a staff form from the page; the reply's JSON, or an Error with the server's sentence.
  async function postForm(form, body) {
    const res = await fetch(form.action, {
      method: "POST", body, credentials: "same-origin", headers: { Accept: "application/json" },
    });
    const reply = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(reply.error || say(gettext("the server answered %(status)s"), { status: res.status }));
    return reply;
  }

  function wirePolicySwitch() {
    const form = $("policy-switch");
    if (!form) return;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const policy = event.submitter && event.submitter.value;
      if (!policy) return;
      const body = new FormData(form);
      body.set("policy", policy);
      setText("policy-status", say(gettext("Switching to %(policy)s…"), { policy }));
      try {
        await postForm(form, body);
        pendingPolicy = policy;
        setText("policy-status", say(gettext("Workers switch to %(policy)s within a few seconds."), { policy }));
      } catch (err) {
        setText("policy-status", say(gettext("Could not switch: %(error)s"), { error: err.message }));
      }
    });
  }

  function wireDemo() {
    const form = $("demo-form");
    if (!form) return;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = form.querySelector("button");
      button.disabled = true;
      try {
        await postForm(form, new FormData(form));
        setText("policy-status", gettext("Three answers start writing; a 1,500-token document follows as soon as they are. Watch the timeline and the steps."));
      } catch (err) {
        setText("policy-status", say(gettext("Could not start: %(error)s"), { error: err.message }));
      } finally {
        setTimeout(() => { button.disabled = false; }, 5000);
      }
    });
  }

  function renderPolicy(policy) {
    const form = $("policy-switch");
    if (!form || !policy) return;
    for (const button of form.querySelectorAll("button[name=policy]")) {
      button.setAttribute("aria-pressed", String(button.value === policy));
    }
    if (pendingPolicy === policy) {
      pendingPolicy = null;
      setText("policy-status", say(gettext("Now %(policy)s: watch the steps and the gaps change."), { policy }));
    }
  }

  // One row per living worker, by host: its models (loaded ones in bold), how many answers it
  // writes of how many slots, and its recent median output speed.
  function renderWorkers(list) {
    const rows = (list || []).map((w) => {
      const who = el("td", null, w.gpu ? `${w.host} · GPU` : w.host);
      who.title = w.worker;
      const models = el("td");
      w.models.forEach((m, i) => {
        if (i) models.append(", ");
        const name = el(m.loaded ? "strong" : "span", null, m.name);
        name.title = m.file;
        models.append(name);
      });
      const row = el("tr");
      row.append(who, models, el("td", null, `${fmtInt(w.running)} / ${fmtInt(w.slots || 0)}`),
        cellsCell(w.cells), el("td", null, isNum(w.output_tps) ? fmtNum(w.output_tps) : "–"));
      return row;
    });
    $("workers-rows").replaceChildren(...rows);
    setText("workers-summary", say(ngettext("%(n)s worker", "%(n)s workers", rows.length), { n: rows.length }));
  }

  // A KV cache's cells: reserved for running answers of all; idle slots' reusable prefixes in
  // the title (they give their cells up when an answer needs them).
  function cellsCell(cells) {
    const td = el("td", "num", cells ? `${fmtInt(cells.reserved)} / ${fmtInt(cells.total)}` : "–");
    if (cells) td.title = say(gettext("%(n)s cells hold reusable prefixes"), { n: fmtInt(cells.cached) });
    return td;
  }

  function renderSystem(s) {
    if (!s) return;
    renderWorkers(s.worker_list);
    setText("steps-sizing", s.sizing_text || "");  // text.sizing_text: how a long prompt is scheduled now
    renderPolicy(s.policy);
    setText("sys-running", fmtInt(s.running));
    setText("sys-waiting", fmtInt(s.waiting));
    const engine = [];
    engine.push(say(ngettext("%(n)s worker", "%(n)s workers", s.workers), { n: fmtInt(s.workers) }));
    if (isNum(s.slots)) engine.push(say(ngettext("%(n)s slot", "%(n)s slots", s.slots), { n: fmtInt(s.slots) }));
    if (s.cells) engine.push(say(gettext("%(free)s of %(total)s KV cells free"), { free: fmtInt(s.cells.total - s.cells.reserved), total: fmtInt(s.cells.total) }));
    if (s.policy) engine.push(s.policy);
    setText("sys-engine", engine.join(" · "));
    setText("sys-cpu", isNum(s.cpu_percent) ? say(ngettext("%(pct)s of %(n)s core", "%(pct)s of %(n)s cores", s.cpu_count), { pct: `${fmtNum(s.cpu_percent)}%`, n: s.cpu_count }) : "–");
    meter("sys-cpu-bar", s.cpu_percent);
    setText("sys-ram", say(gettext("%(used)s of %(total)s"), { used: fmtBytes(s.ram_used_bytes), total: fmtBytes(s.ram_total_bytes) }));
    meter("sys-ram-bar", s.ram_percent);
    const gpu = (s.gpus || [])[0];
    $("sys-gpu-item").hidden = !gpu;
    if (gpu) {
      const vram = isNum(gpu.memory_total_bytes) ? " · " + say(gettext("%(used)s of %(total)s"), { used: fmtBytes(gpu.memory_used_bytes), total: fmtBytes(gpu.memory_total_bytes) }) : "";
      setText("sys-gpu", `${isNum(gpu.util_percent) ? gpu.util_percent + "%" : "–"}${vram}`);
      $("sys-gpu").title = gpu.name;
      meter("sys-gpu-bar", gpu.util_percent);
    }
    setText("sys-model", s.model || "–");
    const state = $("sys-state");
    state.textContent = s.state === "warm" ? gettext("warm") : s.state === "cold" ? gettext("cold") : gettext("no worker");
    state.dataset.state = s.state;
    setText("sys-model-sub", s.state === "warm" ? gettext("loaded: no load time for the next request")
      : s.state === "cold" ? gettext("not loaded: the next request pays the load") : gettext("start a worker to answer"));
  }

  function meter(id, percent) {
    const bar = $(id);
    if (bar) bar.style.width = `${isNum(percent) ? Math.min(Math.max(percent, 0), 100) : 0}%`;
  }

  function statusPill(status) {
    const pill = el("span", `status-pill status-${status}`, (config.status_labels || {})[status] || status);
    return pill;
  }

  function renderTable() {
    const body = $("requests-body");
    if (!body) return;
    const all = allRows();
    const list = [...all.values()].sort((a, b) => b.t_arrive - a.t_arrive).slice(0, TABLE_ROWS);
    const detail = root.dataset.detailUrl;
    body.replaceChildren(...list.map((row) => {
      const tr = el("tr");
      tr.dataset.generation = String(row.id);
      if (row.id === selected) tr.classList.add("is-selected");
      const link = el("a", null, `#${row.id}`);
      link.href = detail.replace(/0\/$/, `${row.id}/`);
      const idCell = el("td");
      idCell.append(link);
      const statusCell = el("td");
      statusCell.append(statusPill(row.status || "queued"));
      if (row.cold) statusCell.append(" ", el("span", "tag", gettext("cold")));
      const prompt = el("td", "prompt-cell");
      if (row.text_visible === false) prompt.append(el("span", "muted hidden-text", gettext("hidden")));
      else prompt.textContent = row.prompt_preview || (ACTIVE.has(row.status) ? "…" : "");
      if (row.prompt_preview) prompt.title = row.prompt_preview;
      const tokensIn = isNum(row.prompt_tokens) ? fmtInt(row.prompt_tokens) : "–";
      const tokensOut = isNum(row.output_tokens) ? fmtInt(row.output_tokens) : "–";
      tr.append(
        idCell, el("td", "time", clock(row.t_arrive)), el("td", null, row.username || ""), statusCell,
        el("td", "num", fmtMs(row.queue_ms)), el("td", "num", fmtMs(row.ttft_ms)),
        el("td", "num", fmtRate(row.prompt_tps)), el("td", "num", fmtRate(row.output_tps)),
        el("td", "num", `${tokensIn} / ${tokensOut}`), el("td", "num", isNum(row.kv_cells) ? fmtInt(row.kv_cells) : "–"), prompt);
      return tr;
    }));
    if (!list.length) {
      const cell = el("td", "table-empty", gettext("No requests in this range yet. Answers appear here as they are asked."));
      cell.colSpan = 11;
      const tr = el("tr");
      tr.append(cell);
      body.append(tr);
    }
    setText("requests-note", all.size > TABLE_ROWS ? say(gettext("newest %(shown)s of %(all)s"), { shown: TABLE_ROWS, all: fmtInt(all.size) }) : "");
  }

  function renderTokensHeader() {
    const row = selected != null ? rows.get(selected) : null;
    setText("tokens-which", selected != null ? "· " + say(gettext("request #%(id)s"), { id: selected }) + (row && row.username ? ` (${row.username})` : "") : "");
    const link = $("tokens-link");
    if (link) {
      link.hidden = selected == null;
      if (selected != null) link.href = root.dataset.detailUrl.replace(/0\/$/, `${selected}/`);
    }
    for (const tr of document.querySelectorAll("#requests-body tr")) {
      tr.classList.toggle("is-selected", Number(tr.dataset.generation) === selected);
    }
  }

  /* ---------- Whole-page data: at load, and again after requests finish ---------- */

  // The charts the feed keeps live are drawn their own way; every other one is figures[name] as is.
  const LIVE_CHARTS = {
    timeline: () => renderTimeline(),
    // Steps stream in from the feed; redrawing them from Redis would only repeat what is shown.
    steps: (fig, initial) => { if (initial) draw("steps", fig); },
  };

  function apply(payload, { initial = false } = {}) {
    data = Object.assign(data, payload);
    rows.clear();
    ended.clear();  // the payload's own timeline has every request it reports finished
    for (const row of payload.rows || []) {
      const entry = live.get(row.id);
      if (!ACTIVE.has(row.status)) {
        live.delete(row.id);  // finished, even if the feed's "done" never reached us
        rows.set(row.id, row);
      } else if (entry) {
        Object.assign(entry.row, { prompt_preview: row.prompt_preview, text_visible: row.text_visible });
      } else {
        // In flight since before this page loaded: grow it from arrival until the feed says more.
        live.set(row.id, { row, starts: { queue: row.t_arrive } });
      }
    }
    selected = payload.selected ?? selected;
    const figures = payload.figures || {};
    for (const name of Object.keys(charts)) (LIVE_CHARTS[name] || ((fig) => draw(name, fig)))(figures[name], initial);
    renderSummary(payload.summary);
    renderWhy(payload.why, payload.model_info, payload.hardware);
    renderFit(payload.fit);
    renderSystem(payload.system);
    renderTable();
    renderTokensHeader();
    ensureTicking();
  }

  function scheduleRefresh(delay = REFRESH_DELAY_MS) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, delay);
  }

  // Asked for when the feed says a request ended, or the reader picks one: event-driven, never a timer loop.
  async function refresh() {
    if (refreshing) { scheduleRefresh(); return; }
    const params = new URLSearchParams((data.filters && data.filters.query) || "");
    if (selected != null) params.set("selected", String(selected));
    refreshing = fetch(`${root.dataset.dataUrl}?${params}`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    try {
      const response = await refreshing;
      if (response.ok) apply(await response.json());
    } catch (e) {
      console.warn("HomeAI: dashboard refresh failed", e);
    } finally {
      refreshing = null;
    }
  }

  function select(id) {
    if (!isNum(id)) return;
    selected = id;
    pinned = true;
    renderTokensHeader();
    scheduleRefresh(0);
  }

  /* ---------- Live redraw of growing bars ---------- */

  let ticker = null;
  // Running requests' bars grow on the timeline once a second: each redraw lays out the whole
  // chart, and on a small box the browser's work competes with the model's (the dashboard is
  // often opened on the same machine). A hidden tab draws nothing until it is shown again.
  function ensureTicking() {
    if (ticker || !live.size) return;
    ticker = setInterval(() => {
      if (!live.size) { clearInterval(ticker); ticker = null; }
      if (!document.hidden) renderTimeline();
    }, 1000);
  }

  /* ---------- WebSocket ---------- */

  const HANDLERS = {
    "request.update": onUpdate, "request.done": onDone, "engine.steps": onSteps,
    "system.status": renderSystem,
  };

  function onConnection(state, { reconnected }) {
    if (reconnected) scheduleRefresh(0);  // events sent while we were away are gone: catch up once
  }

  /* ---------- Start-up ---------- */

  function init() {
    apply(data, { initial: true });
    const onPick = (event) => {
      const point = event && event.points && event.points[0];
      const id = point && (Array.isArray(point.customdata) ? point.customdata[0] : point.customdata);
      if (isNum(id)) select(id);
    };
    // data-pick: the chart's customdata are request ids, and a click shows that request's tokens.
    for (const div of Object.values(charts)) if ("pick" in div.dataset && div.on) div.on("plotly_click", onPick);
    $("requests-body").addEventListener("click", (event) => {
      if (event.target.closest("a")) return;
      const tr = event.target.closest("tr[data-generation]");
      if (tr) select(Number(tr.dataset.generation));
    });
    const model = $("model-filter");
    if (model) {
      model.addEventListener("change", () => {
        const params = new URLSearchParams({ range: (data.filters && data.filters.range) || "24h" });
        if (model.value) params.set("model", model.value);
        location.search = params.toString();
      });
    }
    const scheme = window.matchMedia("(prefers-color-scheme: dark)");
    const retheme = () => {
      for (const [name, div] of Object.entries(charts)) {
        if (!div.data) continue;
        const t = themed(div.layout, name);
        Plotly.relayout(div, { "font.color": t.font.color, hoverlabel: t.hoverlabel });
      }
    };
    if (scheme.addEventListener) scheme.addEventListener("change", retheme);
    document.addEventListener("visibilitychange", () => { if (!document.hidden && live.size) renderTimeline(); });
    wirePolicySwitch();
    wireDemo();
    const status = $("live-status");
    new ReconnectingSocket(root.dataset.wsPath, { handlers: HANDLERS, status, labels: { connected: gettext("Live") }, onState: onConnection }).start();
  }

  init();
})();
