// What the catalog's tabs share: their addresses (the API path of a
// repository, the hash of a tab), short commit ids, and the table of a diff
// (uncommitted changes, a commit against its parent, two refs compared).
import { h, table, bytes, enc } from "../app.js";

export const DIFF_PAGE = 100;

export function short(id) {
  return id ? String(id).slice(0, 12) : "";
}

export function repoPath(repo) {
  return `/api/v1/repositories/${enc(repo)}`;
}

// The hash of a repository tab with its query parameters (empty ones left out).
export function hashFor(repo, tab, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return `#/repositories/${enc(repo)}/${tab}${s ? "?" + s : ""}`;
}

// Records where the page is (for reload and sharing) without re-rendering it.
export function replaceHash(hash) {
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

function diffTag(type) {
  const cls = { added: "tag ok", removed: "tag bad", conflict: "tag bad" }[type] || "tag";
  return h("span", { class: `${cls} diff-${type}` }, type);
}

export function diffTable(items, id) {
  return table(["Change", "Path", ["Size", { class: "num" }]], items.map((d) =>
    h("tr", { dataset: { path: d.path, type: d.type } },
      h("td", {}, diffTag(d.type)),
      h("td", {}, h("code", {}, d.path), d.path_type === "common_prefix" ? h("span", { class: "muted" }, " (prefix)") : null),
      h("td", { class: "num" }, d.size_bytes === undefined ? "" : bytes(d.size_bytes)))), { id });
}
