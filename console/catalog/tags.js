// The Tags tab: the repository's tags (paged), deletion, and a dialog that
// creates one.
import { h, clear, errorBox, notice, table, formDialog, api, enc } from "../app.js";
import { short, hashFor } from "./common.js";
import { pager } from "./pager.js";

const TAGS_PAGE = 50;

export async function tagsTab(box, ctx) {
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
