/* Chats that travel: import an export file from the sidebar (HomeAI's, ChatGPT's or Open
 * WebUI's; the server reads it all or nothing and answers a sentence when it cannot), and the
 * share dialog (the people in the house or everyone signed in; the link; stop sharing). Exports
 * are plain download links in the template. */

import { ui, config } from "./state.js";
import { showBanner } from "./controls.js";
import { openDialog } from "./dialogs.js";

const { $, el, say, fetchJson, copyText, fmtNum } = window.HomeAI;

/* ---------- Import ---------- */

async function importFile() {
  const file = ui.importFile.files[0];
  if (!file) return;
  const limit = config.import_max_bytes;
  if (limit && file.size > limit) {
    ui.importFile.value = "";
    showBanner(say(gettext("The file is %(size)s bytes; this server imports files of up to %(limit)s bytes."),
      { size: fmtNum(file.size), limit: fmtNum(limit) }), false);
    return;
  }
  const body = new FormData(ui.importForm);
  ui.importFile.value = "";
  let response;
  try {
    response = await fetch(ui.importForm.action, { method: "POST", body, credentials: "same-origin", headers: { Accept: "application/json" } });
  } catch (e) {
    showBanner(gettext("The server could not be reached."), false);
    return;
  }
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    showBanner((data && data.message) || say(gettext("The server answered %(status)s."), { status: response.status }), false);
    return;
  }
  const [first] = data.imported;
  window.location.assign(`/chat/${first.id}/`);
}

/* ---------- Share ---------- */

const share = { people: [], url: null };

function shareUrl() { return `/chat/${config.conversation}/share/`; }

function showShare(data) {
  share.url = data.url;
  const list = $("share-people");
  list.replaceChildren();
  if (!data.housemates.length) list.append(el("p", "dialog-help", gettext("Nobody else has an account here yet.")));
  for (const person of data.housemates) {
    const label = el("label", "share-person");
    const box = el("input");
    box.type = "checkbox";
    box.value = String(person.id);
    box.checked = data.people.includes(person.id);
    label.append(box, document.createTextNode(" " + person.name));
    list.append(label);
  }
  ui.shareDialog.querySelector(`input[name="share-who"][value="${data.everyone ? "everyone" : "people"}"]`).checked = true;
  $("share-link-row").hidden = !data.url;
  $("share-link").value = data.url || "";
  $("share-revoke").hidden = !data.url;
  $("share-save").textContent = data.url ? gettext("Save") : gettext("Share");
  $("share-error").hidden = true;
}

function shareError(error) {
  $("share-error").textContent = error.message;
  $("share-error").hidden = false;
}

async function openShare() {
  try {
    showShare(await fetchJson(shareUrl()));
  } catch (error) {
    showBanner(error.message);
    return;
  }
  openDialog(ui.shareDialog, ui.shareButton);
}

async function saveShare(event) {
  event.preventDefault();
  const everyone = ui.shareDialog.querySelector('input[name="share-who"]:checked').value === "everyone";
  const people = everyone ? [] : [...$("share-people").querySelectorAll("input:checked")].map((box) => Number(box.value));
  try {
    showShare(await fetchJson(shareUrl(), { everyone, people }));
    $("share-link").select();
  } catch (error) {
    shareError(error);
  }
}

async function revokeShare() {
  try {
    showShare(await fetchJson(`${shareUrl()}revoke/`, {}));
  } catch (error) {
    shareError(error);
  }
}

export function initTravel() {
  if (ui.importFile) ui.importFile.addEventListener("change", importFile);
  if (!ui.shareButton || !ui.shareDialog) return;
  ui.shareButton.addEventListener("click", openShare);
  $("share-form").addEventListener("submit", saveShare);
  $("share-revoke").addEventListener("click", revokeShare);
  $("share-copy").addEventListener("click", () => { if (share.url) copyText(share.url); });
  // Picking a person means "the people I choose".
  $("share-people").addEventListener("change", () => {
    ui.shareDialog.querySelector('input[name="share-who"][value="people"]').checked = true;
  });
}
