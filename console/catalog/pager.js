// One page at a time of a lakeFS listing ({results, pagination}), with a stack
// of the `after` cursors of the pages before it for "previous". Every catalog
// listing goes through it, so none walks a whole branch.
import { h, clear, errorBox } from "../app.js";

//   fetchPage(after) -> page; render(results, page) -> element.
export function pager(box, fetchPage, render, { life, nextId, prevId, nextLabel = "Next page", prevLabel = "Previous page" }) {
  const stack = [];
  let cursor = "";
  let busy = false;
  async function show({ rethrow = false } = {}) {
    let page;
    try {
      page = await fetchPage(cursor);
    } catch (ex) {
      if (rethrow) throw ex;
      if (life.alive) clear(box, errorBox(ex));
      return;
    } finally {
      busy = false;
    }
    if (!life.alive) return;
    const more = page.pagination && page.pagination.has_more;
    const prev = h("button", {
      type: "button", id: prevId, disabled: stack.length === 0,
      onclick: () => { if (busy) return; busy = true; cursor = stack.pop(); setNavBusy(); show(); },
    }, prevLabel);
    const next = h("button", {
      type: "button", id: nextId, disabled: !more,
      onclick: () => {
        if (busy) return;
        busy = true;
        stack.push(cursor);
        cursor = page.pagination.next_offset;
        setNavBusy();
        show();
      },
    }, nextLabel);
    const nav = stack.length || more
      ? h("div", { class: "pager" }, prev, next, h("span", { class: "muted page-number" }, `page ${stack.length + 1}`))
      : null;
    function setNavBusy() { prev.disabled = true; next.disabled = true; }
    clear(box, render(page.results || [], page), nav);
  }
  return {
    show,
    // Back to the first page.
    reset(opts) { stack.length = 0; cursor = ""; return show(opts); },
  };
}
