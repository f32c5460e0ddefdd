/* The model library page's pulls: start one, watch every running pull (bytes, rate, time left,
 * per layer), cancel one. The list is read from the server every second while a pull runs (every
 * five otherwise, to notice one someone else started); a pull this page saw running and then
 * succeed reloads the page, whose table then lists the new model. "Will it fit?" asks for the
 * forecast before any download. The dashboard shows staff the same list (watch and cancel only:
 * its box has no form, is hidden while no pull is listed, and never reloads the page). */
(function () {
  "use strict";
  const { el, fetchJson, fmtBytes, fmtDuration, rateMeter, say } = HomeAI;
  const box = document.getElementById("pulls");
  if (!box) return;
  const form = document.getElementById("pull-form");
  const input = document.getElementById("pull-name");
  const errorLine = document.getElementById("pull-error");
  const list = document.getElementById("pull-list");
  const meters = new Map(); // pull id -> its rateMeter: the rate is smoothed over the readings
  const runningSeen = new Set();
  let timer = null;

  const STATUS = {
    "pulling manifest": () => gettext("Reading the manifest"),
    "verifying sha256 digest": () => gettext("Checking the checksum"),
    "writing manifest": () => gettext("Putting it in the models folder"),
  };

  function progressOf(pull) {
    const total = pull.layers.reduce((sum, l) => sum + l.total, 0);
    const done = pull.layers.reduce((sum, l) => sum + l.completed, 0);
    if (!meters.has(pull.id)) meters.set(pull.id, rateMeter());
    return { total, done, rate: meters.get(pull.id)(done) };
  }

  function row(pull) {
    const item = el("li", "pull");
    item.dataset.pull = pull.id;
    const head = el("div", "pull-head");
    head.append(el("strong", "pull-name", pull.name));
    let state;
    if (pull.ok) state = gettext("Pulled");
    else if (pull.error) state = pull.error;
    else if (STATUS[pull.status]) state = STATUS[pull.status]();
    else state = gettext("Downloading");
    head.append(el("span", pull.error ? "pull-status field-errors" : "pull-status", state));
    item.append(head);
    if (pull.running) {
      const { total, done, rate } = progressOf(pull);
      const bar = el("progress", "pull-bar");
      bar.max = total || 1;
      bar.value = done;
      item.append(bar);
      const facts = [say(gettext("%(done)s of %(total)s"), { done: fmtBytes(done), total: fmtBytes(total) })];
      if (Number.isFinite(rate) && rate > 0) {
        facts.push(say(gettext("%(rate)s/s"), { rate: fmtBytes(rate) }));
        facts.push(say(gettext("%(time)s left"), { time: fmtDuration((total - done) / rate) }));
      }
      item.append(el("span", "pull-bytes", facts.join(" · ")));
      if (pull.layers.length > 1) {
        const layers = el("ul", "pull-layers");
        for (const l of pull.layers) {
          const digest = l.digest.replace("sha256:", "").slice(0, 12);
          layers.append(el("li", "", `${digest}: ${say(gettext("%(done)s of %(total)s"), { done: fmtBytes(l.completed), total: fmtBytes(l.total) })}`));
        }
        item.append(layers);
      }
      const cancel = el("button", "button pull-cancel", gettext("Cancel"));
      cancel.type = "button";
      cancel.addEventListener("click", async () => {
        cancel.disabled = true;
        try { await fetchJson(box.dataset.cancel, { id: pull.id }); } catch (e) { showError(e.message); }
      });
      item.append(cancel);
    }
    return item;
  }

  function showError(text) {
    errorLine.textContent = text;
    errorLine.hidden = !text;
  }

  async function refresh() {
    clearTimeout(timer);
    let pulls = [];
    try {
      pulls = (await fetchJson(box.dataset.list)).pulls;
    } catch (e) {
      timer = setTimeout(refresh, 5000);
      return;
    }
    list.replaceChildren(...pulls.map(row));
    if (box.dataset.watchOnly) box.hidden = !pulls.length;
    let reload = false;
    for (const pull of pulls) {
      if (pull.running) runningSeen.add(pull.id);
      else if (pull.ok && runningSeen.delete(pull.id)) reload = true;
    }
    if (reload && !box.dataset.watchOnly) {
      window.location.reload();
      return;
    }
    timer = setTimeout(refresh, pulls.some((p) => p.running) ? 1000 : 5000);
  }

  if (!form) {
    refresh(); // the dashboard: watch and cancel only
    return;
  }

  // Before the download: whether it fits a worker's share of memory, and its forecast speed here.
  const check = document.getElementById("pull-check");
  const forecast = document.getElementById("pull-forecast");
  check.addEventListener("click", async () => {
    showError("");
    forecast.hidden = true;
    if (!input.value.trim()) return input.reportValidity();
    check.disabled = true;
    try {
      const answer = await fetchJson(`${check.dataset.url}?name=${encodeURIComponent(input.value.trim())}`);
      forecast.replaceChildren(el("p", answer.fits ? "pull-fits" : "pull-fits field-errors", answer.message), el("p", "", answer.speed));
      forecast.hidden = false;
    } catch (e) {
      showError(e.message);
    } finally {
      check.disabled = false;
    }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError("");
    try {
      const machine = document.getElementById("pull-machine").value;
      const { pull } = await fetchJson(form.action, { name: input.value, machine });
      runningSeen.add(pull.id);
      input.value = "";
    } catch (e) {
      showError(e.message);
    }
    refresh();
  });

  // The recommended models: one click fills the pull box and pulls (or asks whether it fits).
  for (const button of box.querySelectorAll("[data-pull-name]")) {
    button.addEventListener("click", () => {
      input.value = button.dataset.pullName;
      if (button.dataset.action === "check") check.click();
      else form.requestSubmit();
    });
  }

  refresh();
})();
