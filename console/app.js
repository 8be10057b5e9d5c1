// The console's shell: credentials, the API helper, DOM helpers, the router.
// Pages live in tables.js, catalog.js (its tabs in catalog/) and jobs.js; each
// exports route handlers that render into an element. Everything goes through
// the server's own APIs with the logged-in key (HTTP Basic), as the CLI and SDKs do.
import * as tables from "./tables.js";
import * as catalog from "./catalog.js";
import * as jobs from "./jobs.js";

const CREDS = "sediment.credentials";

// --- DOM -------------------------------------------------------------------

// h("a", {href: "#/x", class: "c", onclick: fn}, "text", child, [more]) — no innerHTML anywhere.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  const add = (c) => {
    if (c === undefined || c === null || c === false) return;
    if (Array.isArray(c)) c.forEach(add);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  };
  children.forEach(add);
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  for (const c of children.flat()) if (c) el.append(c);
  return el;
}

export function errorBox(err, id) {
  return h("div", { class: "error", id, role: "alert" }, err && err.message ? err.message : String(err));
}

export function notice(text, id) {
  return h("div", { class: "notice", id }, text);
}

export function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x) => (typeof x === "string" ? h("th", {}, x) : h("th", x[1], x[0]))))),
    h("tbody", {}, rows));
}

export function card(label, value, id) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label), h("div", { class: "value", id }, value));
}

// A modal dialog with a form; `fields` are [name, label, {type, value, placeholder}]. Resolves on submit
// through `onSubmit(values)`, which may throw: its message shows in the dialog, which stays open.
export function formDialog(title, fields, submitLabel, onSubmit, id) {
  const err = h("div");
  const inputs = {};
  const form = h("form", { method: "dialog" },
    h("h2", {}, title),
    fields.map(([name, label, opts = {}]) => {
      const input = opts.type === "textarea"
        ? h("textarea", { name, rows: 3, placeholder: opts.placeholder || "" })
        : opts.type === "select"
          ? h("select", { name }, (opts.options || []).map((o) => h("option", { value: o }, o)))
          : h("input", { name, type: opts.type || "text", placeholder: opts.placeholder || "" });
      if (opts.value !== undefined) input.value = opts.value;
      inputs[name] = input;
      return [h("label", { for: `${id}-${name}` }, label), Object.assign(input, { id: `${id}-${name}` })];
    }),
    err,
    h("div", { class: "actions" },
      h("button", { type: "button", onclick: () => dlg.close() }, "Cancel"),
      h("button", { type: "submit", class: "primary", id: `${id}-submit` }, submitLabel)));
  const dlg = h("dialog", { id }, form);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const values = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.value]));
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      await onSubmit(values);
      dlg.close();
      dlg.remove();
    } catch (ex) {
      clear(err, errorBox(ex, `${id}-error`));
    } finally {
      button.disabled = false;
    }
  });
  dlg.addEventListener("close", () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
  return dlg;
}

// --- formatting ------------------------------------------------------------

export function bytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Number(n), i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function count(n) {
  return n === null || n === undefined ? "" : Number(n).toLocaleString("en-US");
}

export function when(us) {
  if (!us) return "";
  return new Date(us / 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

export function whenSeconds(s) {
  return s ? when(s * 1e6) : "";
}

export function ago(us) {
  if (!us) return "";
  const s = Math.max(0, (Date.now() - us / 1000) / 1000);
  if (s < 90) return `${Math.round(s)} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}

// --- credentials and the API -----------------------------------------------

// Who is logged in (for display); the credentials themselves are the session cookie the server set at
// login, HttpOnly, so no script of the page can read them.
export const session = {
  get() { try { return JSON.parse(sessionStorage.getItem(CREDS)); } catch { return null; } },
  set(user) { sessionStorage.setItem(CREDS, JSON.stringify({ user })); },
  clear() { sessionStorage.removeItem(CREDS); },
};

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// fetch() of the API (the session cookie goes with it). `query` becomes the query string; `json` the body.
// Returns the Response for `raw`, else the parsed JSON (or null for an empty body). A 401 sends
// the user to the login page, but for a `probe` (the login's own check).
// A failure throws ApiError with the server's message.
export async function api(method, path, { query, json, body, headers, raw, probe } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    if (s) url += (url.includes("?") ? "&" : "?") + s;
  }
  // X-Requested-With: the server takes the session cookie for writes only with it (no other site can
  // send it), and a 401 carries no Basic challenge, which would open the browser's own prompt.
  const init = { method, headers: { "X-Requested-With": "XMLHttpRequest", ...(headers || {}) } };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["Content-Type"] = "application/json";
  } else if (body !== undefined) {
    init.body = body;
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new ApiError(0, `cannot reach the server: ${e.message}`);
  }
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const text = await res.text();
      try { message = JSON.parse(text).message || message; } catch { if (text) message = text.trim(); }
    } catch { /* the status says enough */ }
    // lakeFS answers a request its caller may not make with 401 "insufficient
    // permissions": that is no reason to log out.
    if (res.status === 401 && session.get() && !probe && !message.startsWith('insufficient permissions')) {
      session.clear();
      showLogin(`${message} — log in again`);
    }
    throw new ApiError(res.status, message);
  }
  if (raw) return res;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const enc = encodeURIComponent;

// --- set-up and login ------------------------------------------------------

export let setupState = "unknown";

async function refreshSetupState() {
  const s = await api("GET", "/api/v1/setup_lakefs");
  setupState = s.state;
  return s.state;
}

function renderWho() {
  const who = document.getElementById("who");
  const c = session.get();
  if (c) {
    clear(who, h("span", { id: "who-user" }, c.user),
      h("button", { id: "logout", onclick: logout }, "Log out"));
  } else {
    clear(who, setupState === "initialized" ? h("a", { href: "#/login" }, "Log in") : h("span", {}, "catalog not set up"));
  }
}

async function logout() {
  try {
    await api("POST", "/api/v1/auth/logout", { probe: true });
  } finally {
    session.clear();
    showLogin();
  }
}

// Trades a key and secret for the session cookie, then learns the user's name.
async function logIn(key, secret) {
  await api("POST", "/api/v1/auth/login", { json: { access_key_id: key, secret_access_key: secret }, probe: true });
  const me = await api("GET", "/api/v1/user", { probe: true });
  session.set(me.user.id);
}

function showLogin(message) {
  if (message) loginMessage = message;
  go("#/login");
}
let loginMessage = "";

function loginPage(main) {
  const err = h("div", { id: "login-error" });
  if (loginMessage) { err.append(errorBox(loginMessage)); loginMessage = ""; }
  const key = h("input", { id: "access-key", name: "access_key_id", autocomplete: "username" });
  const secret = h("input", { id: "secret-key", name: "secret_access_key", type: "password", autocomplete: "current-password" });
  const form = h("form", { class: "login", id: "login-form" },
    h("h1", {}, "Log in to Sediment"),
    h("p", { class: "muted" }, "With an access key of this server's lakeFS API (the same keys lakectl and the SDKs use)."),
    h("label", { for: "access-key" }, "Access key ID"), key,
    h("label", { for: "secret-key" }, "Secret access key"), secret,
    err,
    h("button", { class: "primary", type: "submit", id: "login-submit" }, "Log in"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await logIn(key.value.trim(), secret.value);
      secret.value = "";
      renderWho();
      location.hash = sessionStorage.getItem("sediment.after_login") || "#/tables";
    } catch (ex) {
      session.clear();
      clear(err, errorBox(ex.status === 401 ? `${ex.message}: check the access key and secret` : ex));
    }
  });
  clear(main, form);
  key.focus();
}

// Before set-up the catalog has no users: the first admin is created here (POST /api/v1/setup_lakefs).
export function setupPage(main) {
  const err = h("div");
  const user = h("input", { id: "setup-user", value: "admin" });
  const form = h("form", { class: "login", id: "setup-form" },
    h("h1", {}, "Set up the catalog"),
    h("p", { class: "muted" }, "Creates the first admin user and its access key. After this, the console, the API and the S3 gateway need a key."),
    h("label", { for: "setup-user" }, "Admin user name"), user, err,
    h("button", { class: "primary", type: "submit", id: "setup-submit" }, "Set up"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const c = await api("POST", "/api/v1/setup_lakefs", { json: { username: user.value.trim() } });
      setupState = "initialized";
      await logIn(c.access_key_id, c.secret_access_key);
      renderWho();
      clear(main, h("div", { class: "login", id: "setup-done" },
        h("h1", {}, "Catalog set up"),
        h("p", {}, "Keep this key: the secret is shown only once."),
        h("p", {}, "Access key ID: ", h("code", { id: "setup-key" }, c.access_key_id)),
        h("p", {}, "Secret access key: ", h("code", { id: "setup-secret" }, c.secret_access_key)),
        h("a", { href: "#/repositories", id: "setup-continue", onclick: (ev) => { ev.preventDefault(); go("#/repositories"); } },
          "Go to the catalog")));
    } catch (ex) {
      clear(err, errorBox(ex));
    }
  });
  clear(main, form);
}

// --- router ----------------------------------------------------------------

// [pattern, section, handler(main, params, query)]; patterns match the hash path.
const routes = [
  [/^\/login$/, "", (main) => loginPage(main)],
  [/^\/setup$/, "repositories", (main) => setupPage(main)],
  [/^\/tables$/, "tables", tables.listPage],
  [/^\/tables\/([^/]+)\/([^/]+)$/, "tables", tables.tablePage],
  [/^\/jobs$/, "jobs", jobs.jobsPage],
  [/^\/repositories$/, "repositories", catalog.repositoriesPage],
  [/^\/repositories\/([^/]+)(?:\/([a-z]+))?$/, "repositories", catalog.repositoryPage],
];

let cleanup = [];
// A page's timers and streams, stopped when the page changes.
export function onLeave(fn) { cleanup.push(fn); }

// {alive}: false once the user has moved to another page, so late answers render nothing.
export function pageLife() {
  const life = { alive: true };
  onLeave(() => { life.alive = false; });
  return life;
}

async function route() {
  for (const fn of cleanup.splice(0)) { try { fn(); } catch { /* gone already */ } }
  const main = document.getElementById("main");
  const hash = location.hash.replace(/^#/, "") || "/tables";
  const [path, qs] = hash.split("?");
  const query = Object.fromEntries(new URLSearchParams(qs || ""));
  // Once the catalog is set up every page needs a key.
  if (setupState === "initialized" && !session.get() && path !== "/login") {
    sessionStorage.setItem("sediment.after_login", "#" + hash);
    location.hash = "#/login";
    return;
  }
  renderWho();
  for (const [re, section, handler] of routes) {
    const m = path.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.section === section);
    clear(main, h("p", { class: "muted" }, "Loading…"));
    try {
      await handler(main, m.slice(1).map((x) => (x === undefined ? x : decodeURIComponent(x))), query);
    } catch (ex) {
      clear(main, errorBox(ex, "page-error"));
    }
    return;
  }
  clear(main, errorBox(`no page ${path}`, "page-error"));
}

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

async function start() {
  try {
    await refreshSetupState();
    // A session cookie from another tab of this browser is a login too.
    if (setupState === "initialized" && !session.get()) {
      try {
        session.set((await api("GET", "/api/v1/user", { probe: true })).user.id);
      } catch { /* not logged in */ }
    }
  } catch (ex) {
    clear(document.getElementById("main"), errorBox(ex, "page-error"));
    return;
  }
  window.addEventListener("hashchange", route);
  route();
}

start();
