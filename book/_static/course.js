// Formulas wider than the column scroll sideways inside their own box (the theme's CSS for
// display formulas, course.css for inline ones). MathJax keeps formulas out of the tab order
// (_config.yml), so a formula that scrolls is put back into it: a keyboard user must be able
// to reach it to scroll it.
function focusScrollingFormulas() {
  for (const formula of document.querySelectorAll("div.math mjx-container, span.math")) {
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(formula).overflowX);
    if (scrolls && formula.scrollWidth > formula.clientWidth + 1) {
      formula.setAttribute("tabindex", "0");
    } else {
      formula.removeAttribute("tabindex");
    }
  }
}

window.addEventListener("load", () => {
  const typeset = window.MathJax?.startup?.promise ?? Promise.resolve();
  typeset.then(focusScrollingFormulas);
});
window.addEventListener("resize", focusScrollingFormulas);

// The search page (Sphinx's searchtools.js). A chapter whose title names the searched word
// ranks first: by default the glossary's terms, which Sphinx counts as objects, come before
// the softmax chapter when a reader searches "softmax". And a result's snippet comes from
// the page's article, not from the theme's page contents and buttons around it.
function improveSearch() {
  if (typeof Search === "undefined" || typeof Scorer === "undefined") return;
  const words = (new URLSearchParams(window.location.search).get("q") || "")
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean);
  Scorer.score = ([docname, title, anchor, descr, score]) => {
    const pageTitle = title.split(" > ")[0].toLowerCase();
    const named = words.length > 0 && words.every((word) => pageTitle.includes(word));
    return named && !anchor ? score + 100 : score;
  };
  const pageText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".bd-sidebar-secondary, .bd-header-article, .onlyprint, .prev-next-area")
      .forEach((element) => element.remove());
    return pageText(page.documentElement.outerHTML, anchor);
  };
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", improveSearch);
} else {
  improveSearch();
}

// A link into a folded "Going deeper" part (book/_ext/course_html.py) opens the part, so
// that the reader lands on what the link points at rather than on a closed summary.
function openFoldedTarget() {
  const id = decodeURIComponent(location.hash.slice(1));
  const target = id ? document.getElementById(id) : null;
  const part = target?.closest("details.going-deeper");
  if (part && !part.open) {
    part.open = true;
    target.scrollIntoView();
  }
}
window.addEventListener("DOMContentLoaded", openFoldedTarget);
window.addEventListener("hashchange", openFoldedTarget);

// The ☰ (site navigation) and contents buttons. pydata-sphinx-theme 0.17 and
// sphinx-book-theme 1.3 each wire up only the *first* `.primary-toggle` and
// `.secondary-toggle` of the page (document.querySelector), which is the theme's own header
// button, hidden by sphinx-book-theme's layout; the buttons a reader sees are the second of
// each, and had no listener (pydata-sphinx-theme issue #2451, sphinx-book-theme #988). A
// click on a visible one is handed to the wired one, so each theme does what it meant to: a
// drawer on a narrow screen, a collapsed sidebar on a wide one. CONTRIBUTING.md says why
// this is patched here rather than pinned.
function forwardSidebarToggles() {
  for (const side of ["primary", "secondary"]) {
    const [wired, ...unwired] = document.querySelectorAll(`.${side}-toggle`);
    for (const button of unwired) {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        wired.click();
      });
    }
  }
}
if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", forwardSidebarToggles);
} else {
  forwardSidebarToggles();
}

// A Markdown table wider than its column (chapter 6's table of mask conventions, on a phone)
// is shown as one block per row, each cell labelled with its column's header (course.css:
// table.stacked); at a width where it fits, it is a table again.
function stackWideTables() {
  for (const table of document.querySelectorAll(".bd-article table")) {
    if (table.closest(".cell_output")) continue;
    const headers = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, index) => {
        if (headers[index]) cell.dataset.label = headers[index];
      });
    }
    table.classList.remove("stacked");
    const column = table.closest(".pst-scrollable-table-container") || table.parentElement;
    if (table.getBoundingClientRect().width > column.clientWidth + 1) {
      table.classList.add("stacked");
    }
  }
}
window.addEventListener("DOMContentLoaded", stackWideTables);
window.addEventListener("resize", stackWideTables);
