"""The built site: it builds with `-W -n` (every warning is an error), needs nothing from the
network, and renders in a real browser (headless Debian Chromium) with the network off, with
maths typeset, every figure present and described, working launch buttons, a clean console,
and no serious or critical accessibility violation (axe-core) on any page.

The build shows the notebooks' committed outputs (strict nbval checks them); the accessibility
audit lives here, not in a file of its own, so that one pytest-xdist worker builds the site once.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from bs4 import BeautifulSoup
from course import COLUMN_PX, PHONE_COLUMN_PX, ROOT, toc_files

from conftest import BROWSER_SKIP_REASON
from tools.plain_edition import glossary
from tools.stats import LAPTOP, SCREENS, screens_of_open_page

HTML = ROOT / "_build" / "html"
PAGES = [f"{file}.html" for file in toc_files()]
CHAPTERS = [page for page in PAGES if page.startswith("notebooks/")]
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def site() -> Path:
    """Build the book exactly as `make book` does and return the HTML directory."""
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run(
        [str(jupyter_book), "build", ".", "-W", "-n", "--keep-going"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    # With -W and --keep-going, any Sphinx warning makes the exit status non-zero.
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    return HTML


@functools.cache  # the tests only read it, and a chapter's page takes seconds to parse
def soup(site: Path, page: str) -> BeautifulSoup:
    return BeautifulSoup((site / page).read_text(encoding="utf-8"), "html.parser")


def is_remote(url: str) -> bool:
    return urlparse(url).scheme in {"http", "https"} or url.startswith("//")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_loads_only_local_resources(site, page):
    html = soup(site, page)
    resources = [tag.get("src", "") for tag in html.find_all(["script", "img", "iframe"])]
    resources += [
        tag.get("href", "")
        for tag in html.find_all("link")
        if {"stylesheet", "preload", "icon", "modulepreload"} & set(tag.get("rel", []))
    ]
    assert [url for url in resources if is_remote(url)] == []


def test_mathjax_is_served_from_the_site(site):
    html = soup(site, "book/notation.html")
    sources = [tag.get("src", "") for tag in html.find_all("script")]
    mathjax = [src for src in sources if "mathjax" in src.lower()]
    # Sphinx adds a checksum (`?v=…`) when the file is already in _build from a previous build.
    paths = [src.split("?")[0] for src in mathjax]
    assert mathjax and all(path.endswith("_static/mathjax/tex-chtml.js") for path in paths)
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()


@pytest.mark.parametrize("page", CHAPTERS)
def test_launch_buttons_point_at_this_notebook(site, page, repository_url, config):
    github = repository_url.removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    notebook = page.removesuffix(".html") + ".ipynb"
    links = {tag.get("href") for tag in soup(site, page).find_all("a")}
    assert f"https://mybinder.org/v2/gh/{github}/{branch}?urlpath=lab/tree/{notebook}" in links
    assert f"https://colab.research.google.com/github/{github}/blob/{branch}/{notebook}" in links
    assert any(link and link.endswith(f"_sources/{notebook}") for link in links), "download"


@pytest.mark.parametrize("page", CHAPTERS)
def test_figures_have_alt_text_and_solutions_are_hidden(site, page):
    content = soup(site, page).find("article")
    images = content.find_all("img")
    assert images, "a chapter page shows figures"
    for image in images:
        assert image.get("alt", "").strip(), image.get("src")
        figure = image.find_parent("figure")
        assert figure is not None and figure.find("figcaption"), image.get("src")
        assert (site / page).parent.joinpath(image["src"]).resolve().is_file()
        assert image.find_parent("a")["href"] == image["src"], "a click opens it full size"
    solutions = content.select(".solution")
    assert solutions and all("dropdown" in solution["class"] for solution in solutions)
    assert content.select(".exercise")


# --- In a browser -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the signature of the base class
        pass


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("CI"):
            pytest.fail(f"{BROWSER_SKIP_REASON}; CI must run the browser tests")
        pytest.skip(BROWSER_SKIP_REASON)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--window-size=1366,768",
        # The network is off: nothing resolves but the local server, and every request that
        # is not to it goes to a proxy that does not exist.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
if (!window.MathJax || !MathJax.startup) { done(null); return; }
MathJax.startup.promise.then(() => done(document.querySelectorAll("mjx-container").length));
"""

PAGE_FACTS = """
return {
  broken_images: [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
                                     .map(i => i.src),
  math_errors: document.querySelectorAll("mjx-merror").length,
  raw_math: document.querySelectorAll("main .math:not(:has(mjx-container))").length,
  remote: performance.getEntriesByType("resource").map(e => e.name)
                     .filter(u => !u.startsWith(location.origin) && !u.startsWith("data:")),
  // Columns whose content is wider than the column: cut off at the window's edge or
  // scrolled sideways (a long code word in a heading once did that to the page's contents).
  overflowing: [".bd-sidebar-primary", ".bd-sidebar-secondary", "body"]
    .map(selector => document.querySelector(selector))
    .filter(column => column && column.scrollWidth > column.clientWidth + 1)
    .map(column => column.className || column.tagName),
  // The page itself scrolls sideways (a phone's screen is narrower than some content).
  page_width: document.documentElement.scrollWidth,
  content_width: document.documentElement.clientWidth,  // the window less its scroll bar
  window_width: window.innerWidth,
  // MathJax puts every formula in the tab order unless told not to (_config.yml); a screen
  // reader still gets each formula as MathML.
  formulas: document.querySelectorAll("mjx-container").length,
  // A display formula wider than the column scrolls, and only such a one is tabbable (to
  // scroll it with the keyboard: book/_static/course.js).
  tabbable_formulas: [...document.querySelectorAll("mjx-container[tabindex='0']")]
    .filter(formula => formula.scrollWidth <= formula.clientWidth + 1).length,
  formulas_with_mathml: document.querySelectorAll("mjx-container mjx-assistive-mml").length,
  // An inline formula wider than its line scrolls (book/_static/course.css); none is cut off.
  cut_formulas: [...document.querySelectorAll("span.math")].filter(span => {
    const math = span.querySelector("mjx-math");
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(span).overflowX);
    return math && !scrolls && math.getBoundingClientRect().width > span.clientWidth + 1;
  }).map(span => span.textContent.slice(0, 60)),
};
"""

# What a reader sees with every fold open ("Going deeper" parts, solutions, the appendix's
# answers): visible text that shows TeX instead of typeset maths; printed outputs that run
# past their box (a cell tagged keep-columns may: its arrays scroll, with a shadow cue); and
# Markdown tables wider than their column (course.js stacks those into rows).
UNFOLDED_FACTS = r"""
document.querySelectorAll("details").forEach(part => { part.open = true; });
document.querySelectorAll(".toggle-hidden").forEach(box => box.classList.remove("toggle-hidden"));
window.stackWideTables?.();
const wider = element => element.scrollWidth > element.clientWidth + 1;
const rawTex = [];
const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const parent = walker.currentNode.parentElement;
  if (parent.closest("mjx-container, code, pre, kbd, script, style")) continue;
  if (!parent.checkVisibility()) continue;
  const text = walker.currentNode.textContent;
  if (/\$\\|\\[A-Za-z]{2,}/.test(text)) rawTex.push(text.trim().slice(0, 80));
}
const kept = [...document.querySelectorAll(".tag_keep-columns .cell_output pre")];
return {
  raw_tex: rawTex,
  overflowing_outputs: [...document.querySelectorAll(".cell_output pre")]
    .filter(pre => !kept.includes(pre) && wider(pre))
    .map(pre => pre.textContent.slice(0, 60)),
  kept_without_cue: kept
    .filter(pre => wider(pre) && !/gradient/.test(getComputedStyle(pre).backgroundImage))
    .map(pre => pre.textContent.slice(0, 60)),
  // MathJax 3.2.2 breaks no line itself: a display formula is broken in its source
  // (aligned, gathered) wherever it would not fit a phone's column.
  wide_formulas: [...document.querySelectorAll("div.math mjx-container")]
    .filter(wider).map(formula => formula.textContent.slice(0, 60)),
  overflowing_tables: [...document.querySelectorAll("main table")]
    .filter(table => !table.closest(".cell_output"))
    .filter(table => table.getBoundingClientRect().width >
      (table.closest(".pst-scrollable-table-container") || table.parentElement).clientWidth + 1)
    .map(table => table.textContent.trim().slice(0, 60)),
};
"""

# Each figure of a chapter: the image the browser chose (a <picture>'s phone rendering on a
# narrow screen) and whether the figure has a phone rendering at all.
SHOWN_FIGURES = """
return [...document.querySelectorAll("article figure img")].map(image => ({
  alt: image.alt.slice(0, 60),
  shown: image.currentSrc.split("/").pop(),
  laptop: image.getAttribute("src").split("/").pop(),
  phone: image.closest("picture")?.querySelector("source")?.getAttribute("srcset")
           .split("/").pop() ?? null,
  width: image.getBoundingClientRect().width,
}));
"""

# A laptop and a phone (CSS pixels): every page is checked at both. The phone is Chromium's
# mobile emulation of a 390 x 844 screen (device pixel ratio 3, touch), as a phone shows the
# page: at its device width (the theme's viewport meta tag), with no scroll bar.
VIEWPORTS = {"laptop": (1366, 768), "phone": (390, 844)}
PHONE_METRICS = {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True}


def emulate(browser, viewport: str, size: tuple[int, int] | None = None) -> None:
    """Make the browser a phone (mobile emulation) or a desktop window of ``size``."""
    if viewport == "phone":
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE_METRICS)
        browser.execute_cdp_cmd(
            "Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5}
        )
    else:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
        browser.set_window_size(*(size or VIEWPORTS[viewport]))


def open_page(browser, server: str, page: str, viewport: str) -> int | None:
    """Load ``page`` at the size of ``viewport`` and wait for MathJax; the number of
    formulas it typeset (None on a page without MathJax)."""
    emulate(browser, viewport)
    browser.set_script_timeout(30)
    browser.get(f"{server}/{page}")
    return browser.execute_async_script(WAIT_FOR_MATHJAX)


SOLUTION_CLICK = """
const title = document.querySelector(".solution.toggle > .admonition-title");
title.scrollIntoView({block: "center"});
const solution = title.parentElement, before = window.scrollY;
const hidden = solution.classList.contains("toggle-hidden");
// Where a reader aims: the middle of the title's text, which was once a link away.
const text = title.querySelector("span") || title;
const box = text.getBoundingClientRect();
document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2).click();
return {hidden_before: hidden, hidden_after: solution.classList.contains("toggle-hidden"),
        scrolled: Math.abs(window.scrollY - before)};
"""


@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_in_chromium_with_the_network_off(browser, server, page, viewport):
    """One visit of a reader: the page as it first shows, a click on a solution's title (on a
    chapter), then every fold opened."""
    typeset = open_page(browser, server, page, viewport)
    facts = browser.execute_script(PAGE_FACTS)
    assert facts["window_width"] == VIEWPORTS[viewport][0], "the window has the viewport's size"
    if page in CHAPTERS or page == "book/notation.html":
        assert typeset, "MathJax typeset the maths on the page"
    assert facts["math_errors"] == 0 and facts["raw_math"] == 0
    assert facts["broken_images"] == []
    assert facts["remote"] == [], "nothing is loaded from the network"
    assert facts["overflowing"] == [], "no column is wider than the window lets it be"
    assert facts["page_width"] <= facts["content_width"], "the page does not scroll sideways"
    assert facts["tabbable_formulas"] == 0, "formulas that do not scroll are out of the tab order"
    assert facts["formulas_with_mathml"] == facts["formulas"], "each formula keeps its MathML"
    assert facts["cut_formulas"] == [], "no formula is cut off"
    # book/_ext/course_html.py makes a <picture> of a figure and its phone rendering.
    for figure in browser.execute_script(SHOWN_FIGURES):
        wanted = figure["phone"] if viewport == "phone" and figure["phone"] else figure["laptop"]
        assert figure["shown"] == wanted, figure
    if page in CHAPTERS:
        click = browser.execute_script(SOLUTION_CLICK)
        assert click["hidden_before"], "solutions start hidden"
        assert not click["hidden_after"], "a click on a solution's title opened it"
        assert click["scrolled"] < 5, "the click did not jump elsewhere on the page"
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    unfolded = browser.execute_script(UNFOLDED_FACTS)
    assert unfolded["raw_tex"] == [], "TeX shows as text (with every fold open)"
    assert unfolded["overflowing_outputs"] == [], "printed text runs past its box"
    assert unfolded["kept_without_cue"] == [], "a keep-columns output scrolls without a cue"
    assert unfolded["overflowing_tables"] == [], "a table is wider than its column"
    assert unfolded["wide_formulas"] == [], "a display formula is wider than its column"


# --- Menus: the site's navigation (☰) and the page's contents, on every screen width -------

# Where each menu is and whether it can be used: its box, and whether it is a modal drawer
# (a narrow screen) or shown beside the text (a wide one).
MENU_STATE = """
const side = arguments[0];
const drawer = document.getElementById(`pst-${side}-sidebar-modal`);
const column = document.querySelector(`.bd-sidebar-${side}`);
const box = column.getBoundingClientRect();
return {drawer_open: drawer.open, left: box.left, right: box.right, width: box.width,
        visible: column.checkVisibility({opacityProperty: true, visibilityProperty: true})
                 && box.width > 0 && box.right > 0
                 && box.left < innerWidth};
"""
VISIBLE_BUTTON = """
return [...document.querySelectorAll(`.${arguments[0]}-toggle`)]
  .filter(button => button.checkVisibility() && button.getBoundingClientRect().width > 0);
"""
# The narrow screens, where both menus are drawers behind a button: a phone (mobile
# emulation) and a small tablet or a narrow desktop window.
NARROW = {"phone": None, "tablet": (800, 1000)}


def tap(browser, element, viewport: str) -> None:
    """Tap (phone: a touch pointer) or click ``element`` where a reader would: its middle."""
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    kind = interaction.POINTER_TOUCH if viewport == "phone" else interaction.POINTER_MOUSE
    actions = ActionBuilder(browser, mouse=PointerInput(kind, kind))
    actions.pointer_action.move_to(element).pointer_down().pointer_up()
    actions.perform()


def open_menu(browser, server: str, page: str, viewport: str, side: str) -> dict:
    emulate(browser, "phone" if viewport == "phone" else "desktop", NARROW[viewport])
    browser.get(f"{server}/{page}")
    before = browser.execute_script(MENU_STATE, side)
    assert not before["drawer_open"] and not before["visible"], f"the {side} menu starts closed"
    [button] = browser.execute_script(VISIBLE_BUTTON, side)
    tap(browser, button, viewport)
    return browser.execute_script(MENU_STATE, side)


@pytest.mark.parametrize("viewport", NARROW)
def test_the_site_navigation_opens_on_a_narrow_screen_and_leads_to_a_chapter(
    browser, server, viewport
):
    opened = open_menu(browser, server, CHAPTERS[3], viewport, "primary")
    assert opened["drawer_open"] and opened["visible"] and opened["left"] >= 0, opened
    link = browser.find_element(
        "css selector", "#pst-primary-sidebar-modal a[href$='02_softmax.html']"
    )
    tap(browser, link, viewport)
    assert browser.current_url.endswith("notebooks/02_softmax.html")


@pytest.mark.parametrize("viewport", NARROW)
def test_the_page_contents_open_on_a_narrow_screen_and_lead_to_a_section(browser, server, viewport):
    opened = open_menu(browser, server, CHAPTERS[3], viewport, "secondary")
    assert (
        opened["drawer_open"]
        and opened["visible"]
        and opened["right"] <= browser.execute_script("return innerWidth")
    ), opened
    links = browser.find_elements("css selector", "#pst-secondary-sidebar-modal nav a[href^='#']")
    assert len(links) >= 5, "the contents list the page's sections"
    target = links[2]
    anchor = target.get_attribute("href").split("#")[1]
    tap(browser, target, viewport)
    browser.execute_script("document.getElementById('pst-secondary-sidebar-modal').close()")
    heading_top = browser.execute_script(
        "return document.getElementById(arguments[0]).getBoundingClientRect().top", anchor
    )
    assert browser.current_url.endswith(f"#{anchor}") and 0 <= heading_top < 300


def test_on_a_laptop_the_navigation_button_hides_and_shows_the_sidebar(browser, server):
    from selenium.webdriver.support.wait import WebDriverWait

    def visible_after_transition(wanted: bool) -> bool:
        return WebDriverWait(browser, 5).until(
            lambda _: browser.execute_script(MENU_STATE, "primary")["visible"] == wanted
        )

    emulate(browser, "laptop")
    browser.get(f"{server}/{CHAPTERS[3]}")
    assert browser.execute_script(MENU_STATE, "primary")["visible"]
    [button] = browser.execute_script(VISIBLE_BUTTON, "primary")
    tap(browser, button, "laptop")
    assert visible_after_transition(False), "hidden"
    tap(browser, button, "laptop")
    assert visible_after_transition(True), "shown again"
    assert not browser.execute_script(MENU_STATE, "primary")["drawer_open"], "beside the text"


WIDEST_FIGURE = """
const done = arguments[arguments.length - 1];
const shown = document.querySelector("figure img");
const probe = shown.cloneNode();
probe.removeAttribute("width");
probe.removeAttribute("height");
probe.onload = () => { const width = probe.clientWidth; probe.remove(); done(width); };
probe.src = "data:image/svg+xml," + encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="10"></svg>');
shown.after(probe);
"""


@pytest.mark.parametrize(
    ("viewport", "column"), [("laptop", COLUMN_PX), ("phone", PHONE_COLUMN_PX)]
)
def test_figures_are_shown_at_least_as_wide_as_their_text_rule_assumes(
    browser, server, viewport, column
):
    """tests/test_isolated_run.py checks each figure's text at the size the column shows it,
    for a column of COLUMN_PX (PHONE_COLUMN_PX on a phone): an image 3,000 px wide, put where
    a figure is, shows there."""
    open_page(browser, server, CHAPTERS[0], viewport)
    assert browser.execute_async_script(WIDEST_FIGURE) >= column


SEARCH_RESULTS = """
const done = arguments[arguments.length - 1];
const results = () => [...document.querySelectorAll("ul.search li")];
const wait = setInterval(() => {
  const items = results();
  // Every result's snippet is fetched from its page: wait until they are all there.
  if (items.length && items.every(item => item.querySelector("p.context"))) {
    clearInterval(wait);
    done(items.map(item => ({href: item.querySelector("a").getAttribute("href"),
                             snippet: item.querySelector("p.context").textContent})));
  }
}, 100);
"""


def test_search_finds_the_chapter_named_after_the_word_first_with_snippets_from_the_text(
    browser, server
):
    open_page(browser, server, "search.html?q=softmax", "laptop")
    results = browser.execute_async_script(SEARCH_RESULTS)
    assert results[0]["href"].startswith("notebooks/02_softmax.html")
    for result in results:
        assert ".ipynb .pdf" not in result["snippet"] and "Contents" not in result["snippet"]


NUMBERED_CHAPTERS = [page for page in CHAPTERS if Path(page).name[:2].isdigit()]
GOING_DEEPER = """
return [...document.querySelectorAll("section.going-deeper")].map(section => {
  const part = section.querySelector(":scope > details.going-deeper");
  return {heading: section.querySelector("h2, h3, h4, h5, h6").textContent,
          folded: Boolean(part) && !part.open,
          hidden: part ? [...part.children].filter(child => child.tagName !== "SUMMARY")
                                           .every(child => !child.checkVisibility()) : false};
});
"""


@pytest.mark.parametrize("page", NUMBERED_CHAPTERS)
def test_a_chapter_is_at_most_its_budget_of_screens_with_going_deeper_parts_folded(
    browser, server, page
):
    """A "Going deeper" part shows its heading and an optional-part summary; its content is
    folded. With those parts closed, a chapter is at most SCREENS laptop screens."""
    assert VIEWPORTS["laptop"] == LAPTOP, "the budget is in the screens of tools.stats"
    open_page(browser, server, page, "laptop")
    for part in browser.execute_script(GOING_DEEPER):
        title = re.sub(r"^[\d.]+\s+", "", part["heading"]).rstrip("#")  # "1.3.1. … #"
        assert title.startswith("Going deeper:"), part["heading"]
        assert part["folded"] and part["hidden"], part["heading"]
    length = screens_of_open_page(browser)  # the window is a laptop's: tools.stats.LAPTOP
    assert length <= SCREENS, f"{page}: {length:.1f} laptop screens (budget {SCREENS})"


APPENDIX_CONTENTS = """
const lists = [...document.querySelectorAll("main ul")].filter(
  list => list.querySelectorAll('a[href*="#pitfall-"]').length >= 30);
if (!lists.length) return null;
const box = lists[0].getBoundingClientRect();
return {height: box.height, window: innerHeight,
        links: lists[0].querySelectorAll('a[href*="#pitfall-"]').length,
        entries: document.querySelectorAll('main [id^="pitfall-"]').length};
"""


def test_the_appendix_contents_fit_one_laptop_screen(browser, server):
    """The appendix opens with a list of every entry, by chapter, that a reader scans in
    one screen."""
    open_page(browser, server, "notebooks/pitfalls.html", "laptop")
    contents = browser.execute_script(APPENDIX_CONTENTS)
    assert contents, "the appendix opens with a contents list of its entries"
    assert contents["links"] == contents["entries"], contents  # every entry, once
    assert contents["height"] <= contents["window"], contents


# --- Accessibility: axe-core in Chromium ---------------------------------------------------

A11Y = ROOT / "tests" / "a11y"
NODE = shutil.which("node")
# The pages Sphinx adds to those of the table of contents.
AUDITED = [*PAGES, "genindex.html", "search.html"]
# The theme's colour modes: light is the default; in dark mode only the colour rules run.
MODES = ("light", "dark")
BLOCKING_IMPACTS = ("critical", "serious")
IMPACTS = ("critical", "serious", "moderate", "minor")
# Serious or critical violations that come from the theme or Sphinx and cannot be fixed in
# book/_ext/course_html.py (markup) or book/_static/course.css (colours), as (axe rule, CSS
# selector of the element) -> why they are accepted. None at the moment: those found so far
# are fixed there. Moderate and minor ones are reported (see the table) but do not fail.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}
REPORT = ROOT / "_build" / "accessibility.txt"


def test_the_plain_edition_links_glossary_terms_to_the_site_s_anchors(site):
    ids = {tag["id"] for tag in soup(site, "book/glossary.html").select("[id^=term-]")}
    missing = sorted(set(glossary().values()) - ids)
    assert not missing, f"anchors the plain edition links to but the site lacks: {missing}"


def built_pages(site: Path) -> list[str]:
    """Every HTML page of the built site (not the assets under _static, _sources, _images)."""
    return sorted(
        path.relative_to(site).as_posix()
        for path in site.rglob("*.html")
        if not any(part.startswith(("_", ".")) for part in path.relative_to(site).parts[:-1])
    )


@pytest.fixture(scope="module")
def axe_audit(site, server, tmp_path_factory) -> dict:
    """Run axe-core over every page of the built site (colours in both modes) in one Chromium
    session with the network off (tests/a11y/audit.mjs; `make test` installs it with npm)."""
    missing = [
        what
        for what, present in (
            ("chromium", CHROMIUM),
            ("node", NODE),
            ("tests/a11y/node_modules (make test runs npm ci)", (A11Y / "node_modules").is_dir()),
        )
        if not present
    ]
    if missing:
        reason = f"{BROWSER_SKIP_REASON}, or the audit's tools: missing {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the accessibility audit")
        pytest.skip(reason)
    output = tmp_path_factory.mktemp("axe") / "axe.json"
    command = [NODE, str(A11Y / "audit.mjs"), CHROMIUM, server, str(output), *built_pages(site)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    audit = json.loads(output.read_text(encoding="utf-8"))
    write_report(audit)
    return audit


def impact_counts(violations: list[dict]) -> dict[str, int]:
    """Failing elements per impact."""
    counts = dict.fromkeys(IMPACTS, 0)
    for violation in violations:
        counts[violation["impact"]] += len(violation["nodes"])
    return counts


def write_report(audit: dict) -> None:
    """A table of failing elements per page, mode and impact, printed at the end of the run
    (tests/conftest.py)."""
    versions = {result["version"] for result in audit.values() if "version" in result}
    width = max(map(len, audit), default=40) + 2
    lines = [
        f"axe-core {', '.join(sorted(versions))}: failing elements per page, colour mode and "
        f"impact (serious or critical fail the tests)",
        f"{'page':<{width}}{'mode':<7}" + "".join(f"{impact:>9}" for impact in IMPACTS) + "  rules",
    ]
    for page, result in audit.items():
        if "redirect" in result:
            lines.append(f"{page:<{width}}redirects to {result['redirect']}")
            continue
        for mode in MODES:
            violations = result["modes"][mode]
            counts = impact_counts(violations)
            rules = ", ".join(sorted({violation["id"] for violation in violations}))
            cells = "".join(f"{counts[impact]:>9}" for impact in IMPACTS)
            lines.append(f"{page:<{width}}{mode:<7}{cells}  {rules}")
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")


def blocking_violations(result: dict) -> list[str]:
    return [
        f"[{mode}] {violation['impact']} {violation['id']} ({violation['help']}): "
        f"{node['target']}\n    {node['html'][:200]}\n    {node['summary']}"
        for mode in MODES
        for violation in result["modes"][mode]
        if violation["impact"] in BLOCKING_IMPACTS
        for node in violation["nodes"]
        if (violation["id"], node["target"]) not in KNOWN_EXCEPTIONS
    ]


def test_every_page_of_the_table_of_contents_is_built(site):
    assert set(AUDITED) <= set(built_pages(site))


@pytest.mark.parametrize("page", AUDITED)
def test_page_has_no_serious_or_critical_accessibility_violation(axe_audit, page):
    result = axe_audit[page]
    print(page, {mode: impact_counts(result["modes"][mode]) for mode in MODES})
    # The audit's browser blocks every request that is not to the local server.
    assert result["blocked"] == [], "the page asked for something from the network"
    assert result["broken_images"] == [] and result["math_errors"] == result["raw_math"] == 0
    failing = blocking_violations(result)
    assert not failing, "\n".join(failing)


def test_every_other_built_page_passes_the_audit_or_redirects_to_one_that_does(axe_audit):
    others = {page: result for page, result in axe_audit.items() if page not in AUDITED}
    redirects = {
        page: result["redirect"] for page, result in others.items() if "redirect" in result
    }
    assert set(redirects.values()) <= set(AUDITED)
    failing = {
        page: blocking_violations(result)
        for page, result in others.items()
        if page not in redirects and blocking_violations(result)
    }
    assert failing == {}
