/* HomeAI's service worker (served at /sw.js by dashboard/offline/views.py, which writes CONFIG).
 *
 * It keeps a person's chat pages, and what they need to draw (static files and the translations),
 * so the installed app opens offline to the chats last read on this device, read-only. It touches
 * nothing else: the APIs, the sockets, forms and every other page go to the network as if it were
 * not there.
 *
 * - A chat page goes to the network first; a copy of what came back is kept. When the network
 *   fails (or has not answered in NETWORK_WAIT_MS), the kept copy is served, marked
 *   `data-offline-copy` on <html> (chat/offline.js then shows it read-only and reloads once the
 *   server answers again). A chat never kept here gets the chat list's copy, which says so.
 * - Kept pages live in one cache per person, named by the key their page's response carries
 *   (CONFIG.personHeader): keeping a page of another person first deletes the previous person's,
 *   and opening the sign-in page (where every sign-out ends) deletes every cache of this worker.
 * - Static files and the translations are kept only when a chat page asks (a "keep" message
 *   listing what it loaded); once kept they are refreshed from the network on every load.
 */
"use strict";

const CONFIG = {{ config }};
const STATIC_CACHE = "homeai-static-v1";
const PERSON_PREFIX = "homeai-person-";
const literal = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const CHAT_PAGE = new RegExp(`^${literal(CONFIG.chat)}(\\d+/)?$`);  // the chat list and one conversation
const DELETE_CHAT = new RegExp(`^${literal(CONFIG.deleteChat).replace("/0/", "/(\\d+)/")}$`);  // its Delete form's address

self.addEventListener("install", () => self.skipWaiting());

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith("homeai-static-") && name !== STATIC_CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

// What a request is to this worker: "signin", "page", "static", "catalog", or null (not ours).
function kind(request) {
  if (request.method !== "GET") return null;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return null;
  if (request.mode === "navigate" && url.pathname === CONFIG.signIn) return "signin";
  if (request.mode === "navigate" && CHAT_PAGE.test(url.pathname)) return "page";
  if (url.pathname.startsWith(CONFIG.static)) return "static";
  if (url.pathname === CONFIG.catalog) return "catalog";
  return null;
}

const pageKey = (url) => { const u = new URL(url); return u.origin + u.pathname; };

// The name of the cache holding the signed-in person's pages, or null when none is kept.
async function personCache() {
  return (await caches.keys()).find((name) => name.startsWith(PERSON_PREFIX)) || null;
}

async function forgetPeople(except = null) {
  for (const name of await caches.keys()) {
    if (name.startsWith(PERSON_PREFIX) && name !== except) await caches.delete(name);
  }
}

// At the sign-in page: nobody is signed in here, so nothing is kept (the static files neither:
// the next person's chat page keeps them again).
async function forgetAll() {
  for (const name of await caches.keys()) if (name.startsWith("homeai-")) await caches.delete(name);
}

// Keeps a chat page as it came from the network: a whole page of a signed-in person, never a
// redirect; the MAX_PAGES kept last (a cache lists its entries in the order they were put).
// A chat the server no longer has (deleted) loses its copy.
const MAX_PAGES = 50;

async function keepPage(url, response) {
  if (response.status === 404) {
    const name = await personCache();
    if (name) await (await caches.open(name)).delete(pageKey(url));
    return;
  }
  const person = response.headers.get(CONFIG.personHeader);
  const html = (response.headers.get("Content-Type") || "").startsWith("text/html");
  if (!person || !html || response.status !== 200 || response.type !== "basic" || response.redirected) return;
  const name = PERSON_PREFIX + person;
  await forgetPeople(name);
  const cache = await caches.open(name);
  await cache.put(pageKey(url), response);
  const pages = (await cache.keys()).filter((request) => CHAT_PAGE.test(new URL(request.url).pathname));
  for (const request of pages.slice(0, Math.max(0, pages.length - MAX_PAGES))) await cache.delete(request);
}

async function offlineCopy(url) {
  const name = await personCache();
  if (!name) return null;
  const cache = await caches.open(name);
  const kept = (await cache.match(pageKey(url))) || (await cache.match(new URL(CONFIG.chat, url).href));
  if (!kept) return null;
  const html = (await kept.text()).replace("<html ", "<html data-offline-copy ");
  return new Response(html, { status: 200, headers: { "Content-Type": kept.headers.get("Content-Type") } });
}

// A phone away from home may wait a long time on the server's LAN address before the fetch
// fails: past this, the copy is shown, and the page reloads itself if the server answers after all.
const NETWORK_WAIT_MS = 10000;

async function page(event) {
  const request = event.request;
  const network = fetch(request).then(async (response) => {
    await keepPage(request.url, response.clone());
    return response;
  });
  event.waitUntil(network.catch(() => null));  // kept even when the copy was served first
  const late = new Promise((resolve) => setTimeout(resolve, NETWORK_WAIT_MS, null));
  try {
    const response = await Promise.race([network, late]);
    if (response) return response;
  } catch (error) { /* offline: the copy */ }
  return (await offlineCopy(request.url)) || network.catch(() => Response.error());
}

async function assetCache(what) {
  return what === "static" ? STATIC_CACHE : personCache();
}

// A static file or the translations: the network's answer (kept again if it was kept before), else the kept one.
async function asset(request, what) {
  const name = await assetCache(what);
  const cache = name && (await caches.has(name)) ? await caches.open(name) : null;  // open() would create it
  let response;
  try {
    response = await fetch(request);
  } catch (error) {
    return (cache && (await cache.match(request))) || Response.error();
  }
  if (cache && response.ok && (await cache.match(request))) await cache.put(request, response.clone());
  return response;
}

// A chat deleted here loses its copy at once. The form itself goes to the network untouched
// (were it refused, the copy comes back with the next visit).
async function forgetDeleted(url) {
  const id = new URL(url).pathname.match(DELETE_CHAT)[1];
  const name = await personCache();
  if (name) await (await caches.open(name)).delete(new URL(CONFIG.chat + id + "/", url).href);
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method === "POST" && DELETE_CHAT.test(new URL(request.url).pathname)) event.waitUntil(forgetDeleted(request.url));
  const what = kind(event.request);
  if (what === "signin") event.respondWith(forgetAll().then(() => fetch(event.request)));
  else if (what === "page") event.respondWith(page(event));
  else if (what) event.respondWith(asset(event.request, what));
});

// A chat page's "keep" message: the page itself (when no copy exists yet), the chat list, and
// the files it loaded. The answer ("kept") says whether an offline copy is now there.
async function keep(urls) {
  const own = urls.filter((u) => { try { return new URL(u).origin === self.location.origin; } catch (e) { return false; } });
  const requests = own.map((u) => new Request(u));
  const pages = requests.filter((r) => CHAT_PAGE.test(new URL(r.url).pathname));
  pages.push(new Request(new URL(CONFIG.chat, self.location.origin).href));
  for (const request of pages) {
    const name = await personCache();
    if (name && (await (await caches.open(name)).match(pageKey(request.url)))) continue;
    try { await keepPage(request.url, await fetch(request)); } catch (error) { /* offline again: next time */ }
  }
  for (const request of requests) {
    const what = kind(new Request(request.url));
    if (what !== "static" && what !== "catalog") continue;
    const name = await assetCache(what);
    if (!name) continue;
    const cache = await caches.open(name);
    if (await cache.match(request)) continue;
    try {
      const response = await fetch(request);
      if (response.ok) await cache.put(request, response);
    } catch (error) { /* offline again: next time */ }
  }
  return Boolean(await personCache());
}

self.addEventListener("message", (event) => {
  const data = event.data || {};
  if (data.type !== "keep" || !Array.isArray(data.urls)) return;
  event.waitUntil(keep(data.urls).then((kept) => {
    if (event.source) event.source.postMessage({ type: "kept", kept });
  }));
});
