// The Objects tab: a ref's objects under a prefix (one page per request, `/`
// as delimiter), each one's preview and download; on a branch also its
// deletion, an upload form, the branch's uncommitted changes and a commit.
import { h, clear, errorBox, notice, table, formDialog, bytes, count, whenSeconds, api, enc } from "../app.js";
import { DIFF_PAGE, short, hashFor, diffTable } from "./common.js";
import { pager } from "./pager.js";

const OBJECTS_PAGE = 100;
const PREVIEW_BYTES = 65536;

// `view` holds the tab's boxes, its two listings and what they were made for
// (prefix, branch); its parts below render into it.
export async function objectsTab(box, ctx) {
  const { ref, life } = ctx;
  const prefix = ctx.query.prefix || "";
  const branch = await isBranch(ctx);
  if (!life.alive) return;

  const view = {
    prefix,
    branch,
    msg: h("div", { id: "objects-msg" }),
    previewBox: h("div", { id: "preview-box" }),
    listBox: h("div", { id: "objects-box" }),
    changesBox: h("div", { id: "changes-box" }),
    list: null,
    changes: null,
  };
  // After a write: the objects again, and the changes from their first page.
  view.refresh = () => Promise.all([view.list.show(), view.changes && view.changes.reset()]);
  view.list = objectList(ctx, view);
  view.changes = branch ? changeList(ctx, view) : null;

  await Promise.all([view.list.show({ rethrow: true }), view.changes && view.changes.show()]);
  if (!life.alive) return;
  clear(box,
    breadcrumbs(ctx, prefix),
    view.msg,
    branch ? uploadForm(ctx, prefix, view.msg, view.refresh) : null,
    view.previewBox,
    view.listBox,
    branch
      ? h("section", { id: "changes-section" },
        h("div", { class: "section-head" },
          h("h2", {}, "Uncommitted changes"),
          h("button", { type: "button", id: "commit", class: "primary", onclick: () => commitDialog(ctx, view) }, "Commit…")),
        view.changesBox)
      : h("p", { class: "muted", id: "read-only-ref" }, `${ref} is not a branch: its objects can be read, not changed.`));
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

function objectUrl(ctx) {
  return `${ctx.base}/refs/${enc(ctx.ref)}/objects`;
}

// --- the listing ---------------------------------------------------------------

function objectList(ctx, view) {
  const { base, ref, life } = ctx;
  const { prefix } = view;
  return pager(view.listBox,
    (after) => api("GET", `${base}/refs/${enc(ref)}/objects/ls`,
      { query: { prefix, delimiter: "/", amount: OBJECTS_PAGE, after } }),
    (items) => {
      if (items.length === 0) {
        return h("p", { class: "muted", id: "no-objects" },
          prefix ? `Nothing under ${prefix} on ${ref}.` : `No objects on ${ref} yet.`);
      }
      return table(["Name", ["Size", { class: "num" }], "Modified", "Checksum", ""],
        items.map((o) => objectRow(ctx, view, o)), { id: "objects" });
    },
    { life, nextId: "next-page", prevId: "prev-page" });
}

// A row of the listing: a common prefix links into it; an object has its buttons.
function objectRow(ctx, view, o) {
  const { prefix } = view;
  const name = o.path.startsWith(prefix) ? o.path.slice(prefix.length) : o.path;
  if (o.path_type === "common_prefix") {
    return h("tr", { dataset: { path: o.path }, class: "prefix-row" },
      h("td", {}, h("a", { class: "prefix-link", href: hashFor(ctx.repoId, "objects", { ref: ctx.query.ref, prefix: o.path }) }, name)),
      h("td"), h("td"), h("td"), h("td"));
  }
  const pv = h("button", { type: "button", class: "preview", onclick: () => preview(ctx, view.previewBox, o, pv) }, "Preview");
  const dl = h("button", { type: "button", class: "download", onclick: () => download(ctx, o) }, "Download");
  const del = view.branch ? h("button", { type: "button", class: "delete-object", onclick: () => remove(ctx, view, o) }, "Delete") : null;
  return h("tr", { dataset: { path: o.path } },
    h("td", {}, h("code", { class: "object-name" }, name)),
    h("td", { class: "num", title: `${count(o.size_bytes)} bytes` }, bytes(o.size_bytes)),
    h("td", {}, whenSeconds(o.mtime)),
    h("td", {}, h("code", { title: o.checksum }, short(o.checksum))),
    h("td", { class: "row-actions" }, pv, dl, del));
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

// --- one object ----------------------------------------------------------------

async function preview(ctx, previewBox, o, button) {
  const { life } = ctx;
  button.disabled = true;
  const head = h("div", { class: "section-head" },
    h("h2", {}, "Preview of ", h("code", {}, o.path)),
    h("button", { type: "button", id: "preview-close", onclick: () => clear(previewBox) }, "Close"));
  try {
    // The first PREVIEW_BYTES: the server clamps the range to the object (an empty object is a 416).
    const res = await api("GET", objectUrl(ctx), {
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

// A plain link: the browser streams the object to disk with the session cookie (nothing held in the page).
function download(ctx, o) {
  const url = `${objectUrl(ctx)}?path=${enc(o.path)}`;
  const a = h("a", { href: url, download: o.path.split("/").pop() || "object", style: "display:none" });
  document.body.append(a);
  a.click();
  a.remove();
}

async function remove(ctx, view, o) {
  const { base, ref } = ctx;
  if (!confirm(`Delete ${o.path} from branch ${ref}? (The deletion is an uncommitted change.)`)) return;
  try {
    await api("DELETE", `${base}/branches/${enc(ref)}/objects`, { query: { path: o.path } });
    clear(view.msg, notice(`Deleted ${o.path}`, "delete-result"));
    await view.refresh();
  } catch (ex) {
    clear(view.msg, errorBox(ex, "delete-error"));
  }
}

// --- a branch's writes -----------------------------------------------------------

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

function changeList(ctx, view) {
  const { base, ref, life } = ctx;
  return pager(view.changesBox,
    (after) => api("GET", `${base}/branches/${enc(ref)}/diff`, { query: { amount: DIFF_PAGE, after } }),
    (items) => (items.length === 0
      ? h("p", { class: "muted", id: "no-changes" }, `No uncommitted changes on ${ref}.`)
      : diffTable(items, "changes")),
    { life, nextId: "changes-next", prevId: "changes-prev" });
}

function commitDialog(ctx, view) {
  const { base, ref } = ctx;
  formDialog(`Commit the changes of ${ref}`, [
    ["message", "Commit message", { type: "textarea", placeholder: "What changed and why" }],
  ], "Commit", async (v) => {
    const c = await api("POST", `${base}/branches/${enc(ref)}/commits`, { json: { message: v.message } });
    clear(view.msg, notice(`Committed ${short(c.id)} on ${ref}: ${c.message}`, "commit-result"));
    await view.refresh();
  }, "commit-dialog");
}
