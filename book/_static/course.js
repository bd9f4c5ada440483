// Display formulas wider than the column scroll sideways inside their own box (the theme's
// CSS). MathJax keeps formulas out of the tab order (_config.yml), so a formula that scrolls
// is put back into it: a keyboard user must be able to reach it to scroll it.
function focusScrollingFormulas() {
  for (const formula of document.querySelectorAll("div.math mjx-container")) {
    if (formula.scrollWidth > formula.clientWidth + 1) {
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
