// The panels under the editor and its output (Examples, Files, Charts, Memory lab, Classify, Vision, Teach) as tabs,
// the ARIA tabs pattern: one panel shows at a time, so what a user asked for is never far below the code; the arrow
// keys, Home and End move between the tabs; the address remembers the panel (?panel=NAME) across reloads and in share
// links.
//
// Adds to window.playground:
//   showPanel(name)   shows the panel "examples" | "files" | "charts" | "memory-lab" | "classify" | "vision" | "teach"
export function initTabs(playground) {
  const PARAM = "panel";
  const tabs = [...document.querySelectorAll('.tabs[role="tablist"] [role="tab"]')];
  const named = (name) => tabs.find((tab) => tab.dataset.panel === name);

  function select(tab, { focus = false, remember = true } = {}) {
    for (const each of tabs) {
      const selected = each === tab;
      each.setAttribute("aria-selected", String(selected));
      each.tabIndex = selected ? 0 : -1; // Tab reaches the selected tab only; the arrows reach the others
      document.getElementById(each.getAttribute("aria-controls")).hidden = !selected;
    }
    if (focus) tab.focus();
    const url = new URL(location.href);
    if (remember && url.searchParams.get(PARAM) !== tab.dataset.panel) {
      url.searchParams.set(PARAM, tab.dataset.panel);
      history.replaceState(history.state, "", url.href);
    }
  }

  for (const tab of tabs) {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", (event) => {
      const at = tabs.indexOf(tab);
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
      if (to === undefined) return;
      event.preventDefault();
      select(tabs[(to + tabs.length) % tabs.length], { focus: true });
    });
  }

  const asked = new URLSearchParams(location.search).get(PARAM);
  select(named(asked) ?? tabs[0], { remember: false });

  playground.showPanel = (name) => {
    const tab = named(name);
    if (!tab) throw new Error(`showPanel: no panel ${JSON.stringify(name)}; the panels are ${tabs.map((t) => t.dataset.panel).join(", ")}`);
    select(tab);
  };
}
