// Tables: every table's totals, and per table its file-size histogram against
// the target, live files and write amplification over time (append history +
// pass history), the last passes, the GC backlog, and a pass run on demand
// with its progress streamed (POST …/compact?stream=true, JSON lines).
import { h, clear, errorBox, table, card, api, bytes, count, when, ago, enc, onLeave, pageLife } from "./app.js";

const PAGE = 200;

function tablePath(ds, t) {
  return `/api/v1/datasets/${enc(ds)}/tables/${enc(t)}`;
}

function blocks(t) {
  return t.first_block === null || t.first_block === undefined ? "—" : `${count(t.first_block)} – ${count(t.last_block)}`;
}

export async function listPage(main, _params, query) {
  const after = query.after || "";
  const page = await api("GET", "/api/v1/tables", { query: { after, amount: PAGE } });
  const rows = page.tables.map((t) =>
    h("tr", { "data-table": t.name },
      h("td", {}, h("a", { class: "table-link", href: `#/tables/${enc(t.dataset)}/${enc(t.table)}` }, t.name)),
      h("td", { class: "num files" }, count(t.files)),
      h("td", { class: "num" }, count(t.rows)),
      h("td", { class: "num" }, bytes(t.bytes)),
      h("td", { class: "num" }, bytes(t.stored_bytes)),
      h("td", { class: "num" }, t.files ? (t.stored_bytes / t.files > 0 ? bytes(t.stored_bytes / t.files) : "") : "—"),
      h("td", { class: "num" }, blocks(t))));
  clear(main,
    h("h1", {}, "Tables"),
    page.tables.length === 0 && !after
      ? h("p", { class: "muted", id: "no-tables" }, "No tables yet. An ingest job ([[jobs]] in the config) or `sediment table create` makes one.")
      : table(["Table", ["Files", { class: "num" }], ["Rows", { class: "num" }], ["Bytes", { class: "num" }],
        ["Stored", { class: "num" }], ["Mean file", { class: "num" }], ["Blocks", { class: "num" }]], rows, { id: "tables" }),
    h("div", { class: "pager" },
      after ? h("a", { href: "#/tables" }, "First page") : null,
      page.pagination.has_more
        ? h("a", { id: "next-tables", href: `#/tables?after=${enc(page.pagination.next_offset)}` }, "Next page")
        : null));
}

// --- one table -------------------------------------------------------------

const WINDOWS = { "15 min": 15 * 60, "1 hour": 3600, "6 hours": 6 * 3600, "24 hours": 86400 };
// The append history comes summed per bucket: about this many buckets a window, whatever its length.
const BUCKETS = 900;
// At most this many passes of a window are loaded (newest first); the page says when a window holds more.
const MAX_PASSES = 5000;

// Passes since `since`, newest first.
async function passesSince(base, since, cap) {
  const out = [];
  let after = "";
  for (;;) {
    const p = await api("GET", base + "/passes", { query: { since_us: since, after, amount: Math.min(1000, cap - out.length) } });
    out.push(...p.passes);
    if (!p.pagination.has_more) return { passes: out, truncated: false };
    if (out.length >= cap) return { passes: out, truncated: true };
    after = p.pagination.next_offset;
  }
}

// The window's data. `prev` (the last load of the same window): only the buckets from its newest on
// are fetched again.
async function load(ds, t, windowSeconds, prev) {
  const base = tablePath(ds, t);
  const since = Math.floor((Date.now() / 1000 - windowSeconds) * 1e6);
  const bucketS = Math.max(1, Math.round(windowSeconds / BUCKETS));
  let buckets;
  if (prev && prev.bucketS === bucketS && prev.buckets.length) {
    const last = prev.buckets[prev.buckets.length - 1].t_us;  // may have grown since: fetched again
    const fresh = await api("GET", base + "/history", { query: { since_us: last, bucket_s: bucketS } });
    buckets = prev.buckets.filter((b) => b.t_us >= since - bucketS * 1e6 && b.t_us < last).concat(fresh.buckets);
  } else {
    buckets = (await api("GET", base + "/history", { query: { since_us: since, bucket_s: bucketS } })).buckets;
  }
  const [info, histogram, passes, gc] = await Promise.all([
    api("GET", base),
    api("GET", base + "/histogram"),
    passesSince(base, since, MAX_PASSES),
    api("GET", base + "/gc"),
  ]);
  return { info, histogram, gc, since, bucketS, buckets, passes: passes.passes, passesTruncated: passes.truncated };
}

// Live files over the window, walked back from the current count: an append
// added one file; a pass left files_after, and before it each merge of n
// files had n where it left one.
function liveFilesSeries(d) {
  const half = (d.bucketS * 1e6) / 2;  // a bucket's appends are drawn at its middle
  const events = [
    ...d.buckets.map((b) => ({ t: b.t_us + half, kind: "appends", n: b.appends })),
    ...d.passes.filter((p) => !p.error).map((p) => ({ t: p.t_us + p.seconds * 1e6, kind: "pass", p })),
  ].sort((a, b) => b.t - a.t);
  let cur = d.info.files;
  const pts = [{ x: Date.now(), y: cur }];
  for (const e of events) {
    if (e.kind === "appends") {
      pts.push({ x: e.t / 1000, y: cur });
      cur = Math.max(0, cur - e.n);
    } else {
      cur = e.p.files_after;
      pts.push({ x: e.t / 1000, y: cur });
      for (const m of e.p.merges) if (m.outcome === "merged") cur += m.inputs - 1;
    }
    pts.push({ x: e.t / 1000 - 0.001, y: cur });
  }
  // From the first event (less a little), not the window's start: a young table fills the chart.
  const first = events.length ? events[events.length - 1].t / 1000 - 5000 : d.since / 1000;
  pts.push({ x: Math.max(d.since / 1000, first), y: cur });
  return pts.reverse();
}

// Write amplification since the window began: (bytes appended + bytes merges wrote) / bytes appended,
// in stored bytes.
function writeAmpSeries(d) {
  const events = [
    ...d.buckets.map((b) => ({ t: b.t_us + d.bucketS * 1e6, appended: b.stored_bytes, merged: 0 })),
    ...d.passes.map((p) => ({
      t: p.t_us + p.seconds * 1e6, appended: 0,
      merged: p.merges.reduce((s, m) => s + (m.outcome === "merged" ? m.bytes_out : 0), 0),
    })),
  ].sort((a, b) => a.t - b.t);
  let appended = 0, merged = 0;
  const pts = [];
  for (const e of events) {
    appended += e.appended;
    merged += e.merged;
    if (appended > 0) pts.push({ x: e.t / 1000, y: (appended + merged) / appended });
  }
  return pts;
}

function timeAxis() {
  return {
    type: "linear",
    ticks: { maxTicksLimit: 8, callback: (v) => new Date(v).toLocaleTimeString("en-GB") },
  };
}

function makeCharts(el) {
  const hist = new Chart(el.hist, {
    type: "bar",
    data: { labels: [], datasets: [{ label: "files", data: [], backgroundColor: [] }] },
    options: {
      animation: false, maintainAspectRatio: false,
      plugins: { legend: { display: false }, title: { display: true, text: "" },
        tooltip: { callbacks: { afterLabel: (c) => bytes(c.chart.$bytes?.[c.dataIndex]) } } },
      scales: { y: { beginAtZero: true, title: { display: true, text: "files" } } },
    },
  });
  const files = new Chart(el.files, {
    type: "line",
    data: { datasets: [{ label: "live files", data: [], borderColor: "#2563eb", pointRadius: 0, stepped: true, borderWidth: 2 }] },
    options: { animation: false, maintainAspectRatio: false, parsing: false,
      plugins: { legend: { display: false }, title: { display: true, text: "Live files" } },
      scales: { x: timeAxis(), y: { beginAtZero: true } } },
  });
  const wa = new Chart(el.wa, {
    type: "line",
    data: { datasets: [{ label: "write amplification", data: [], borderColor: "#b45309", pointRadius: 0, borderWidth: 2 }] },
    options: { animation: false, maintainAspectRatio: false, parsing: false,
      plugins: { legend: { display: false }, title: { display: true, text: "Write amplification (bytes written ÷ bytes appended)" } },
      scales: { x: timeAxis(), y: { beginAtZero: true } } },
  });
  return { hist, files, wa };
}

function passRows(passes) {
  return passes.slice(0, 25).map((p) => {
    const by = (o) => p.merges.filter((m) => m.outcome === o);
    const merged = by("merged"), failed = by("failed"), discarded = by("discarded");
    const inB = merged.reduce((s, m) => s + m.bytes_in, 0), outB = merged.reduce((s, m) => s + m.bytes_out, 0);
    const inFiles = merged.reduce((s, m) => s + m.inputs, 0);
    const detail = [
      p.error ? h("div", { class: "tag bad pass-error" }, `the pass failed: ${p.error}`) : null,
      merged.length ? `${inFiles} files → ${merged.length} (${bytes(inB)} → ${bytes(outB)})` : null,
      ...failed.map((m) => h("div", { class: "tag bad" }, `failed: blocks ${m.start_block}–${m.end_block}: ${m.error || ""}`)),
      ...discarded.map((m) => h("div", { class: "tag" }, `discarded: blocks ${m.start_block}–${m.end_block} changed meanwhile`)),
      p.merges_total > p.merges.length ? h("div", { class: "muted" }, `(${p.merges_total - p.merges.length} more merges)`) : null,
    ];
    return h("tr", { "data-pass": p.t_us },
      h("td", { title: when(p.t_us) }, ago(p.t_us)),
      h("td", { class: "num" }, p.seconds.toFixed(2) + " s"),
      h("td", { class: "num" }, count(p.files_considered)),
      h("td", { class: "num merged" }, merged.length),
      h("td", { class: "num failed" }, failed.length + (p.error ? 1 : 0)),
      h("td", { class: "num discarded" }, discarded.length),
      h("td", {}, detail),
      h("td", { class: "num" }, p.error ? "" : count(p.files_after)),
      h("td", { class: "muted" }, p.server));
  });
}

function render(el, charts, d) {
  const s = d.histogram.summary;
  clear(el.cards,
    card("Live files", count(d.info.files), "card-files"),
    card("Rows", count(d.info.rows), "card-rows"),
    card("Stored", bytes(d.info.stored_bytes), "card-stored"),
    card("Uncompressed", bytes(d.info.bytes), "card-bytes"),
    card("Blocks", blocks(d.info), "card-blocks"),
    card("Target file", bytes(s.target_bytes), "card-target"),
    card("GC backlog", `${count(d.gc.files)} files`, "card-gc"));
  // Histogram: the target's bucket in green, smaller ones in blue, bigger in grey.
  const labels = d.histogram.buckets.map((b) => b.label);
  charts.hist.data.labels = labels;
  charts.hist.data.datasets[0].data = d.histogram.buckets.map((b) => b.files);
  charts.hist.data.datasets[0].backgroundColor = d.histogram.buckets.map((b) =>
    b.lower <= s.target_bytes && (b.upper === null || s.target_bytes < b.upper) ? "#059669"
      : (b.upper !== null && b.upper <= s.target_bytes ? "#3b82f6" : "#9ca3af"));
  charts.hist.$bytes = d.histogram.buckets.map((b) => b.bytes);
  charts.hist.options.plugins.title.text =
    `Files by uncompressed size, against the ${bytes(s.target_bytes)} target (green)`;
  charts.hist.update("none");
  clear(el.histTable, table(["Bucket", ["Files", { class: "num" }], ["Bytes", { class: "num" }]],
    d.histogram.buckets.map((b) => h("tr", { "data-bucket": b.label },
      h("td", {}, b.label), h("td", { class: "num bucket-files" }, count(b.files)), h("td", { class: "num" }, bytes(b.bytes)))),
    { id: "histogram" }));
  charts.files.data.datasets[0].data = liveFilesSeries(d);
  charts.files.update("none");
  charts.wa.data.datasets[0].data = writeAmpSeries(d);
  charts.wa.update("none");
  clear(el.passes, d.passes.length === 0
    ? h("p", { class: "muted", id: "no-passes" }, "No pass merged anything or failed in this window.")
    : table(["When", ["Took", { class: "num" }], ["Files seen", { class: "num" }], ["Merged", { class: "num" }],
      ["Failed", { class: "num" }], ["Discarded", { class: "num" }], "What", ["Files after", { class: "num" }], "Server"],
      passRows(d.passes), { id: "passes" }));
  const oldest = d.gc.oldest_removed_us;
  clear(el.gc, h("p", { id: "gc-backlog" },
    d.gc.files === 0 ? "Nothing waits for GC."
      : `${count(d.gc.files)} merged-away files wait for GC (${count(d.gc.due)} past the ${Math.round(d.gc.grace_seconds)} s grace period; oldest left the live set ${ago(oldest)}).`));
  clear(el.truncated, d.passesTruncated
    ? h("p", { class: "error", id: "history-truncated" },
      `This window holds more than ${count(MAX_PASSES)} passes: the charts show only the newest. Choose a shorter window.`)
    : null);
  el.updated.textContent = `updated ${new Date().toLocaleTimeString("en-GB")}`;
}

// Runs a pass now, showing its events as they arrive.
async function compactNow(ds, t, button, log, after, life) {
  button.disabled = true;
  clear(log, "");
  log.hidden = false;
  const line = (s) => { log.append(s + "\n"); log.scrollTop = log.scrollHeight; };
  line(`${new Date().toLocaleTimeString("en-GB")} pass requested`);
  try {
    const res = await api("POST", tablePath(ds, t) + "/compact", { query: { stream: "true" }, raw: true });
    const reader = res.body.getReader();
    onLeave(() => reader.cancel().catch(() => {}));  // the pass goes on on the server; the page stops reading
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const ev = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (ev.event === "planned") line(`planned ${ev.groups} merge(s)`);
        else if (ev.event === "merged") line(`merged ${ev.inputs.length} files → ${ev.output.id} (${bytes(ev.output.stored_bytes)}, blocks ${ev.output.start_block}–${ev.output.end_block})`);
        else if (ev.event === "failed") line(`FAILED merging ${ev.inputs.length} files: ${ev.error}`);
        else if (ev.event === "discarded") line(`discarded a merge of ${ev.inputs.length} files: they changed meanwhile`);
        else if (ev.event === "done") line(ev.ran ? `done: ${ev.files_considered} files considered in ${ev.seconds.toFixed(2)} s` : "done: compaction is off for this server");
        else if (ev.event === "error") line(`ERROR: ${ev.message}`);
      }
    }
  } catch (ex) {
    if (life.alive) line(`ERROR: ${ex.message}`);
  } finally {
    button.disabled = false;
    if (life.alive) await after();
  }
}

export async function tablePage(main, [ds, t], query) {
  const life = pageLife();
  const windowName = Object.keys(WINDOWS).includes(query.window) ? query.window : "15 min";
  const el = {
    cards: h("div", { class: "cards" }),
    hist: h("canvas", { id: "histogram-chart" }),
    files: h("canvas", { id: "files-chart" }),
    wa: h("canvas", { id: "wa-chart" }),
    histTable: h("div"),
    passes: h("div"),
    gc: h("div"),
    updated: h("span", { class: "muted", id: "updated" }),
    truncated: h("div"),
    error: h("div"),
  };
  const log = h("pre", { class: "log", id: "compact-log", hidden: true });
  const button = h("button", { class: "primary", id: "compact-now" }, "Run a pass now");
  const auto = h("input", { type: "checkbox", id: "auto-refresh", checked: true });
  const windowSel = h("select", { id: "window" }, Object.keys(WINDOWS).map((w) => h("option", { value: w }, w)));
  windowSel.value = windowName;
  windowSel.addEventListener("change", () => { location.hash = `#/tables/${enc(ds)}/${enc(t)}?window=${enc(windowSel.value)}`; });

  let d = await load(ds, t, WINDOWS[windowName]);
  if (!life.alive) return;
  const schema = d.info.schema || [];
  clear(main,
    h("div", { class: "crumbs" }, h("a", { href: "#/tables" }, "Tables"), " / ", h("b", { id: "table-name" }, `${ds}.${t}`)),
    h("form", { class: "inline", onsubmit: (e) => e.preventDefault() },
      button, h("label", {}, auto, " refresh every 5 s"), h("label", {}, "window ", windowSel), el.updated),
    log, el.error, el.truncated, el.cards,
    h("div", { class: "grid2" },
      h("div", { class: "panel" }, h("div", { class: "chart" }, el.hist)),
      h("div", { class: "panel" }, h("h2", {}, "Histogram"), el.histTable)),
    h("div", { class: "grid2", style: "margin-top:14px" },
      h("div", { class: "panel" }, h("div", { class: "chart" }, el.files)),
      h("div", { class: "panel" }, h("div", { class: "chart" }, el.wa))),
    h("h2", {}, "Last passes"), el.passes,
    h("h2", {}, "Garbage collection"), el.gc,
    h("h2", {}, "Schema"),
    table(["Column", "Type"], (Array.isArray(schema) ? schema : []).map((f) => h("tr", {}, h("td", {}, f.name), h("td", {}, f.type))), { id: "schema" }));
  const charts = makeCharts(el);
  render(el, charts, d);

  // One refresh at a time (a slow one must not render after a newer one); one asked for meanwhile runs next.
  let busy = false, again = false;
  const refresh = async () => {
    if (!life.alive) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const next = await load(ds, t, WINDOWS[windowSel.value], d);
      if (!life.alive) return;
      d = next;
      clear(el.error);
      render(el, charts, d);
    } catch (ex) {
      if (life.alive) clear(el.error, errorBox(ex, "refresh-error"));
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  };
  button.addEventListener("click", () => compactNow(ds, t, button, log, refresh, life));
  const timer = setInterval(() => { if (auto.checked && !document.hidden) refresh(); }, 5000);
  onLeave(() => {
    clearInterval(timer);
    Object.values(charts).forEach((c) => c.destroy());
  });
}
