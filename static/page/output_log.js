// The Output log of the playground page: what the code prints as it runs, then its last value or its error.
//
// createOutputLog(element) -> {clear(), print(chunks, dropped), value(node), error(error), note(text, kind),
//   figure(node)}
//   print    [{stream: "stdout"|"stderr", text} | {stream: "note", text} (a package load's progress) |
//            {stream: "figure", png, alt, width, height} (plt.show())] as the worker batches them; dropped: lines the
//            worker left out
//   value    a display tree from static/worker/playground_display.py (describe): tensors as a table with their shape, dtype
//            and statistics, pandas DataFrames and Series as a table (head and tail of long ones), matplotlib figures
//            as an image, strings and summaries as text, containers item by item; None shows nothing (as in a
//            notebook: a last line print() returns it)
//   error    {type, message, traceback, line} from static/worker/playground_run.py: the traceback as text
//   ask      input(prompt): the prompt and a text box ("Program input") at the end of the log; Enter gives
//            answer(line) the line, which then stays in the log after its prompt, as a terminal shows it
//   endInput the run ended (or was stopped) while input() waited: the box goes, the prompt stays
//   figure   a picture the code showed while it runs (pe.browser.show_image, image_output.js), after what it printed;
//            one with the data-key of a figure shown before takes that one's place
// Everything is built with textContent (no HTML from Python reaches the page); a figure is an <img> of its PNG as a
// data: URL, with its alt text. The log keeps its last MAX_CHARS characters of printed text (a figure counts for
// FIGURE_CHARS): a loop that prints or plots forever cannot grow the page without bound.
export function createOutputLog(element) {
  const MAX_CHARS = 1_000_000;
  const BLOCK_CHARS = 64_000;
  const FIGURE_CHARS = 10_000; // what a figure counts for in MAX_CHARS: the log keeps its last hundred or so
  let printedChars = 0;
  // What arrived since the last frame: a fast printer sends batch after batch, and the page draws them together.
  let pending = [], pendingChars = 0, pendingDropped = 0, frame = null;

  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  const chars = (chunk) => (chunk.stream === "figure" ? FIGURE_CHARS : chunk.text.length + 1);

  const atBottom = () => element.scrollHeight - element.scrollTop - element.clientHeight < 24;

  function append(node) {
    drawPrinted(); // what was printed comes first
    const follow = atBottom();
    element.append(node);
    if (follow) element.scrollTop = element.scrollHeight; // follow the output unless the user scrolled up
    return node;
  }

  function trim() {
    let removed = false;
    while (printedChars > MAX_CHARS) {
      const oldest = element.querySelector(".stdout, .stderr, .dropped, .printed-note, .figure");
      if (!oldest) break;
      printedChars -= oldest.chars ?? oldest.textContent.length;
      oldest.remove();
      removed = true;
    }
    if (removed && !element.querySelector(".trimmed")) {
      element.prepend(el("div", "note trimmed", "(earlier output was removed: the log keeps the last 1 MB)"));
    }
  }

  function print(chunks, dropped) {
    for (const chunk of chunks) {
      pending.push(chunk);
      pendingChars += chars(chunk);
    }
    pendingDropped += dropped;
    while (pendingChars > MAX_CHARS && pending.length > 1) { // a hidden page draws no frames: keep the newest
      const oldest = pending.shift();
      pendingChars -= chars(oldest);
      pendingDropped += oldest.stream === "figure" ? 1 : oldest.text.split("\n").length;
    }
    if (frame === null) frame = requestAnimationFrame(drawPrinted);
  }

  function drawPrinted() {
    if (frame !== null) cancelAnimationFrame(frame);
    frame = null;
    if (!pending.length && !pendingDropped) return;
    const follow = atBottom();
    for (const chunk of pending) {
      const { stream, text } = chunk;
      if (stream === "figure" || stream === "note") {
        const shown = stream === "figure" ? plotFigure(chunk) : el("div", "note printed-note", text);
        element.append(Object.assign(shown, { chars: chars(chunk) }));
        printedChars += shown.chars;
        continue;
      }
      // consecutive lines of a stream share a block, up to BLOCK_CHARS: trim() then drops whole old blocks
      const last = element.lastElementChild;
      if (last && last.classList.contains(stream) && last.chars < BLOCK_CHARS) {
        last.append("\n" + text);
        last.chars += text.length + 1;
      } else {
        element.append(Object.assign(el("pre", stream, text), { chars: text.length }));
      }
      printedChars += text.length + 1;
    }
    if (pendingDropped) {
      const note = `(${pendingDropped} lines printed too fast to show were left out)`;
      element.append(Object.assign(el("div", "note dropped", note), { chars: note.length }));
      printedChars += note.length;
    }
    pending = [];
    pendingChars = pendingDropped = 0;
    trim();
    if (follow) element.scrollTop = element.scrollHeight;
  }

  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const bytes = (n) => (n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB");

  // The shortest decimal that is the same float32 (0.1, not 0.10000000149011612 as the float64 it arrived as).
  function shortFloat32(x) {
    if (!Number.isFinite(x) || Number.isInteger(x)) return x;
    for (let digits = 1; digits < 9; digits++) {
      const short = Number(x.toPrecision(digits));
      if (Math.fround(short) === Math.fround(x)) return short;
    }
    return x;
  }

  // JSON with ": " and ", " between items, as runPython's result reads in the devtools console.
  function pretty(value, float32) {
    const replacer = (_, v) => (typeof v === "bigint" ? v.toString() : float32 && typeof v === "number" ? shortFloat32(v) : v);
    const text = JSON.stringify(value, replacer, 2);
    return text.replace(/\[([^[\]{}]*)\]/g, (_, body) => `[${body.replace(/\n\s*/g, " ").trim()}]`);
  }

  function tensorTable({ label, rows, cols, cells }) {
    const table = el("table", "cells");
    if (label) table.append(el("caption", "", label));
    if (cols) {
      const head = el("tr");
      if (rows) head.append(el("th"));
      for (const c of cols) head.append(el("th", "", c));
      table.appendChild(el("thead")).append(head);
    }
    const body = table.appendChild(el("tbody"));
    cells.forEach((row, r) => {
      const tr = body.appendChild(el("tr"));
      if (rows) tr.append(el("th", "", rows[r]));
      for (const cell of row) tr.append(el("td", "", cell));
    });
    return table;
  }

  function tensor(node) {
    const box = el("div", "tensor");
    const parts = [node.name ? `${node.type} "${node.name}"` : node.type, node.dtype, `shape [${node.shape.join(", ")}]`];
    if (node.disposed) parts.push("disposed");
    if (node.nbytes !== null) parts.push(bytes(node.nbytes));
    if (node.backend) parts.push(`on ${node.backend}`);
    box.append(el("div", "tensor-head", parts.join(" · ")));
    if (node.stats) {
      const stats = Object.entries(node.stats).map(([k, v]) => (k === "nan" ? plural(v, "NaN") : k === "inf" ? `${v} infinite` : `${k} ${v}`));
      box.append(el("div", "tensor-stats", stats.join(" · ")));
    }
    if (node.table) box.append(tensorTable(node.table));
    if (node.note) box.append(el("div", "note", node.note));
    if (node.values !== null) {
      const float32 = node.dtype === "float32" || node.dtype === "float16";
      const json = pretty({ shape: node.shape, dtype: node.dtype, values: node.values }, float32).replace(/\n\s*/g, " ");
      box.append(el("pre", "json", "as JSON: " + json));
    }
    return box;
  }

  // A matplotlib figure (static/worker/playground_figures.py): drawn at the screen's pixel ratio, shown at its CSS size.
  function plotFigure({ png, alt, width, height }) {
    const box = el("figure", "figure");
    const img = box.appendChild(el("img"));
    Object.assign(img, { src: "data:image/png;base64," + png, alt, width, height });
    return box;
  }

  // A pandas DataFrame or Series (static/worker/playground_display.py, _frame): a table with its column headers and index.
  function dataFrame(node) {
    const box = el("div", "frame");
    const [rowCount, colCount] = node.shape;
    const size = node.type === "Series" ? plural(rowCount, "row") : `${plural(rowCount, "row")} × ${plural(colCount, "column")}`;
    const table = box.appendChild(el("table", "cells"));
    table.append(el("caption", "", `${node.type} · ${size}`));
    const head = el("tr");
    // the index's header when it has a name; else an empty corner cell, which heads nothing
    head.append(node.index_name ? Object.assign(el("th", "", node.index_name), { scope: "col" }) : el("td"));
    node.columns.forEach((name, c) => {
      const th = Object.assign(el("th", "", name), { scope: "col" });
      if (node.dtypes[c]) th.title = node.dtypes[c];
      head.append(th);
    });
    table.appendChild(el("thead")).append(head);
    const body = table.appendChild(el("tbody"));
    for (const row of node.rows) {
      const tr = body.appendChild(el("tr"));
      if (row == null) { // None: the gap between head and tail
        tr.className = "gap";
        tr.append(Object.assign(el("td", "", "…"), { colSpan: node.columns.length + 1 }));
        continue;
      }
      tr.append(Object.assign(el("th", "", row.index), { scope: "row" }));
      for (const cell of row.cells) tr.append(el("td", "", cell));
    }
    return box;
  }

  function container(node, depth) {
    if (!node.length) return el("span", "scalar", `${node.type} · empty`);
    const box = el("details", "container");
    box.open = depth < 2;
    const what = node.type === "dict" || node.kind === "list" ? plural(node.length, "item") : plural(node.length, "field");
    box.append(el("summary", "", `${node.type} · ${what}`));
    const items = box.appendChild(el("div", "items"));
    node.items.forEach((item, k) => {
      const row = items.appendChild(el("div", "item"));
      const [key, child] = node.kind === "dict" ? item : [String(k), item];
      row.append(el("span", "key", key), render(child, depth + 1));
    });
    if (node.more > 0) items.append(el("div", "note", `... ${node.more} more`));
    return box;
  }

  function render(node, depth = 0) {
    switch (node.kind) {
      case "none": return el("span", "scalar", "None");
      case "scalar": return el("span", "scalar", node.text);
      case "text": {
        const text = el("pre", "text", node.text);
        if (node.clipped) text.append(el("span", "note", `\n... ${node.clipped} more characters`));
        return text;
      }
      case "tensor": return tensor(node);
      case "list": case "dict": return container(node, depth);
      case "frame": return dataFrame(node);
      case "figure": return plotFigure(node);
      default: return el("pre", "repr", node.text);
    }
  }

  let asking = null; // the row with input()'s text box while it waits

  function ask(prompt, answer) {
    endInput();
    const row = el("div", "input-row");
    const shown = el("span", "prompt", prompt);
    shown.id = "input-prompt";
    const box = el("input");
    Object.assign(box, { type: "text", autocomplete: "off", spellcheck: false, placeholder: "type a line, then Enter" });
    box.setAttribute("aria-label", "Program input");
    box.setAttribute("aria-describedby", shown.id);
    box.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || event.isComposing) return; // Enter that ends an IME composition is not the line's
      event.preventDefault();
      asking = null;
      row.replaceWith(Object.assign(el("pre", "stdout input-echo", prompt + box.value), { chars: prompt.length + box.value.length }));
      answer(box.value);
    });
    row.append(shown, box);
    asking = append(row);
    box.focus();
  }

  function endInput() {
    if (!asking) return;
    const prompt = asking.firstChild.textContent;
    asking.replaceWith(Object.assign(el("pre", "stdout", prompt), { chars: prompt.length }));
    asking = null;
  }

  return {
    ask,
    endInput,
    clear() {
      if (frame !== null) cancelAnimationFrame(frame);
      frame = null;
      pending = [];
      pendingChars = pendingDropped = 0;
      element.replaceChildren();
      asking = null;
      element.classList.remove("error");
      printedChars = 0;
    },
    print,
    value(node) {
      if (node.kind === "none") return drawPrinted(); // a last line such as print() gives None: nothing to add
      const box = el("div", "result");
      box.append(render(node));
      append(box);
    },
    error(error) {
      element.classList.add("error");
      append(el("pre", "traceback", error.traceback || error.message));
    },
    note(text, kind = "") {
      append(el("div", `note ${kind}`.trim(), text));
    },
    figure(node) {
      const shown = node.dataset.key === undefined ? null
        : [...element.querySelectorAll("figure[data-key]")].find((f) => f.dataset.key === node.dataset.key);
      if (shown) shown.replaceWith(node);
      else append(node);
    },
  };
}
