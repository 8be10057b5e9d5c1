// The Commits tab: a ref's log (one page per request, newer and older), and a
// selected commit's details with its diff against its first parent.
import { h, clear, errorBox, table, whenSeconds, api, enc } from "../app.js";
import { DIFF_PAGE, short, hashFor, replaceHash, diffTable } from "./common.js";
import { pager } from "./pager.js";

const COMMITS_PAGE = 50;

export async function commitsTab(box, ctx) {
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
