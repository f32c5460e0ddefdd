/* A chat's documents: the collections its answers draw from ("#" in the message box opens a
 * picker of those the person reads; chosen ones show as chips and are sent with each message,
 * which stores them on the chat), files attached by drop or pick (uploaded into the chat's own
 * collection, indexed by a worker, shown as chips on the message they go with), and an answer's
 * sources: its [n] markers turned into links to the cited files and a Sources list under it. */

import { ui, config } from "./state.js";
import { showBanner, hideBanner } from "./controls.js";
import { setTitle, touchConversation } from "./sidebar.js";

const { $, el, say } = window.HomeAI;

const docs = {
  chosen: new Set(config.chosen_collections || []),
  attached: [],   // files uploaded since the last message was sent: [{name}]
  uploading: 0,
  pickerOpen: false,
  active: 0,      // the highlighted item of the picker
};
const parts = {
  chips: $("composer-chips"), picker: $("collection-picker"), attach: $("attach-button"), file: $("attach-file"),
};

const byId = (id) => (config.collections || []).find((c) => c.id === id);

function chip(text, cls, onRemove, removeLabel) {
  const item = el("span", `chip ${cls}`);
  item.append(el("span", "chip-label", text));
  if (onRemove) {
    const button = el("button", "chip-remove", "×");
    button.type = "button";
    button.setAttribute("aria-label", removeLabel);
    button.addEventListener("click", onRemove);
    item.append(button);
  }
  return item;
}

function drawChips() {
  if (!parts.chips) return;
  const items = [];
  for (const id of docs.chosen) {
    const found = byId(id);
    if (!found) continue;
    items.push(chip(`# ${found.name}`, "chip-collection", () => { docs.chosen.delete(id); drawChips(); },
      say(gettext("Stop using %(name)s"), { name: found.name })));
  }
  for (const file of docs.attached) items.push(chip(file.name, "chip-file", null, ""));
  if (docs.uploading) items.push(chip(gettext("Uploading…"), "chip-file is-busy", null, ""));
  parts.chips.replaceChildren(...items);
  parts.chips.hidden = !items.length;
}

// --- the "#" picker ------------------------------------------------------------------------------

// The "#word" being typed at the caret, or null.
function hashQuery() {
  const before = ui.input.value.slice(0, ui.input.selectionStart);
  const match = before.match(/(?:^|\s)#([^\s#]*)$/);
  return match ? match[1] : null;
}

function pickerItems(query) {
  const q = (query || "").toLowerCase();
  return (config.collections || []).filter((c) => !docs.chosen.has(c.id) && c.id !== config.files_collection
    && c.name.toLowerCase().includes(q));
}

function closePicker() {
  docs.pickerOpen = false;
  if (parts.picker) parts.picker.hidden = true;
  ui.input.removeAttribute("aria-activedescendant");
}

function drawPicker() {
  const query = hashQuery();
  if (query === null || !parts.picker) { closePicker(); return; }
  const items = pickerItems(query);
  docs.active = Math.min(docs.active, Math.max(items.length - 1, 0));
  const rows = items.map((c, i) => {
    const row = el("li", i === docs.active ? "picker-item is-active" : "picker-item");
    row.id = `collection-option-${c.id}`;
    row.setAttribute("role", "option");
    row.dataset.collection = String(c.id);
    row.append(el("span", "picker-name", c.name), el("span", "picker-owner", c.owner));
    row.addEventListener("mousedown", (event) => { event.preventDefault(); choose(c.id); });
    return row;
  });
  if (!rows.length) rows.push(el("li", "picker-empty", (config.collections || []).length
    ? gettext("No other collection matches.") : gettext("No collections yet: make one on the Documents page.")));
  parts.picker.replaceChildren(...rows);
  parts.picker.hidden = false;
  docs.pickerOpen = true;
  if (items[docs.active]) ui.input.setAttribute("aria-activedescendant", `collection-option-${items[docs.active].id}`);
}

function choose(id) {
  // The "#word" typed is replaced by the chip.
  const at = ui.input.selectionStart;
  const before = ui.input.value.slice(0, at).replace(/(^|\s)#[^\s#]*$/, "$1");
  ui.input.value = before + ui.input.value.slice(at);
  ui.input.setSelectionRange(before.length, before.length);
  docs.chosen.add(id);
  closePicker();
  drawChips();
  ui.input.focus();
}

// Arrow keys, Enter and Escape while the picker is open; true when the key was the picker's.
export function pickerKey(event) {
  if (!docs.pickerOpen) return false;
  const items = pickerItems(hashQuery());
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    docs.active = (docs.active + (event.key === "ArrowDown" ? 1 : items.length - 1)) % Math.max(items.length, 1);
    drawPicker();
  } else if (event.key === "Enter" || event.key === "Tab") {
    if (!items[docs.active]) return false;
    choose(items[docs.active].id);
  } else if (event.key === "Escape") closePicker();
  else return false;
  event.preventDefault();
  return true;
}

// --- attached files ------------------------------------------------------------------------------

async function attach(file) {
  const limit = (config.document_max_mb || 50) * 1_000_000;
  if (file.size > limit) {
    showBanner(say(gettext("%(name)s is larger than the %(mb)s MB a file may be."), { name: file.name, mb: config.document_max_mb }));
    return;
  }
  const body = new FormData();
  body.append("file", file);
  if (config.conversation != null) body.append("conversation", String(config.conversation));
  const token = document.querySelector("input[name=csrfmiddlewaretoken]");
  docs.uploading += 1;
  drawChips();
  try {
    const response = await fetch(config.attach_url || "/chat/attach/", {
      method: "POST", body, credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": token ? token.value : "" },
    });
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) throw new Error((data && data.message) || say(gettext("The server answered %(status)s."), { status: response.status }));
    hideBanner();
    docs.attached.push({ name: data.name });
    config.files_collection = data.collection;
    if (config.conversation == null) {
      // The file made the chat: its first message continues it.
      config.conversation = data.conversation;
      history.replaceState(null, "", `/chat/${data.conversation}/`);
      setTitle(data.title);
      touchConversation(data.conversation, data.title);
      if (ui.rename) ui.rename.hidden = false;
    }
  } catch (error) {
    showBanner(say(gettext("%(name)s was not attached: %(reason)s"), { name: file.name, reason: error.message }));
  } finally {
    docs.uploading -= 1;
    drawChips();
  }
}

function attachAll(files) {
  for (const file of files) attach(file);
}

// What a chat.send carries: the chosen collections, and the files attached since the last one.
export function documentsFrame(frame) {
  frame.collections = [...docs.chosen];
  if (docs.attached.length) frame.attachments = docs.attached.map((f) => f.name);
  return frame;
}

export function sentDocuments() {
  docs.attached = [];
  drawChips();
}

export const uploading = () => docs.uploading > 0;

// A user message's attached files, as chips under its text.
export function attachmentChips(attachments) {
  if (!attachments || !attachments.length) return null;
  const row = el("div", "message-attachments");
  for (const file of attachments) row.append(chip(file.name, "chip-file", null, ""));
  return row;
}

// --- an answer's sources -------------------------------------------------------------------------

function sourceLabel(source) {
  const name = source.path.split("/").pop();
  if (source.page) return say(gettext("%(name)s, page %(page)s"), { name, page: source.page });
  if (source.section) return say(gettext("%(name)s, %(section)s"), { name, section: source.section });
  return name;
}

// The answer's [n] markers as links to their sources (outside code and links).
export function linkCitations(textEl, sources) {
  if (!sources || !sources.length) return;
  const byN = new Map(sources.map((s) => [String(s.n), s]));
  const walker = document.createTreeWalker(textEl, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement.closest("code, pre, a") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) if (/\[\d+\]/.test(walker.currentNode.nodeValue)) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const pieces = node.nodeValue.split(/(\[\d+\])/);
    const replaced = pieces.map((piece) => {
      const source = byN.get(piece.slice(1, -1));
      if (!/^\[\d+\]$/.test(piece) || !source) return document.createTextNode(piece);
      const link = el("a", "citation", piece);
      link.href = source.file;
      link.target = "_blank";
      link.rel = "noopener";
      link.title = sourceLabel(source);
      return link;
    });
    node.replaceWith(...replaced);
  }
}

// The Sources list under an answer: each source's number, file (a link) and chunk's text.
export function renderSources(sources) {
  if (!sources || !sources.length) return null;
  const box = el("details", "sources");
  box.open = true;
  box.append(el("summary", null, gettext("Sources")));
  const list = el("ol", "sources-list");
  for (const source of sources) {
    const item = el("li", "source");
    item.dataset.n = String(source.n);
    const link = el("a", "source-link", `[${source.n}] ${sourceLabel(source)}`);
    link.href = source.file;
    link.target = "_blank";
    link.rel = "noopener";
    item.append(link, el("blockquote", "source-text", source.text));
    list.append(item);
  }
  box.append(list);
  return box;
}

export function initDocuments() {
  drawChips();
  ui.input.addEventListener("input", () => { docs.active = 0; drawPicker(); });
  ui.input.addEventListener("click", drawPicker);
  ui.input.addEventListener("blur", () => setTimeout(closePicker, 150));
  if (parts.attach && parts.file) {
    parts.attach.addEventListener("click", () => parts.file.click());
    parts.file.addEventListener("change", () => { attachAll([...parts.file.files]); parts.file.value = ""; });
  }
  ui.form.addEventListener("dragover", (event) => { event.preventDefault(); ui.form.classList.add("is-dropping"); });
  ui.form.addEventListener("dragleave", () => ui.form.classList.remove("is-dropping"));
  ui.form.addEventListener("drop", (event) => {
    event.preventDefault();
    ui.form.classList.remove("is-dropping");
    if (event.dataTransfer && event.dataTransfer.files.length) attachAll([...event.dataTransfer.files]);
  });
}
