// The catalog: repositories, and per repository its objects (browse a ref by
// prefix, preview, download, upload, uncommitted changes, commit), branches
// (with their staged mutations and staging compaction), commits (log and each
// commit's diff), compare and merge, tags, and action runs. Everything through
// the lakeFS API at /api/v1 with the logged-in key, one page per request: a
// listing never walks a whole branch.
//
// This file holds the repositories page and a repository's page (its head,
// ref selector and tab bar); each tab is a module of catalog/, and what they
// share is catalog/common.js and catalog/pager.js.
import {
  h, clear, errorBox, notice, table, formDialog, whenSeconds, api, go, pageLife, setupState, setupPage,
} from "./app.js";
import { repoPath, hashFor } from "./catalog/common.js";
import { pager } from "./catalog/pager.js";
import { objectsTab } from "./catalog/objects.js";
import { branchesTab } from "./catalog/branches.js";
import { commitsTab } from "./catalog/commits.js";
import { compareTab } from "./catalog/compare.js";
import { tagsTab } from "./catalog/tags.js";
import { actionsTab } from "./catalog/actions.js";

const REPOS_PAGE = 50;
const TABS = ["objects", "branches", "commits", "compare", "tags", "actions"];
const TAB_LABELS = { objects: "Objects", branches: "Branches", commits: "Commits", compare: "Compare", tags: "Tags", actions: "Actions" };
const TAB_RENDER = { objects: objectsTab, branches: branchesTab, commits: commitsTab, compare: compareTab, tags: tagsTab, actions: actionsTab };

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
  const render = TAB_RENDER[tab];
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
