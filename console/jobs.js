// Jobs: each ingest job's head, the node's head, lag, retries and last error.
import { h, clear, table, errorBox, api, count, enc, onLeave, pageLife } from "./app.js";

function render(list, jobs, refresh, error) {
  // Stop or start a job (POST /api/v1/jobs/{dataset}/stop|start), then show it as it is.
  const toggle = (j) => async (ev) => {
    ev.target.disabled = true;
    try {
      await api("POST", `/api/v1/jobs/${enc(j.dataset)}/${j.running ? "stop" : "start"}`);
      clear(error);
      await refresh();
    } catch (ex) {
      clear(error, errorBox(ex, "jobs-error"));
      ev.target.disabled = false;
    }
  };
  clear(list, jobs.length === 0
    ? h("p", { class: "muted", id: "no-jobs" }, "No ingest jobs are configured ([[jobs]] in the config).")
    : table(["Dataset", "Source", "State", ["Head", { class: "num" }], ["Node head", { class: "num" }],
      ["Lag", { class: "num" }], ["Segments", { class: "num" }], ["Reorgs", { class: "num" }],
      ["Retries", { class: "num" }], "Last error", ""],
      jobs.map((j) => h("tr", { "data-job": j.dataset },
        h("td", {}, j.dataset),
        h("td", {}, j.source),
        h("td", {}, h("span", { class: j.running ? "tag ok" : "tag bad" }, j.running ? "running" : "stopped")),
        h("td", { class: "num head" }, j.head === null ? "—" : count(j.head)),
        h("td", { class: "num" }, j.node_head === null ? "—" : count(j.node_head)),
        h("td", { class: "num lag" }, j.lag === null || j.lag === undefined ? "—" : count(j.lag)),
        h("td", { class: "num" }, count(j.segments_written)),
        h("td", { class: "num" }, count(j.reorgs)),
        h("td", { class: "num retries" }, count(j.retries)),
        h("td", { class: "last-error" }, j.last_error ? h("span", { class: "tag bad" }, j.last_error) : ""),
        h("td", {}, h("button", { type: "button", class: j.running ? "stop-job" : "start-job", onclick: toggle(j) },
          j.running ? "Stop" : "Start")),
      )), { id: "jobs" }));
}

export async function jobsPage(main) {
  const life = pageLife();
  const list = h("div"), error = h("div");
  clear(main, h("h1", {}, "Ingest jobs"), error, list, h("p", { class: "muted" }, "Refreshes every 2 s."));
  const refresh = async () => {
    const jobs = (await api("GET", "/api/v1/jobs")).jobs;
    if (!life.alive) return;
    document.getElementById("jobs-refresh-error")?.remove();  // the server answers again
    render(list, jobs, refresh, error);
  };
  await refresh();
  const timer = setInterval(() => refresh().catch((ex) => { if (life.alive) clear(error, errorBox(ex, "jobs-refresh-error")); }), 2000);
  onLeave(() => clearInterval(timer));
}
