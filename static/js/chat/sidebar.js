/* The conversations: the sidebar's list (newest first, the open one marked), opening and
 * closing it on a narrow screen, search (the list gives way to the matches while there is a
 * query), and the open conversation's title (rename in place) and Delete. */

import { ui, config } from "./state.js";
import { showBanner } from "./controls.js";

const { $, el, say, fetchJson, debounce } = window.HomeAI;

export function touchConversation(id, title) {
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

export function setSidebarOpen(open) {
  ui.layout.classList.toggle("sidebar-open", open);
  if (ui.sidebarToggle) {
    ui.sidebarToggle.setAttribute("aria-expanded", String(open));
    ui.sidebarToggle.setAttribute("aria-label", open ? gettext("Hide conversations") : gettext("Show conversations"));
  }
  if (open) $("new-conversation").focus();
}

/* ---------- The conversation's title: rename in place ---------- */

export function setTitle(title) {
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

export function clearSearch() {
  ui.search.value = "";
  searchSeq++;
  showSearch(false);
}

export function focusSearch() {
  if (window.matchMedia("(max-width: 820px)").matches) setSidebarOpen(true);
  ui.search.focus();
  ui.search.select();
}

export function initSidebar() {
  if (ui.sidebarToggle) {
    ui.sidebarToggle.addEventListener("click", () => setSidebarOpen(!ui.layout.classList.contains("sidebar-open")));
  }
  if (ui.backdrop) ui.backdrop.addEventListener("click", () => setSidebarOpen(false));
  ui.search.addEventListener("input", debounce(runSearch, 250));
  ui.search.addEventListener("search", runSearch);  // the field's own clear button
  if (ui.rename) ui.rename.addEventListener("click", startRename);
  ui.heading.addEventListener("dblclick", startRename);
  // Delete (the header's form) asks first.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (e) => { if (!window.confirm(form.dataset.confirm)) e.preventDefault(); });
  }
}
