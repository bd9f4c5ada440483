"""The built site: it builds with `-W -n` (every warning is an error), needs nothing from the
network, and renders in a real browser (headless Debian Chromium) with maths typeset, every
figure present and described, working launch buttons, and a clean console.

The build executes every notebook, so this file takes a minute or two.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from bs4 import BeautifulSoup
from conftest import BROWSER_SKIP_REASON
from course import ROOT, toc_files

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
    assert mathjax and all(src.endswith("_static/mathjax/tex-chtml.js") for src in mathjax)
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
        "--window-size=1280,1000",
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
};
"""


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_in_chromium(browser, server, page):
    browser.set_script_timeout(30)
    browser.get(f"{server}/{page}")
    typeset = browser.execute_async_script(WAIT_FOR_MATHJAX)
    facts = browser.execute_script(PAGE_FACTS)
    if page in CHAPTERS or page == "book/notation.html":
        assert typeset, "MathJax typeset the maths on the page"
    assert facts["math_errors"] == 0 and facts["raw_math"] == 0
    assert facts["broken_images"] == []
    assert facts["remote"] == [], "nothing is loaded from the network"
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
