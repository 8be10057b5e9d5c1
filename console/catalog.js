// The catalog: repositories, and per repository its objects (browse a ref by
// prefix, preview, download, upload, uncommitted changes, commit), branches
// (with their staged mutations and staging compaction), commits (log and each
// commit's diff), compare and merge, and tags. Everything through the lakeFS
// API at /api/v1 with the logged-in key, one page per request: a listing never
// walks a whole branch.
import {
  h, clear, errorBox, notice, table, formDialog, bytes, count, whenSeconds, ago, api, enc, go, pageLife,
  setupState, setupPage,
} from "./app.js";

const REPOS_PAGE = 50;
const OBJECTS_PAGE = 100;
const BRANCHES_PAGE = 50;
const COMMITS_PAGE = 50;
const DIFF_PAGE = 100;
const TAGS_PAGE = 50;
const PREVIEW_BYTES = 65536;
const COMPACTION_POLL_MS = 1000;
const COMPACTION_POLL_LIMIT_MS = 30000;
const RUNS_PAGE = 50;
const TABS = ["objects", "branches", "commits", "compare", "tags", "actions"];
const TAB_LABELS = { objects: "Objects", branches: "Branches", commits: "Commits", compare: "Compare", tags: "Tags", actions: "Actions" };

// --- small helpers -----------------------------------------------------------

// Whether the page that created it is still shown: a render or poll that
// finishes after the user moved on must not touch the new page.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function short(id) {
  return id ? String(id).slice(0, 12) : "";
}

function repoPath(repo) {
  return `/api/v1/repositories/${enc(repo)}`;
}

// The hash of a repository tab with its query parameters (empty ones left out).
function hashFor(repo, tab, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return `#/repositories/${enc(repo)}/${tab}${s ? "?" + s : ""}`;
}

// Records where the page is (for reload and sharing) without re-rendering it.
function replaceHash(hash) {
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

function diffTag(type) {
  const cls = { added: "tag ok", removed: "tag bad", conflict: "tag bad" }[type] || "tag";
  return h("span", { class: `${cls} diff-${type}` }, type);
}

// One page at a time of a lakeFS listing ({results, pagination}), with a stack
// of the `after` cursors of the pages before it for "previous".
//   fetchPage(after) -> page; render(results, page) -> element.
function pager(box, fetchPage, render, { life, nextId, prevId, nextLabel = "Next page", prevLabel = "Previous page" }) {
  const stack = [];
  let cursor = "";
  let busy = false;
  async function show({ rethrow = false } = {}) {
    let page;
    try {
      page = await fetchPage(cursor);
    } catch (ex) {
      if (rethrow) throw ex;
      if (life.alive) clear(box, errorBox(ex));
      return;
    } finally {
      busy = false;
    }
    if (!life.alive) return;
    const more = page.pagination && page.pagination.has_more;
    const prev = h("button", {
      type: "button", id: prevId, disabled: stack.length === 0,
      onclick: () => { if (busy) return; busy = true; cursor = stack.pop(); setNavBusy(); show(); },
    }, prevLabel);
    const next = h("button", {
      type: "button", id: nextId, disabled: !more,
      onclick: () => {
        if (busy) return;
        busy = true;
        stack.push(cursor);
        cursor = page.pagination.next_offset;
        setNavBusy();
        show();
      },
    }, nextLabel);
    const nav = stack.length || more
      ? h("div", { class: "pager" }, prev, next, h("span", { class: "muted page-number" }, `page ${stack.length + 1}`))
      : null;
    function setNavBusy() { prev.disabled = true; next.disabled = true; }
    clear(box, render(page.results || [], page), nav);
  }
  return {
    show,
    // Back to the first page.
    reset(opts) { stack.length = 0; cursor = ""; return show(opts); },
  };
}

// --- repositories ------------------------------------------------------------

export async function repositoriesPage(main, _params, _query) {
  const life = pageLife();
  if (setupState !== "initialized") {
    // No users yet: the catalog needs its first admin before anything else.
    setupPage(main);
    main.prepend(notice("The catalog is not set up yet: create its first admin user, then its repositories.", "setup-needed"));
    return;
  }
  const msg = h("div", { id: "repositories-msg" });
  const listBox = h("div", { id: "repositories-box" });
  const list = pager(listBox,
    (after) => api("GET", "/api/v1/repositories", { query: { after, amount: REPOS_PAGE } }),
    (repos) => (repos.length === 0
      ? h("p", { class: "muted", id: "no-repositories" }, "No repositories yet. Create one to store objects, branch and commit them.")
      : table(["Repository", "Default branch", "Storage namespace", "Created", ""], repos.map((r) =>
        h("tr", { dataset: { repo: r.id } },
          h("td", {}, h("a", { class: "repo-link", href: hashFor(r.id, "objects") }, r.id)),
          h("td", {}, h("code", {}, r.default_branch)),
          h("td", {}, h("code", {}, r.storage_namespace)),
          h("td", {}, whenSeconds(r.creation_date)),
          h("td", {}, r.read_only ? h("span", { class: "tag" }, "read-only") : null))), { id: "repositories" })),
    { life, nextId: "repositories-next", prevId: "repositories-prev" });
  await list.show({ rethrow: true });
  if (!life.alive) return;
  clear(main,
    h("div", { class: "page-head" },
      h("h1", {}, "Repositories"),
      h("button", { id: "create-repo", class: "primary", type: "button", onclick: () => createRepository() }, "Create repository")),
    msg, listBox);
}

async function createRepository() {
  let example = "";
  try {
    example = (await api("GET", "/api/v1/config/storage")).blockstore_namespace_example || "";
  } catch { /* no example: the field starts empty */ }
  // The example ends in ".../repo": the namespace follows the typed name until it is edited.
  const nsFor = (name) => (/\/repo$/.test(example) ? example.replace(/repo$/, name || "repo") : example);
  const dlg = formDialog("Create repository", [
    ["name", "Repository name", { placeholder: "my-repository" }],
    ["storage_namespace", "Storage namespace", { value: example, placeholder: example || "local:///path or s3://bucket/prefix" }],
    ["default_branch", "Default branch", { value: "main" }],
    ["sample_data", "Sample data", { type: "select", options: ["no", "yes"] }],
  ], "Create repository", async (v) => {
    const r = await api("POST", "/api/v1/repositories", {
      json: {
        name: v.name.trim(),
        storage_namespace: v.storage_namespace.trim(),
        default_branch: v.default_branch.trim() || "main",
        sample_data: v.sample_data === "yes",
      },
    });
    go(hashFor(r.id, "objects"));
  }, "create-repo-dialog");
  const name = dlg.querySelector("#create-repo-dialog-name");
  const ns = dlg.querySelector("#create-repo-dialog-storage_namespace");
  let follow = true;
  ns.addEventListener("input", () => { follow = false; });
  name.addEventListener("input", () => { if (follow && example) ns.value = nsFor(name.value.trim()); });
  name.focus();
}

// --- one repository ----------------------------------------------------------

export async function repositoryPage(main, [repoId, tab], query) {
  const life = pageLife();
  tab = tab || "objects";
  if (!TABS.includes(tab)) {
    clear(main, errorBox(`no tab "${tab}": the tabs are ${TABS.join(", ")}`, "page-error"));
    return;
  }
  const repo = await api("GET", repoPath(repoId));
  if (!life.alive) return;
  const ref = query.ref || repo.default_branch;
  const ctx = { repo, repoId, ref, query, life, base: repoPath(repoId), tab };

  const body = h("div", { id: "tab-body" });
  clear(main,
    h("div", { class: "page-head" },
      h("h1", {}, h("a", { href: "#/repositories" }, "Repositories"), " / ", h("span", { id: "repo-name" }, repo.id),
        repo.read_only ? [" ", h("span", { class: "tag" }, "read-only")] : null),
      refSelector(ctx)),
    h("p", { class: "muted repo-info" },
      "Default branch ", h("code", {}, repo.default_branch), " · storage namespace ", h("code", {}, repo.storage_namespace),
      repo.creation_date ? ` · created ${whenSeconds(repo.creation_date)}` : ""),
    h("nav", { class: "tabs", id: "repo-tabs" }, TABS.map((t) =>
      h("a", { id: `tab-${t}`, class: t === tab ? "active" : null, href: hashFor(repoId, t, { ref: query.ref }) }, TAB_LABELS[t]))),
    body);
  const render = { objects: objectsTab, branches: branchesTab, commits: commitsTab, compare: compareTab, tags: tagsTab, actions: actionsTab }[tab];
  try {
    await render(body, ctx);
  } catch (ex) {
    if (life.alive) clear(body, errorBox(ex, "tab-error"));
  }
}

// A ref to browse: any branch, tag or commit (with suggestions from the first page of each).
function refSelector(ctx) {
  const input = h("input", { id: "ref", list: "ref-options", value: ctx.ref, size: 22, "aria-label": "Ref", autocomplete: "off" });
  const options = h("datalist", { id: "ref-options" });
  const form = h("form", { class: "inline", id: "ref-form" },
    h("label", { for: "ref", class: "muted" }, "Ref"), input, options, h("button", { type: "submit", id: "ref-go" }, "Go"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const v = input.value.trim();
    if (v) go(hashFor(ctx.repoId, ctx.tab, { ref: v }));
  });
  Promise.all([
    api("GET", `${ctx.base}/branches`, { query: { amount: 100 } }),
    api("GET", `${ctx.base}/tags`, { query: { amount: 100 } }),
  ]).then(([branches, tags]) => {
    if (!ctx.life.alive) return;
    options.replaceChildren(
      ...branches.results.map((b) => h("option", { value: b.id }, "branch")),
      ...tags.results.map((t) => h("option", { value: t.id }, "tag")));
  }).catch(() => { /* suggestions only */ });
  return form;
}

// Whether `ref` names a branch (only a branch takes uploads and commits).
async function isBranch(ctx) {
  try {
    await api("GET", `${ctx.base}/branches/${enc(ctx.ref)}`);
    return true;
  } catch (ex) {
    if (ex.status === 404 || ex.status === 400) return false;
    throw ex;
  }
}

// --- objects -----------------------------------------------------------------

async function objectsTab(box, ctx) {
  const { repoId, ref, base, life } = ctx;
  const prefix = ctx.query.prefix || "";
  const branch = await isBranch(ctx);
  if (!life.alive) return;

  const msg = h("div", { id: "objects-msg" });
  const previewBox = h("div", { id: "preview-box" });
  const listBox = h("div", { id: "objects-box" });
  const changesBox = h("div", { id: "changes-box" });

  const objectUrl = `${base}/refs/${enc(ref)}/objects`;

  async function preview(o, button) {
    button.disabled = true;
    const head = h("div", { class: "section-head" },
      h("h2", {}, "Preview of ", h("code", {}, o.path)),
      h("button", { type: "button", id: "preview-close", onclick: () => clear(previewBox) }, "Close"));
    try {
      // The first PREVIEW_BYTES: the server clamps the range to the object (an empty object is a 416).
      const res = await api("GET", objectUrl, {
        query: { path: o.path }, headers: { Range: `bytes=0-${PREVIEW_BYTES - 1}` }, raw: true,
      }).catch((ex) => {
        if (ex.status === 416) return null;
        throw ex;
      });
      if (!res) {
        if (!life.alive) return;
        clear(previewBox, head, h("pre", { class: "preview", id: "preview" }, ""), h("p", { class: "muted" }, "An empty object."));
        return;
      }
      const range = /\/(\d+)$/.exec(res.headers.get("Content-Range") || "");
      const size = range ? Number(range[1]) : Number(res.headers.get("Content-Length"));
      let buf = new Uint8Array(await res.arrayBuffer());
      if (buf.length > PREVIEW_BYTES) buf = buf.subarray(0, PREVIEW_BYTES);
      const truncated = size > buf.length;
      const text = decodeText(buf, truncated);
      if (!life.alive) return;
      if (text === null) {
        clear(previewBox, head, h("p", { id: "preview", class: "muted binary" },
          `A binary object of ${bytes(size)} (${count(size)} bytes): download it to see it.`));
      } else {
        clear(previewBox, head,
          truncated ? h("p", { class: "muted" }, `The first ${bytes(buf.length)} of ${bytes(size)}.`) : null,
          h("pre", { class: "preview", id: "preview" }, text));
      }
      previewBox.scrollIntoView({ block: "nearest" });
    } catch (ex) {
      if (life.alive) clear(previewBox, head, errorBox(ex, "preview-error"));
    } finally {
      button.disabled = false;
    }
  }

  // A plain link: the browser streams the object to disk with the session cookie (nothing held in the page).
  function download(o) {
    const url = `${objectUrl}?path=${enc(o.path)}`;
    const a = h("a", { href: url, download: o.path.split("/").pop() || "object", style: "display:none" });
    document.body.append(a);
    a.click();
    a.remove();
  }

  async function remove(o) {
    if (!confirm(`Delete ${o.path} from branch ${ref}? (The deletion is an uncommitted change.)`)) return;
    try {
      await api("DELETE", `${base}/branches/${enc(ref)}/objects`, { query: { path: o.path } });
      clear(msg, notice(`Deleted ${o.path}`, "delete-result"));
      await Promise.all([list.show(), changes && changes.reset()]);
    } catch (ex) {
      clear(msg, errorBox(ex, "delete-error"));
    }
  }

  const list = pager(listBox,
    (after) => api("GET", `${base}/refs/${enc(ref)}/objects/ls`,
      { query: { prefix, delimiter: "/", amount: OBJECTS_PAGE, after } }),
    (items) => {
      if (items.length === 0) {
        return h("p", { class: "muted", id: "no-objects" },
          prefix ? `Nothing under ${prefix} on ${ref}.` : `No objects on ${ref} yet.`);
      }
      return table(["Name", ["Size", { class: "num" }], "Modified", "Checksum", ""], items.map((o) => {
        const name = o.path.startsWith(prefix) ? o.path.slice(prefix.length) : o.path;
        if (o.path_type === "common_prefix") {
          return h("tr", { dataset: { path: o.path }, class: "prefix-row" },
            h("td", {}, h("a", { class: "prefix-link", href: hashFor(repoId, "objects", { ref: ctx.query.ref, prefix: o.path }) }, name)),
            h("td"), h("td"), h("td"), h("td"));
        }
        const pv = h("button", { type: "button", class: "preview", onclick: () => preview(o, pv) }, "Preview");
        const dl = h("button", { type: "button", class: "download", onclick: () => download(o) }, "Download");
        const del = branch ? h("button", { type: "button", class: "delete-object", onclick: () => remove(o) }, "Delete") : null;
        return h("tr", { dataset: { path: o.path } },
          h("td", {}, h("code", { class: "object-name" }, name)),
          h("td", { class: "num", title: `${count(o.size_bytes)} bytes` }, bytes(o.size_bytes)),
          h("td", {}, whenSeconds(o.mtime)),
          h("td", {}, h("code", { title: o.checksum }, short(o.checksum))),
          h("td", { class: "row-actions" }, pv, dl, del));
      }), { id: "objects" });
    },
    { life, nextId: "next-page", prevId: "prev-page" });

  let changes = null;
  if (branch) {
    changes = pager(changesBox,
      (after) => api("GET", `${base}/branches/${enc(ref)}/diff`, { query: { amount: DIFF_PAGE, after } }),
      (items) => (items.length === 0
        ? h("p", { class: "muted", id: "no-changes" }, `No uncommitted changes on ${ref}.`)
        : diffTable(items, "changes")),
      { life, nextId: "changes-next", prevId: "changes-prev" });
  }

  function commitDialog() {
    formDialog(`Commit the changes of ${ref}`, [
      ["message", "Commit message", { type: "textarea", placeholder: "What changed and why" }],
    ], "Commit", async (v) => {
      const c = await api("POST", `${base}/branches/${enc(ref)}/commits`, { json: { message: v.message } });
      clear(msg, notice(`Committed ${short(c.id)} on ${ref}: ${c.message}`, "commit-result"));
      await Promise.all([list.show(), changes.reset()]);
    }, "commit-dialog");
  }

  await Promise.all([list.show({ rethrow: true }), changes && changes.show()]);
  if (!life.alive) return;
  clear(box,
    breadcrumbs(ctx, prefix),
    msg,
    branch ? uploadForm(ctx, prefix, msg, async () => { await Promise.all([list.show(), changes.reset()]); }) : null,
    previewBox,
    listBox,
    branch
      ? h("section", { id: "changes-section" },
        h("div", { class: "section-head" },
          h("h2", {}, "Uncommitted changes"),
          h("button", { type: "button", id: "commit", class: "primary", onclick: commitDialog }, "Commit…")),
        changesBox)
      : h("p", { class: "muted", id: "read-only-ref" }, `${ref} is not a branch: its objects can be read, not changed.`));
}

// Text when `buf` is UTF-8 without control characters (a cut-off multi-byte
// character at the end of a truncated read is dropped), else null.
function decodeText(buf, truncated) {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  for (let cut = 0; cut <= (truncated ? 3 : 0) && cut < buf.length; cut++) {
    let s;
    try {
      s = decoder.decode(buf.subarray(0, buf.length - cut));
    } catch {
      continue;
    }
    return /[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]/.test(s) ? null : s;
  }
  return null;
}

function breadcrumbs(ctx, prefix) {
  const parts = prefix.split("/").filter((p, i, all) => p !== "" || i < all.length - 1);
  const crumbs = [h("a", { href: hashFor(ctx.repoId, "objects", { ref: ctx.query.ref }), class: "crumb" }, ctx.repoId), " / "];
  let acc = "";
  parts.forEach((p, i) => {
    acc += p + "/";
    crumbs.push(i === parts.length - 1
      ? h("strong", { class: "crumb" }, p)
      : h("a", { class: "crumb", href: hashFor(ctx.repoId, "objects", { ref: ctx.query.ref, prefix: acc }) }, p), " / ");
  });
  return h("div", { class: "crumbs", id: "crumbs" }, h("span", { class: "muted" }, `${ctx.ref}: `), crumbs);
}

function uploadForm(ctx, prefix, msg, after) {
  const file = h("input", { type: "file", id: "upload-file" });
  const path = h("input", { id: "upload-path", value: prefix, size: 48, placeholder: "path/of/the/object", "aria-label": "Object path" });
  const submit = h("button", { type: "submit", id: "upload-submit", class: "primary" }, "Upload");
  file.addEventListener("change", () => {
    const f = file.files[0];
    if (f) path.value = prefix + f.name;
  });
  const form = h("form", { class: "inline", id: "upload-form" },
    h("label", { for: "upload-file", class: "muted" }, "Upload to ", h("code", {}, ctx.ref)), file,
    h("label", { for: "upload-path", class: "muted" }, "as"), path, submit);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = file.files[0];
    const p = path.value;
    if (!f) { clear(msg, errorBox("Choose a file to upload first.", "upload-error")); return; }
    if (!p || p.endsWith("/")) { clear(msg, errorBox("Give the object a path (not ending in /).", "upload-error")); return; }
    submit.disabled = true;
    try {
      const fd = new FormData();
      fd.append("content", f, f.name);
      const st = await api("POST", `${ctx.base}/branches/${enc(ctx.ref)}/objects`, { query: { path: p }, body: fd });
      if (!ctx.life.alive) return;
      clear(msg, notice(`Uploaded ${st.path} (${bytes(st.size_bytes)}) to ${ctx.ref}`, "upload-result"));
      file.value = "";
      path.value = prefix;
      await after();
    } catch (ex) {
      if (ctx.life.alive) clear(msg, errorBox(ex, "upload-error"));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function diffTable(items, id) {
  return table(["Change", "Path", ["Size", { class: "num" }]], items.map((d) =>
    h("tr", { dataset: { path: d.path, type: d.type } },
      h("td", {}, diffTag(d.type)),
      h("td", {}, h("code", {}, d.path), d.path_type === "common_prefix" ? h("span", { class: "muted" }, " (prefix)") : null),
      h("td", { class: "num" }, d.size_bytes === undefined ? "" : bytes(d.size_bytes)))), { id });
}

// --- branches ----------------------------------------------------------------

async function branchesTab(box, ctx) {
  const { repo, repoId, base, life } = ctx;
  const msg = h("div", { id: "branches-msg" });
  const listBox = h("div", { id: "branches-box" });

  function stateCell(cell, c) {
    const last = (c && c.last_compaction) || {};
    const parts = [];
    if (last.state === "queued" || last.state === "running") {
      parts.push(h("span", { class: "tag state" }, last.state));
      if (last.started_us) parts.push(" ", h("span", { class: "muted" }, `started ${ago(last.started_us)}`));
    } else if (last.state) {
      parts.push(h("span", { class: `tag state ${last.state === "completed" ? "ok" : last.state === "failed" ? "bad" : ""}` }, last.state));
      if (last.finished_us) parts.push(" ", h("span", { class: "muted", title: new Date(last.finished_us / 1000).toISOString() }, ago(last.finished_us)));
    } else {
      parts.push(h("span", { class: "muted state" }, "never compacted"));
    }
    if (c && c.compacted) parts.push(" ", h("span", { class: "tag ok compacted", title: `meta-range ${c.meta_range_id}` }, "staging compacted"));
    if (last.message) parts.push(h("div", { class: "muted compaction-message" }, last.message));
    clear(cell, parts);
  }

  function branchRow(b) {
    const bpath = `${base}/branches/${enc(b.id)}`;
    const staged = h("td", { class: "num staged" }, "…");
    const state = h("td", { class: "compaction-state" }, h("span", { class: "muted" }, "…"));
    let current = null;
    const fill = (c) => {
      current = c;
      staged.textContent = count(c.staged_mutations);
      stateCell(state, c);
    };
    const compact = h("button", { type: "button", class: "compact-now", title: "Fold the branch's staged writes into a meta-range now (they stay uncommitted)" }, "Compact now");
    compact.addEventListener("click", async () => {
      compact.disabled = true;
      const before = (current && current.last_compaction && current.last_compaction.started_us) || 0;
      try {
        await api("POST", `${bpath}/compact`);
        stateCell(state, { ...(current || {}), last_compaction: { state: "queued" } });
        const deadline = Date.now() + COMPACTION_POLL_LIMIT_MS;
        for (;;) {
          await sleep(COMPACTION_POLL_MS);
          if (!life.alive) return;
          const c = await api("GET", `${bpath}/compact`);
          if (!life.alive) return;
          const last = c.last_compaction || {};
          const started = last.started_us > before;
          if (started && last.state !== "running" && last.state !== "queued") {
            fill(c);
            return;
          }
          if (started) fill(c);
          if (Date.now() > deadline) {
            state.append(h("div", { class: "muted" }, "no result after 30 s: reload the page to see it"));
            return;
          }
        }
      } catch (ex) {
        if (life.alive) clear(state, errorBox(ex));
      } finally {
        compact.disabled = false;
      }
    });
    const isDefault = b.id === repo.default_branch;
    const del = h("button", {
      type: "button", class: "delete-branch", disabled: isDefault,
      title: isDefault ? "The default branch cannot be deleted" : null,
      onclick: async () => {
        if (!confirm(`Delete branch ${b.id}? Its uncommitted changes are lost; its commits stay reachable from other refs only.`)) return;
        try {
          await api("DELETE", bpath);
          clear(msg, notice(`Deleted branch ${b.id}`, "delete-branch-result"));
          await list.show();
        } catch (ex) {
          clear(msg, errorBox(ex, "delete-branch-error"));
        }
      },
    }, "Delete");
    api("GET", `${bpath}/compact`).then((c) => { if (life.alive) fill(c); }, (ex) => {
      if (!life.alive) return;
      staged.textContent = "";
      clear(state, h("span", { class: "error-text", title: ex.message }, ex.message));
    });
    return h("tr", { dataset: { branch: b.id } },
      h("td", {}, h("a", { class: "branch-link", href: hashFor(repoId, "objects", { ref: b.id }) }, b.id),
        isDefault ? [" ", h("span", { class: "tag" }, "default")] : null),
      h("td", {}, h("a", { href: hashFor(repoId, "commits", { ref: b.id }) }, h("code", { class: "commit-id", title: b.commit_id }, short(b.commit_id)))),
      staged, state,
      h("td", { class: "row-actions" }, compact, del));
  }

  const list = pager(listBox,
    (after) => api("GET", `${base}/branches`, { query: { after, amount: BRANCHES_PAGE } }),
    (branches) => table(["Branch", "Commit", ["Staged mutations", { class: "num" }], "Staging compaction", ""],
      branches.map(branchRow), { id: "branches" }),
    { life, nextId: "branches-next", prevId: "branches-prev" });

  function createBranch() {
    formDialog("Create branch", [
      ["name", "Branch name", { placeholder: "my-branch" }],
      ["source", "Source ref (branch, tag or commit)", { value: ctx.ref }],
    ], "Create branch", async (v) => {
      const name = v.name.trim();
      // The answer is the new branch's commit id as text, not JSON.
      await api("POST", `${base}/branches`, { json: { name, source: v.source.trim() }, raw: true });
      clear(msg, notice(`Created branch ${name} from ${v.source.trim()}`, "create-branch-result"));
      await list.show();
    }, "create-branch-dialog");
  }

  await list.show({ rethrow: true });
  if (!life.alive) return;
  clear(box,
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "create-branch", class: "primary", onclick: createBranch }, "Create branch")),
    msg, listBox);
}

// --- commits -----------------------------------------------------------------

async function commitsTab(box, ctx) {
  const { repoId, ref, base, life } = ctx;
  const detail = h("div", { id: "commit-detail" });
  const listBox = h("div", { id: "commits-box" });
  let selected = ctx.query.commit || "";

  function show(c) {
    selected = c.id;
    replaceHash(hashFor(repoId, "commits", { ref: ctx.query.ref, commit: c.id }));
    for (const tr of listBox.querySelectorAll("tr[data-commit]")) tr.classList.toggle("selected", tr.dataset.commit === c.id);
    const meta = Object.entries(c.metadata || {});
    const diffBox = h("div", { id: "commit-diff-box" });
    clear(detail,
      h("h2", {}, "Commit ", h("code", { id: "commit-detail-id" }, c.id)),
      h("table", { class: "kv" }, h("tbody", {},
        h("tr", {}, h("th", {}, "Message"), h("td", { id: "commit-detail-message" }, c.message)),
        h("tr", {}, h("th", {}, "Committer"), h("td", {}, c.committer)),
        h("tr", {}, h("th", {}, "Date"), h("td", {}, whenSeconds(c.creation_date))),
        h("tr", {}, h("th", {}, "Parents"), h("td", {}, (c.parents || []).length
          ? c.parents.map((p) => [h("a", { href: hashFor(repoId, "objects", { ref: p }) }, h("code", { title: p }, short(p))), " "])
          : h("span", { class: "muted" }, "none"))),
        h("tr", {}, h("th", {}, "Browse"), h("td", {}, h("a", { href: hashFor(repoId, "objects", { ref: c.id }) }, "objects at this commit"))),
        meta.length ? h("tr", {}, h("th", {}, "Metadata"), h("td", {}, meta.map(([k, v]) => h("div", {}, h("code", {}, k), " = ", v)))) : null)),
      h("h3", {}, (c.parents || []).length ? ["Changes against its first parent ", h("code", {}, short(c.parents[0]))] : "Changes"),
      diffBox);
    if (!(c.parents || []).length) {
      clear(diffBox, h("p", { class: "muted" }, "The repository's first commit: it has no parent to compare with."));
      return;
    }
    const diff = pager(diffBox,
      (after) => api("GET", `${base}/refs/${enc(c.parents[0])}/diff/${enc(c.id)}`,
        { query: { type: "two_dot", amount: DIFF_PAGE, after } }),
      (items) => (items.length === 0 ? h("p", { class: "muted", id: "commit-diff-empty" }, "No changes.") : diffTable(items, "commit-diff")),
      { life, nextId: "commit-diff-next", prevId: "commit-diff-prev" });
    diff.show();
    detail.scrollIntoView({ block: "nearest" });
  }

  const list = pager(listBox,
    (after) => api("GET", `${base}/refs/${enc(ref)}/commits`, { query: { amount: COMMITS_PAGE, after } }),
    (commits) => (commits.length === 0
      ? h("p", { class: "muted" }, "No commits.")
      : table(["Commit", "Message", "Committer", "Date", "Parents"], commits.map((c) =>
        h("tr", { dataset: { commit: c.id }, class: `clickable${c.id === selected ? " selected" : ""}`, onclick: () => show(c) },
          h("td", {}, h("a", { class: "commit-link", href: hashFor(repoId, "commits", { ref: ctx.query.ref, commit: c.id }),
            onclick: (e) => { e.preventDefault(); } }, h("code", { title: c.id }, short(c.id)))),
          h("td", { class: "commit-message" }, c.message),
          h("td", {}, c.committer),
          h("td", {}, whenSeconds(c.creation_date)),
          h("td", {}, (c.parents || []).map((p) => [h("code", { title: p }, short(p)), " "])))), { id: "commits" })),
    { life, nextId: "older", prevId: "newer", nextLabel: "Older", prevLabel: "Newer" });

  await list.show({ rethrow: true });
  if (!life.alive) return;
  clear(box, h("h2", {}, "Commits of ", h("code", {}, ref)), listBox, detail);
  if (selected) {
    try {
      show(await api("GET", `${base}/commits/${enc(selected)}`));
    } catch (ex) {
      if (life.alive) clear(detail, errorBox(ex));
    }
  }
}

// --- compare and merge -------------------------------------------------------

async function compareTab(box, ctx) {
  const { repoId, base, life } = ctx;
  const left = h("input", { id: "left-ref", value: ctx.query.left || ctx.ref, size: 22, placeholder: "base branch" });
  const right = h("input", { id: "right-ref", value: ctx.query.right || "", size: 22, placeholder: "branch, tag or commit" });
  const msg = h("div", { id: "compare-msg" });
  const result = h("div", { id: "compare-result" });
  const form = h("form", { class: "inline", id: "compare-form" },
    h("label", { for: "left-ref", class: "muted" }, "Base"), left,
    h("span", { class: "muted" }, "…"),
    h("label", { for: "right-ref", class: "muted" }, "compared"), right,
    h("button", { type: "submit", class: "primary", id: "compare-submit" }, "Compare"));

  function mergeDialog(l, r) {
    formDialog(`Merge ${r} into ${l}`, [
      ["message", "Commit message", { type: "textarea", placeholder: `Merge '${r}' into '${l}'` }],
      ["strategy", "On conflicts", { type: "select", options: ["none", "dest-wins", "source-wins"] }],
    ], "Merge", async (v) => {
      const json = { message: v.message };
      if (v.strategy && v.strategy !== "none") json.strategy = v.strategy;
      const res = await api("POST", `${base}/refs/${enc(r)}/merge/${enc(l)}`, { json });
      if (!life.alive) return;
      clear(msg, notice(["Merged ", h("code", {}, r), " into ", h("code", {}, l), ": ",
        h("a", { href: hashFor(repoId, "commits", { ref: l, commit: res.reference }) }, h("code", { id: "merge-reference" }, res.reference))], "merge-result"));
      await compare();
    }, "merge-dialog");
  }

  async function compare() {
    const l = left.value.trim(), r = right.value.trim();
    if (!l || !r) {
      clear(result, errorBox("Name both refs to compare: a base and a ref to compare with it.", "compare-error"));
      return;
    }
    replaceHash(hashFor(repoId, "compare", { ref: ctx.query.ref, left: l, right: r }));
    const diffBox = h("div", { id: "diff-box" });
    const diff = pager(diffBox,
      (after) => api("GET", `${base}/refs/${enc(l)}/diff/${enc(r)}`, { query: { amount: DIFF_PAGE, after } }),
      (items) => (items.length === 0
        ? h("p", { class: "muted", id: "no-diff" }, `No differences: ${r} has nothing ${l} lacks.`)
        : diffTable(items, "diff")),
      { life, nextId: "diff-next", prevId: "diff-prev" });
    clear(result, h("p", { class: "muted" }, "Comparing…"));
    try {
      await diff.show({ rethrow: true });
    } catch (ex) {
      // A ref that does not exist (say): the server's message, and nothing to merge.
      if (life.alive) clear(result, errorBox(ex, "compare-error"));
      return;
    }
    if (!life.alive) return;
    clear(result,
      h("div", { class: "section-head" },
        h("h2", {}, "Changes on ", h("code", {}, r), " since it diverged from ", h("code", {}, l)),
        h("button", { type: "button", id: "merge", class: "primary", onclick: () => mergeDialog(l, r) }, `Merge ${r} into ${l}`)),
      diffBox);
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); clear(msg); compare(); });
  clear(box, form, msg, result);
  if (left.value && right.value) await compare();
}

// --- actions -------------------------------------------------------------------

// The runs of the repository's actions (hooks on its events), newest first;
// a run's hooks with their status, and a hook's output.
async function actionsTab(box, ctx) {
  const { repoId, base, life } = ctx;
  const detail = h("div", { id: "run-detail" });
  const listBox = h("div", { id: "runs-box" });
  let selected = ctx.query.run || "";
  const when = (t) => (t && !t.startsWith("0001-") ? new Date(t).toLocaleString() : "");

  async function showOutput(run, hook, into) {
    try {
      const res = await api("GET", `${base}/actions/runs/${enc(run)}/hooks/${enc(hook.hook_run_id)}/output`, { raw: true });
      const text = await res.text();
      if (!life.alive) return;
      clear(into, text ? h("pre", { class: "hook-output", id: `hook-output-${hook.hook_run_id}` }, text)
        : h("p", { class: "muted" }, hook.status === "skipped" ? "Skipped: an earlier hook of its action failed." : "No output."));
    } catch (ex) {
      if (life.alive) clear(into, errorBox(ex));
    }
  }

  async function show(run) {
    selected = run.run_id;
    replaceHash(hashFor(repoId, "actions", { ref: ctx.query.ref, run: run.run_id }));
    for (const tr of listBox.querySelectorAll("tr[data-run]")) tr.classList.toggle("selected", tr.dataset.run === run.run_id);
    const output = h("div", { id: "hook-output-box" });
    let hooks;
    try {
      hooks = (await api("GET", `${base}/actions/runs/${enc(run.run_id)}/hooks`, { query: { amount: 1000 } })).results;
    } catch (ex) {
      if (life.alive) clear(detail, errorBox(ex));
      return;
    }
    if (!life.alive) return;
    clear(detail,
      h("h2", {}, "Run ", h("code", { id: "run-detail-id" }, run.run_id), " ", h("span", { class: `status ${run.status}` }, run.status)),
      table(["Hook run", "Action", "Hook", "Status", "Started", "Ended"], hooks.map((k) =>
        h("tr", { class: "clickable", dataset: { hook: k.hook_run_id }, onclick: () => showOutput(run.run_id, k, output) },
          h("td", {}, h("code", {}, k.hook_run_id)), h("td", {}, k.action), h("td", {}, k.hook_id),
          h("td", { class: `status ${k.status}` }, k.status), h("td", {}, when(k.start_time)), h("td", {}, when(k.end_time)))),
      { id: "run-hooks" }),
      output);
    if (hooks.length) await showOutput(run.run_id, hooks[0], output);
  }

  const list = pager(listBox,
    (after) => api("GET", `${base}/actions/runs`, { query: { amount: RUNS_PAGE, after } }),
    (runs) => (runs.length === 0
      ? h("p", { class: "muted", id: "no-runs" }, "No action has run yet. Actions are files under _lakefs_actions/ (docs/actions.md).")
      : table(["Run", "Event", "Branch", "Commit", "Status", "Started"], runs.map((r) =>
        h("tr", { dataset: { run: r.run_id }, class: `clickable${r.run_id === selected ? " selected" : ""}`, onclick: () => show(r) },
          h("td", {}, h("code", {}, r.run_id)), h("td", {}, r.event_type), h("td", {}, r.branch),
          h("td", {}, r.commit_id ? h("code", { title: r.commit_id }, short(r.commit_id)) : ""),
          h("td", { class: `status ${r.status}` }, r.status), h("td", {}, when(r.start_time)))), { id: "runs" })),
    { life, nextId: "runs-older", prevId: "runs-newer", nextLabel: "Older", prevLabel: "Newer" });

  await list.show({ rethrow: true });
  if (!life.alive) return;
  clear(box, h("h2", {}, "Action runs"), listBox, detail);
  if (selected) {
    try {
      await show(await api("GET", `${base}/actions/runs/${enc(selected)}`));
    } catch (ex) {
      if (life.alive) clear(detail, errorBox(ex));
    }
  }
}

// --- tags --------------------------------------------------------------------

async function tagsTab(box, ctx) {
  const { repoId, base, life } = ctx;
  const msg = h("div", { id: "tags-msg" });
  const listBox = h("div", { id: "tags-box" });
  const list = pager(listBox,
    (after) => api("GET", `${base}/tags`, { query: { after, amount: TAGS_PAGE } }),
    (tags) => (tags.length === 0
      ? h("p", { class: "muted", id: "no-tags" }, "No tags yet.")
      : table(["Tag", "Commit", ""], tags.map((t) =>
        h("tr", { dataset: { tag: t.id } },
          h("td", {}, h("a", { class: "tag-link", href: hashFor(repoId, "objects", { ref: t.id }) }, t.id)),
          h("td", {}, h("a", { href: hashFor(repoId, "commits", { ref: t.id }) }, h("code", { title: t.commit_id }, short(t.commit_id)))),
          h("td", { class: "row-actions" }, h("button", {
            type: "button", class: "delete-tag",
            onclick: async () => {
              if (!confirm(`Delete tag ${t.id}?`)) return;
              try {
                await api("DELETE", `${base}/tags/${enc(t.id)}`);
                clear(msg, notice(`Deleted tag ${t.id}`, "delete-tag-result"));
                await list.show();
              } catch (ex) {
                clear(msg, errorBox(ex, "delete-tag-error"));
              }
            },
          }, "Delete")))), { id: "tags" })),
    { life, nextId: "tags-next", prevId: "tags-prev" });

  function createTag() {
    formDialog("Create tag", [
      ["id", "Tag name", { placeholder: "v1.0" }],
      ["ref", "Ref to tag (branch, tag or commit)", { value: ctx.ref }],
    ], "Create tag", async (v) => {
      const t = await api("POST", `${base}/tags`, { json: { id: v.id.trim(), ref: v.ref.trim() } });
      clear(msg, notice(`Created tag ${t.id} at ${short(t.commit_id)}`, "create-tag-result"));
      await list.show();
    }, "create-tag-dialog");
  }

  await list.show({ rethrow: true });
  if (!life.alive) return;
  clear(box,
    h("div", { class: "toolbar" }, h("button", { type: "button", id: "create-tag", class: "primary", onclick: createTag }, "Create tag")),
    msg, listBox);
}
