// The Compare tab: what a ref has that a base lacks (their diff, paged), and a
// dialog that merges it into the base (strategy none, dest-wins, source-wins).
import { h, clear, errorBox, notice, formDialog, api, enc } from "../app.js";
import { DIFF_PAGE, hashFor, replaceHash, diffTable } from "./common.js";
import { pager } from "./pager.js";

export async function compareTab(box, ctx) {
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
