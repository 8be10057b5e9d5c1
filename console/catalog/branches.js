// The Branches tab: each branch with its commit, its staged-mutation count and
// its staging-compaction state, a "Compact now" button that asks for a
// compaction and polls until it ends, deletion, and a dialog that creates one.
import { h, clear, errorBox, notice, table, formDialog, count, ago, api, enc } from "../app.js";
import { short, hashFor } from "./common.js";
import { pager } from "./pager.js";

const BRANCHES_PAGE = 50;
const COMPACTION_POLL_MS = 1000;
const COMPACTION_POLL_LIMIT_MS = 30000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function branchesTab(box, ctx) {
  const { base, life } = ctx;
  // The tab's message line and listing, which a row's buttons and the dialog update.
  const view = { msg: h("div", { id: "branches-msg" }), listBox: h("div", { id: "branches-box" }), list: null };
  view.list = pager(view.listBox,
    (after) => api("GET", `${base}/branches`, { query: { after, amount: BRANCHES_PAGE } }),
    (branches) => table(["Branch", "Commit", ["Staged mutations", { class: "num" }], "Staging compaction", ""],
      branches.map((b) => branchRow(ctx, view, b)), { id: "branches" }),
    { life, nextId: "branches-next", prevId: "branches-prev" });

  await view.list.show({ rethrow: true });
  if (!life.alive) return;
  clear(box,
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "create-branch", class: "primary", onclick: () => createBranch(ctx, view) }, "Create branch")),
    view.msg, view.listBox);
}

function branchRow(ctx, view, b) {
  const { repo, repoId, base, life } = ctx;
  const bpath = `${base}/branches/${enc(b.id)}`;
  const cells = compactionCells();
  const compact = compactButton(ctx, bpath, cells);
  const isDefault = b.id === repo.default_branch;
  const del = deleteButton(ctx, view, b, bpath, isDefault);
  api("GET", `${bpath}/compact`).then((c) => { if (life.alive) cells.fill(c); }, (ex) => {
    if (!life.alive) return;
    cells.staged.textContent = "";
    clear(cells.state, h("span", { class: "error-text", title: ex.message }, ex.message));
  });
  return h("tr", { dataset: { branch: b.id } },
    h("td", {}, h("a", { class: "branch-link", href: hashFor(repoId, "objects", { ref: b.id }) }, b.id),
      isDefault ? [" ", h("span", { class: "tag" }, "default")] : null),
    h("td", {}, h("a", { href: hashFor(repoId, "commits", { ref: b.id }) }, h("code", { class: "commit-id", title: b.commit_id }, short(b.commit_id)))),
    cells.staged, cells.state,
    h("td", { class: "row-actions" }, compact, del));
}

// --- staging compaction ----------------------------------------------------------

// A row's staged-count and compaction-state cells, and the last answer of
// GET …/branches/{b}/compact that filled them (`current`).
function compactionCells() {
  const cells = {
    staged: h("td", { class: "num staged" }, "…"),
    state: h("td", { class: "compaction-state" }, h("span", { class: "muted" }, "…")),
    current: null,
  };
  cells.fill = (c) => {
    cells.current = c;
    cells.staged.textContent = count(c.staged_mutations);
    stateCell(cells.state, c);
  };
  return cells;
}

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

function compactButton(ctx, bpath, cells) {
  const compact = h("button", { type: "button", class: "compact-now", title: "Fold the branch's staged writes into a meta-range now (they stay uncommitted)" }, "Compact now");
  compact.addEventListener("click", async () => {
    compact.disabled = true;
    try {
      await compactAndWait(ctx, bpath, cells);
    } catch (ex) {
      if (ctx.life.alive) clear(cells.state, errorBox(ex));
    } finally {
      compact.disabled = false;
    }
  });
  return compact;
}

// Asks for a compaction, then polls until one that started after the request
// has ended (or gives up after COMPACTION_POLL_LIMIT_MS), filling the cells.
async function compactAndWait(ctx, bpath, cells) {
  const { life } = ctx;
  const before = (cells.current && cells.current.last_compaction && cells.current.last_compaction.started_us) || 0;
  await api("POST", `${bpath}/compact`);
  stateCell(cells.state, { ...(cells.current || {}), last_compaction: { state: "queued" } });
  const deadline = Date.now() + COMPACTION_POLL_LIMIT_MS;
  for (;;) {
    await sleep(COMPACTION_POLL_MS);
    if (!life.alive) return;
    const c = await api("GET", `${bpath}/compact`);
    if (!life.alive) return;
    const last = c.last_compaction || {};
    const started = last.started_us > before;
    if (started && last.state !== "running" && last.state !== "queued") {
      cells.fill(c);
      return;
    }
    if (started) cells.fill(c);
    if (Date.now() > deadline) {
      cells.state.append(h("div", { class: "muted" }, "no result after 30 s: reload the page to see it"));
      return;
    }
  }
}

// --- create and delete ---------------------------------------------------------

function deleteButton(ctx, view, b, bpath, isDefault) {
  return h("button", {
    type: "button", class: "delete-branch", disabled: isDefault,
    title: isDefault ? "The default branch cannot be deleted" : null,
    onclick: async () => {
      if (!confirm(`Delete branch ${b.id}? Its uncommitted changes are lost; its commits stay reachable from other refs only.`)) return;
      try {
        await api("DELETE", bpath);
        clear(view.msg, notice(`Deleted branch ${b.id}`, "delete-branch-result"));
        await view.list.show();
      } catch (ex) {
        clear(view.msg, errorBox(ex, "delete-branch-error"));
      }
    },
  }, "Delete");
}

function createBranch(ctx, view) {
  const { base } = ctx;
  formDialog("Create branch", [
    ["name", "Branch name", { placeholder: "my-branch" }],
    ["source", "Source ref (branch, tag or commit)", { value: ctx.ref }],
  ], "Create branch", async (v) => {
    const name = v.name.trim();
    // The answer is the new branch's commit id as text, not JSON.
    await api("POST", `${base}/branches`, { json: { name, source: v.source.trim() }, raw: true });
    clear(view.msg, notice(`Created branch ${name} from ${v.source.trim()}`, "create-branch-result"));
    await view.list.show();
  }, "create-branch-dialog");
}
