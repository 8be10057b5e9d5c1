// The Actions tab: the runs of the repository's actions (hooks on its events),
// newest first; a run's hooks with their status, and a hook's output.
import { h, clear, errorBox, table, api, enc } from "../app.js";
import { short, hashFor, replaceHash } from "./common.js";
import { pager } from "./pager.js";

const RUNS_PAGE = 50;

export async function actionsTab(box, ctx) {
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
