"""The built site: it builds with warnings as errors, works with no network, reads well on a phone.

Every page is opened in headless Chromium with every request to a host other than
the local server blocked and recorded. The tests fail on any such request, any
console error, untypeset math, a figure that does not render or respond, a page that
scrolls sideways on a phone, a drawer that does not open, or a page over its weight
budget. Screenshots of every page at both widths go to ``_build/screenshots/``.
"""
from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bookwork.sphinx import bibliography_labels
from bookwork.sphinx.api_pages import public_modules
from bookwork.sphinx.offline.font_subsets import DRAWN_WITHOUT_TEXT, MATH_ITALIC, MATHML, subset_math_font
from bookwork.sphinx.offline.vendor_files import ASSETS, MATH_FONT, MATH_FONT_SOURCE
from tests.support import browser as reader
from tests.support.book import ROOT, build_book
from tests.support.browser import open_offline, serve

pytestmark = pytest.mark.site

SCREENSHOTS = ROOT / "_build" / "screenshots"
CLEAN = {"outside": [], "console": [], "http": []}


def html_pages(site: Path) -> list[str]:
    return reader.html_pages(site)


#: The pages are visited in this many groups, so that pytest-xdist spreads the visits
#: over its workers (the list of pages is known only once the book is built).
PAGE_GROUPS = 8


def pages_of_group(site: Path, group: int) -> list[str]:
    return html_pages(site)[group::PAGE_GROUPS]


def test_the_site_has_a_page_for_every_chapter(built_site):
    pages = set(html_pages(built_site))
    lessons = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
    assert len(lessons) >= 11
    missing = [p.name for p in lessons if f"lessons/{p.stem}.html" not in pages]
    assert missing == [], missing


def _drawer_x(page, which: str) -> float:
    return page.locator(f".bd-sidebar-{which}").bounding_box()["x"]


def _wait_for_drawer(page, which: str, is_open: bool, message: str) -> None:
    """Wait until the drawer has come to rest where it should be: in the same place when
    looked at twice, 50 ms apart; at most 2 s."""
    width = reader.PHONE["width"]
    condition = {("primary", True): "x >= 0", ("primary", False): "x < 0",
                 ("secondary", True): f"x < {width}", ("secondary", False): f"x >= {width}"}[which, is_open]
    at_rest = f"""() => {{
      const drawer = document.querySelector('.bd-sidebar-{which}');
      const x = drawer.getBoundingClientRect().x;
      const still = drawer.dataset.lastX === String(x);
      drawer.dataset.lastX = String(x);
      return still && {condition};
    }}"""
    try:
        page.wait_for_function(at_rest, polling=50, timeout=2000)
    except PlaywrightTimeout:
        pytest.fail(f"{message} (the drawer is at x = {_drawer_x(page, which)})")


def open_drawer(page, which: str) -> None:
    """Tap the visible toggle of the ``primary`` (site navigation) or ``secondary`` (on this page) drawer."""
    page.locator(f".{which}-toggle:visible").first.click()


def close_drawer(page, which: str) -> None:
    """Tap the shaded page beside the open drawer (the navigation slides in from the left)."""
    x = reader.PHONE["width"] - 30 if which == "primary" else 30
    page.mouse.click(x, reader.PHONE["height"] // 2)


def check_desktop(tab: reader.Tab, site: Path, page_path: str) -> None:
    """At 1366 px, offline, opened in ``tab`` (a laptop's tab with its cache off, so that
    each page loads as on a first visit): typeset math and nothing raw, no empty header
    band above the page, one search box, no sideways scrolling, no code cell that scrolls
    sideways, nothing goes wrong; the interactive figures legible in both themes; scrolled
    to the end, within its weight budget (bytes as served: pages with a figure 2 MB, other
    pages 1 MB)."""
    page, problems = tab.open(page_path)
    page.screenshot(path=str(SCREENSHOTS / reader.screenshot_name(page_path, "desktop")))
    if page.locator(".math").count():
        # typeset when the book was built: no script needed, nothing left raw
        assert page.locator(".math > math").count() == page.locator(".math").count(), page_path
        text = page.inner_text("article")
        assert "\\[" not in text and "\\(" not in text and "$$" not in text, f"raw LaTeX left on {page_path}"
    header = page.locator(".bd-header")
    assert header.count() == 0 or (header.first.bounding_box() or {"height": 0})["height"] < 8, page_path
    assert page.locator(".search-button-field:visible").count() <= 1, page_path
    assert reader.horizontal_overflow(page) <= 0, page_path
    # a line of code of up to 88 characters fits its box; longer ones break the rule
    wide = reader.scrolling_code(page)
    assert wide == [], f"{page_path}: {len(wide)} code cells scroll sideways at 1366 px: {wide[:4]}"
    reader.settle_at_the_end(page, tab.served)
    if reader.has_widgets(site, page_path):
        check_figures(page, page_path, "desktop")
    weight = tab.weight(site, page_path)
    assert problems == CLEAN, f"{page_path}: {problems}"
    assert weight.total <= weight.budget, (
        f"{page_path} weighs {weight.total / 1e6:.2f} MB, over its {weight.budget / 1e6:.0f} MB: "
        + ", ".join(f"{kind} {size / 1e3:.0f} kB" for kind, size in sorted(weight.by_kind.items())))


def check_figures(page, page_path: str, width: str) -> None:
    """The page's interactive figures in the light theme and, switched with the page's own
    switch (no reload), in the dark one: every text at 4.5:1 or more against what it is
    drawn on, and at least 9 px high; a screenshot of the dark page for a reviewer."""
    bad = []
    for mode in ("light", "dark"):
        reader.set_theme(page, mode)
        for item in reader.figure_text(page):
            if item["contrast"] < reader.TEXT_CONTRAST or item["size"] < reader.MIN_TEXT_PX:
                bad.append(f"{mode}: {item['figure']} {item['text']!r} contrast {item['contrast']:.2f}, "
                           f"{item['size']:.1f} px")
    page.locator(".companion-figure").first.scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / reader.screenshot_name(page_path, f"{width}-dark")))
    reader.set_theme(page, "light")
    assert bad == [], f"{page_path} at {width} width: {len(bad)} figure texts hard to read: {bad[:6]}"


def check_plots(page, site: Path, page_path: str) -> None:
    """Each static plot's tick labels and legend at least 9 px high as the phone draws it."""
    small = []
    for plot in reader.plot_images(page):
        sizes = reader.plot_text_sizes((site / plot["src"].lstrip("/")).read_text(encoding="utf-8"))
        scale = plot["width"] / sizes["width"]
        for kind in ("tick labels", "legend"):
            if kind in sizes and sizes[kind] * scale < reader.MIN_TEXT_PX:
                small.append(f"{plot['src'].rsplit('/', 1)[-1][:12]}: {kind} {sizes[kind] * scale:.1f} px")
    assert small == [], f"{page_path} on a phone: {small}"


def check_phone(tab: reader.Tab, site: Path, page_path: str, drawers: bool = True) -> None:
    """At 390 px, opened in ``tab`` (a phone's tab that has opened other pages of the site):
    both drawers open and close (with ``drawers``), nothing scrolls sideways, plots and
    figures legible, nothing goes wrong."""
    page, problems = tab.open(page_path)
    page.screenshot(path=str(SCREENSHOTS / reader.screenshot_name(page_path, "phone")))
    reader.settle_at_the_end(page)
    check_plots(page, site, page_path)
    if reader.has_widgets(site, page_path):
        check_figures(page, page_path, "phone")
    page.evaluate("window.scrollTo({top: 0, behavior: 'instant'})")
    # the drawers' slide-in is a transition: without it they are at rest at once
    page.add_style_tag(content="* { transition: none !important; }")
    overflow = reader.horizontal_overflow(page)
    assert overflow <= 0, f"{page_path} scrolls sideways by {overflow} px: {reader.widest_elements(page)}"
    if not drawers:
        assert problems == CLEAN, f"{page_path}: {problems}"
        return
    assert _drawer_x(page, "primary") < 0, f"{page_path}: navigation drawer open before a tap"
    open_drawer(page, "primary")
    _wait_for_drawer(page, "primary", True, f"{page_path}: the menu button does not open the navigation")
    assert page.url.endswith(page_path)
    assert page.locator(".bd-sidebar-primary nav a:visible").count() > 5, page_path
    close_drawer(page, "primary")
    _wait_for_drawer(page, "primary", False, f"{page_path}: the navigation drawer does not close")
    if page.locator(".secondary-toggle:visible").count():
        assert _drawer_x(page, "secondary") >= reader.PHONE["width"], page_path
        open_drawer(page, "secondary")
        _wait_for_drawer(page, "secondary", True, f"{page_path}: 'Contents' does not open")
        close_drawer(page, "secondary")
        _wait_for_drawer(page, "secondary", False, f"{page_path}: 'Contents' does not close")
    assert problems == CLEAN, f"{page_path}: {problems}"


@pytest.mark.parametrize("group", range(PAGE_GROUPS))
def test_every_page_on_a_laptop_and_a_phone(browser, site_server, built_site, group):
    """Every page, opened with no network at both widths (a group of them per test), in
    one tab per width: on a laptop with the cache off, so that each page loads as on a
    first visit and its weight is what that visit transfers; on a phone one page after the
    other, as a reader follows links. Its screenshots at both widths go to
    ``_build/screenshots/`` for a reviewer."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    laptop = reader.Tab(browser, site_server, viewport=reader.DESKTOP, cold=True)
    phone = reader.Tab(browser, site_server, viewport=reader.PHONE)
    try:
        api_pages_seen = 0
        for page_path in pages_of_group(built_site, group):
            check_desktop(laptop, built_site, page_path)
            # the drawers are the theme's, the same on every page of the generated API
            # reference: opened and closed on its first page of each group, and on every
            # other page
            api = page_path.startswith("book/api/")
            check_phone(phone, built_site, page_path, drawers=not api or api_pages_seen == 0)
            api_pages_seen += api
    finally:
        laptop.close()
        phone.close()


def test_a_tab_with_its_cache_off_weighs_a_page_as_a_first_visit(browser, site_server, built_site):
    """The laptop checks weigh each page in one tab with its cache off; what they count is
    what a new browser context, with nothing cached, loads: the same files, byte for byte.
    Pages of each kind, opened in turn, so that the tab has loaded others before."""
    pages = html_pages(built_site)
    chosen = ["lessons/03_rope.html", pages[0], "lessons/09_lab.html"]
    tab = reader.Tab(browser, site_server, viewport=reader.DESKTOP, cold=True)
    try:
        for page_path in chosen:
            page, _ = tab.open(page_path)
            reader.settle_at_the_end(page, tab.served)
            in_the_tab = tab.weight(built_site, page_path)
            first_visit = reader.measure(browser, site_server, page_path, built_site)
            assert in_the_tab == first_visit, page_path
            assert in_the_tab.by_kind["font"] > 0 and in_the_tab.by_kind["style"] > 0, page_path
    finally:
        tab.close()


def test_phone_navigation_follows_a_link(browser, site_server):
    page, problems = reader.open_offline(browser, site_server, "lessons/00_why_positions.html",
                                         viewport=reader.PHONE)
    try:
        open_drawer(page, "primary")
        _wait_for_drawer(page, "primary", True, "the menu button does not open the navigation")
        page.locator(".bd-sidebar-primary a[href$='03_rope.html']").first.click()
        page.wait_for_url("**/lessons/03_rope.html")
        assert page.locator("article h1").first.inner_text().startswith("3.")
        open_drawer(page, "secondary")
        _wait_for_drawer(page, "secondary", True, "'Contents' does not open")
        link = page.locator(".bd-sidebar-secondary nav a").nth(2)
        target = link.get_attribute("href")
        assert target.startswith("#")
        link.click()
        page.wait_for_url("**" + target)
        assert problems["outside"] == [] and problems["console"] == []
    finally:
        page.context.close()


def test_launch_menu_entries(browser, site_server):
    """Every launch-menu entry works offline: Binder and Colab are plain links to the reader's edition; no Live Code."""
    page, problems = open_offline(browser, site_server, "lessons/03_rope.html")
    try:
        page.locator(".dropdown-launch-buttons > button").click()
        entries = page.locator(".dropdown-launch-buttons .dropdown-item")
        repo = "positions-in-transformers/positions-in-transformers"
        expected = {
            "Binder": f"https://mybinder.org/v2/gh/{repo}/main?urlpath=tree/notebooks/03_rope.ipynb",
            "Colab": f"https://colab.research.google.com/github/{repo}/blob/main/notebooks/03_rope.ipynb",
        }
        for entry in entries.all():
            label = entry.inner_text().strip()
            assert entry.is_visible(), label
            # an entry that leaves the site is an ordinary link: its address, not a visit
            assert entry.evaluate("e => e.tagName") == "A", f"{label} is not a plain link"
            assert entry.get_attribute("href") == expected.pop(label, None), label
        assert expected == {}, f"missing from the launch menu: {sorted(expected)}"
        assert "Live Code" not in page.content() and page.locator("script[src*=thebe]").count() == 0
        # the download menu: the notebook is served by the site; "print" stays on the page
        # and says that it prints the page
        page.keyboard.press("Escape")
        page.locator(".dropdown-download-buttons > button").click()
        for entry in page.locator(".dropdown-download-buttons .dropdown-item").all():
            href = entry.get_attribute("href")
            if href:
                assert page.request.get(page.url.rsplit("/", 1)[0] + "/" + href).ok, href
            else:
                assert entry.inner_text().strip() == "Print this page"
                page.evaluate("window.print = () => { window.__printed = true; }")
                entry.click()
                assert page.evaluate("window.__printed") is True
        assert problems == CLEAN, problems
    finally:
        page.context.close()


def test_dark_mode_and_search(browser, site_server):
    """The theme's light/dark switch and the offline search work with the pinned theme."""
    page, problems = open_offline(browser, site_server, "lessons/06_beyond_training_length.html")
    try:
        switch = page.locator(".theme-switch-button:visible").first
        for _ in range(3):
            if page.evaluate("document.documentElement.dataset.theme") == "dark":
                break
            switch.click()
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        red, green, blue = (int(v) for v in re.findall(r"\d+", background)[:3])
        assert red + green + blue < 3 * 80, background
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "dark-mode--desktop.png"))
        page.goto(site_server + "search.html?q=YaRN", wait_until="networkidle")
        results = page.locator("#search-results li")
        results.first.wait_for(timeout=15000)
        page.wait_for_function("document.querySelector('#search-results .search-summary') !== null")
        assert results.count() >= 5
        # the chapters and the glossary come before the API entries named after YaRN
        links = [link.get_attribute("href") for link in page.locator("#search-results li > a").all()]
        first_api = next(i for i, href in enumerate(links) if "book/api/" in href)
        before = links[:first_api]
        assert any("lessons/06_beyond_training_length" in href for href in before), links[:8]
        assert any("book/glossary" in href for href in before), links[:8]
        summaries = " ".join(page.locator("#search-results p.context").all_inner_texts())
        assert "\\(" not in summaries and "\\[" not in summaries
        # the chapter that explains a method comes first for its name
        page.goto(site_server + "search.html?q=rotary+embedding", wait_until="networkidle")
        page.wait_for_function("document.querySelector('#search-results .search-summary') !== null")
        first = page.locator("#search-results li > a").first.get_attribute("href")
        assert "lessons/03_rope" in first, first
        assert problems == CLEAN, problems
    finally:
        page.context.close()


def test_figure_captions_and_solution_dropdowns(browser, site_server):
    page, problems = open_offline(browser, site_server, "lessons/03_rope.html")
    try:
        # one caption on screen, the chapter's; the figure's own is for screen readers
        figure = page.locator("[data-figure='rope_rotation']")
        figure.wait_for(timeout=15000)
        caption = figure.locator(".cf-caption")
        style = caption.evaluate("e => [getComputedStyle(e).position, getComputedStyle(e).clip]")
        assert style == ["absolute", "rect(0px, 0px, 0px, 0px)"]  # clipped away, still read aloud
        assert "Move both one later (+1)" in figure.locator(".cf-caption").text_content()
        # a solution opens and closes when its title is clicked, and the page stays put
        solution = page.locator(".solution.dropdown").first
        title = solution.locator(".admonition-title")
        assert title.locator("a").count() == 0
        assert re.match(r"Solution to Exercise 3\.\d+", title.inner_text())
        url = page.url
        body = solution.locator("section").first
        assert not body.is_visible()
        title.click()
        assert body.is_visible() and page.url == url
        title.click()
        assert not body.is_visible()
        assert problems["console"] == [] and problems["outside"] == []
    finally:
        page.context.close()


def test_lesson_0_math_and_figure(browser, site_server):
    page, problems = open_offline(browser, site_server, "lessons/00_why_positions.html")
    try:
        formulas = page.locator(".math > math")
        assert formulas.count() > 50
        # laid out by the browser in the site's math font (its OpenType MATH table)
        page.evaluate("document.fonts.ready")
        assert page.evaluate("[...document.fonts].some(f => f.family.includes('STIX2') && f.status === 'loaded')")
        assert formulas.first.evaluate("m => getComputedStyle(m).fontFamily").startswith("STIX2")
        # every square root of the page (the attention formula of Definition 0.1 first)
        # draws its radical sign: the root is wider than what is under it
        radicals = page.evaluate("""() => [...document.querySelectorAll('.math msqrt')].map((root) => {
            const inner = [...root.children].reduce((w, c) => w + c.getBoundingClientRect().width, 0);
            return (root.getBoundingClientRect().width - inner) / parseFloat(getComputedStyle(root).fontSize);
        })""")
        assert len(radicals) >= 3 and min(radicals) > 0.4, radicals
        figure = page.locator("[data-figure='permutation_explorer']")
        figure.wait_for(timeout=15000)
        # starts at the order C A B, no mask: every row is the same as for A B C
        assert figure.locator("button[aria-pressed=true]").inner_text() == "C A B"
        flags = figure.locator("td.pe-flag")
        assert [f.get_attribute("data-same") for f in flags.all()] == ["true"] * 3
        # switch the mask on: in C A B every token sees a different set of tokens
        figure.locator("input.pe-mask").check()
        assert [f.get_attribute("data-same") for f in flags.all()] == ["false"] * 3
        # B A C: only C keeps its row (it still sees {A, B, C}); keyboard works too
        button = figure.locator("button[data-value='2']")
        button.focus()
        page.keyboard.press("Enter")
        rows = figure.locator(".pe-outputs tr[data-token]")
        assert [r.get_attribute("data-token") for r in rows.all()] == ["B", "A", "C"]
        assert [f.get_attribute("data-same") for f in flags.all()] == ["false", "false", "true"]
        assert "1 of 3 tokens keep their output row (C)" in figure.locator(".cf-readout").inner_text()
        assert "1 of 3 tokens keep their output row (C)" in figure.locator(".cf-description").inner_text()
        # weights shown are a probability distribution in every row
        cells = figure.locator(".pe-weights td")
        values = [float(c.get_attribute("data-value")) for c in cells.all()]
        for row in range(3):
            assert abs(sum(values[3 * row : 3 * row + 3]) - 1) < 1e-5
        assert problems["console"] == [] and problems["outside"] == []
    finally:
        page.context.close()


def test_site_serves_its_own_front_end_files(built_site):
    vendor = built_site / "_static" / "vendor"
    for name in ("anywidget-static.js", "book.css", "math/temml.css", "math/book-math.woff", "math/OFL.txt",
                 "icons/css/icons.css", "icons/webfonts/fa-solid-900.woff"):
        assert (vendor / name).is_file(), name
    html = (built_site / "lessons" / "00_why_positions.html").read_text()
    assert "application/vnd.jupyter.widget-state+json" in html
    assert "vendor/anywidget-static.js" in html
    for heavy in ("embed-amd.js", "require.js", "tex-mml-chtml.js", "mjx-container", "fontawesome.js", "all.min.js",
                  "all.min.css"):
        assert heavy not in html, heavy
    for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com"):
        assert f'src="https://{cdn}' not in html


def test_every_page_describes_itself(built_site):
    """A description, sharing tags, a favicon, the version and the build date on every page."""
    for page_path in html_pages(built_site):
        html = (built_site / page_path).read_text()
        description = re.search(r'<meta name="description" content="([^"]+)"', html)
        assert description and len(description.group(1)) > 40, page_path
        assert '<meta property="og:title"' in html and 'rel="icon"' in html, page_path
        assert re.search(r"Version \d+\.\d+\.\d+ · built \d+ \w+ \d{4}", html), page_path


def test_numbering_within_chapters(built_site):
    """Exercises, theorems and definitions read "Exercise 3.2": the chapter, then the count in it."""
    for page in sorted((built_site / "lessons").glob("[0-9][0-9]_*.html")):
        chapter = int(page.name[:2])
        text = re.sub(r"<[^>]+>", "", page.read_text())
        numbers = re.findall(r"\b(?:Exercise|Theorem|Definition|Lemma|Proposition) (\d+(?:\.\d+)?)\b", text)
        book_wide = sorted({n for n in numbers if "." not in n})
        assert not book_wide, f"{page.name}: numbered across the book: {book_wide[:5]}"
        own = sorted({int(k) for c, k in re.findall(r"Exercise (\d+)\.(\d+)", text) if int(c) == chapter})
        assert own[:2] == [1, 2], page.name


def test_every_image_has_a_text_alternative(built_site):
    """Plots carry the alt text of their cell metadata, not a file name (figures: their description)."""
    missing = []
    for page_path in html_pages(built_site):
        if page_path == "py-modindex.html":  # Sphinx's module index: its only images are the
            continue                          # expand/collapse toggles of the subpackages
        article = (built_site / page_path).read_text().split('<article class="bd-article"', 1)[-1]
        for tag in re.findall(r"<img\b[^>]*>", article):
            alt = re.search(r'alt="([^"]*)"', tag)
            text = alt.group(1) if alt else ""
            if len(text) < 15 or re.fullmatch(r"[\w./-]+\.(png|svg|jpe?g)", text):
                missing.append(f"{page_path}: {text or '(none)'}")
    assert missing == [], missing[:10]


def test_bibliography_labels_are_author_year(built_site):
    html = (built_site / "book" / "references.html").read_text()
    bracketed = r'<span class="label"><span class="fn-bracket">\[</span>(.*?)<span class="fn-bracket">\]'
    labels = [re.sub(r"<[^>]+>", "", label) for label in re.findall(bracketed, html)]
    assert len(labels) > 20
    assert all(re.fullmatch(r".+, (\d{4}[a-z]?|n\.d\.)", label) for label in labels), labels[:5]
    assert "Vaswani et al., 2017" in labels


def test_pybtex_finds_every_installed_plugin_in_its_registry():
    """:mod:`bookwork.sphinx.bibliography_labels` registers the installed pybtex plugins at run
    time: each group and name is there with the very class its entry point loads, so
    the bibliography is formatted as before, and a name is found without reading the
    environment's entry points (which pybtex would do on every look-up)."""
    from importlib.metadata import entry_points

    from pybtex.plugin import _DEFAULT_PLUGINS, _RUNTIME_PLUGINS, find_plugin

    installed = [(kind, point) for group in _DEFAULT_PLUGINS
                 for kind in (group, f"{group}.aliases", f"{group}.suffixes")
                 for point in entry_points(group=kind)]
    assert len(installed) > 20
    for kind, point in installed:
        assert _RUNTIME_PLUGINS[kind][point.name] is point.load(), f"{kind}: {point.name}"
    assert find_plugin("pybtex.backends", "plaintext") is find_plugin("pybtex.backends", "text")
    assert find_plugin("pybtex.style.formatting", "plain_author_year") is bibliography_labels.PlainAuthorYear


def test_every_module_has_an_api_page(built_site):
    """Every public module of companion has a page, in the overview, without torch's inherited text."""
    modules = public_modules()
    assert {"companion.rope", "companion.figures.rope", "companion.checks", "companion.mistakes"} <= set(modules)
    assert any(m == "companion.lab" or m.startswith("companion.lab.") for m in modules)
    overview = (built_site / "book" / "api.html").read_text()
    for module in modules:
        page = built_site / "book" / "api" / f"{module}.html"
        assert page.is_file(), module
        text = page.read_text()
        assert f'id="module-{module}"' in text, module
        assert "Should be overridden by all subclasses" not in text, module
        assert f'href="api/{module}.html' in overview, f"{module} missing from the overview"
    overview_text = re.sub(r"<[^>]+>", "", overview)
    assert ":py:" not in overview_text and "{py:" not in overview_text, "markup shown as text in the overview"


@pytest.fixture(scope="module")
def broken_book(tmp_path_factory):
    """A small book built as the README builds it: a page of markup that must fail the
    build and a notebook that raises. Returns the folder and the build's log."""
    folder = tmp_path_factory.mktemp("broken-book")
    shutil.copy(ROOT / "_config.yml", folder / "_config.yml")
    (folder / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", folder / "book" / "references.bib")
    (folder / "node_modules").symlink_to(ROOT / "node_modules")
    (folder / "index.md").write_text("# Index\n\nA page that reads well, with $x + y$ typeset as math.\n")
    (folder / "broken.md").write_text(
        "# Broken\n\n"
        "```\n```{admonition} What you will learn\n:class: tip\nSomething.\n```\n\n"
        "1. $a = \\operatorname{Re}[h]$ holds, and so\n- \\operatorname{Re}[g] = 0$ does.\n\n"
        "As the Theorem Theorem says.\n\n"
        "Shown on purpose:\n\n````markdown\n```{note}\nA note.\n```\n````\n\n"
        # a fence nested in a longer one is fine
        "````{note}\nStart from\n\n```python\nx = 1\n```\n\nand write the rest.\n````\n\n"
        # an API table in reStructuredText markup, parsed as Markdown
        "| Module | Summary |\n|---|---|\n| :py:obj:`companion.rope <companion.rope>` | RoPE. |\n\n"
        # a figure's caption far from any figure
        "*Figure 2. RoPE on one pair of components.*\n\n"
        # a numbered reference in a heading: the contents would show the label
        "(a-figure)=\n## A figure\n\n```{figure} data:,\n:name: fig-x\n\nA caption.\n```\n\n"
        "## Try it: {numref}`fig-x`\n\nText.\n\n"
        # text on the line after a table's last row: Markdown makes it a row of the table
        "| Method | Base | Reach |\n|---|---|---|\n| PI | $10^4$ | 32k |\nThe table shows three methods.\n\n"
        # a code fence nested in a directive with as many backticks closes it early; the
        # closing fence then opens an empty block (last, as at the end of a notebook cell)
        "```{note}\nStart from\n\n```python\nx = 1\n```\n\nand write the rest.\n```\n"
    )
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Raises"},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
             "source": "raise RuntimeError('boom')"},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (folder / "raises.ipynb").write_text(json.dumps(nb))
    (folder / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n  - file: broken\n  - file: raises\n")
    result = build_book(folder)
    return folder, result.returncode, re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)


def test_markup_shown_as_text_fails_the_build(broken_book):
    """A stray fence, TeX outside math, a doubled word, a fence that closes its directive
    early, a role left as text, a caption away from its figure and a paragraph run into
    a table each fail the build, with a message."""
    _, returncode, log = broken_book
    assert returncode != 0
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    assert any("broken.md" in w and "MyST markup shown as a code block" in w for w in warnings), warnings
    assert any("broken.md" in w and "TeX command shown as text" in w for w in warnings), warnings
    assert any("broken.md" in w and "doubled word: 'Theorem Theorem'" in w for w in warnings), warnings
    assert any("broken.md" in w and "an empty code block" in w for w in warnings), warnings
    assert any("broken.md" in w and "a role shown as text" in w for w in warnings), warnings
    assert any("broken.md" in w and "a figure caption away from its figure" in w for w in warnings), warnings
    assert any("broken.md" in w and "a numbered reference in a heading" in w for w in warnings), warnings
    assert any("broken.md" in w and "a paragraph swallowed by the table above it" in w for w in warnings), warnings
    assert not any("index.md" in w for w in warnings), warnings
    # the markup shown on purpose and the properly nested fence are not flagged
    assert len([w for w in warnings if "broken.md" in w]) == 8, warnings
    assert all("broken.md" in w or "raises" in w for w in warnings), "only the two broken pages warn"


def test_a_notebook_that_raises_fails_the_build(broken_book):
    """The build must not publish a traceback: a raising notebook is a failed build."""
    folder, returncode, log = broken_book
    assert returncode != 0
    assert any("raises" in line and "WARNING" in line for line in log.splitlines()), log[-3000:]
    report = folder / "_build" / "html" / "reports" / "raises.err.log"
    assert "RuntimeError: boom" in re.sub(r"\x1b\[[0-9;]*m", "", report.read_text())  # drop terminal colours


def test_lesson_pages_keep_solutions_and_hide_assignment_markup(built_site):
    """Solutions stay in dropdowns; otter's markers, configs and checks never reach a page."""
    for page in sorted((built_site / "lessons").glob("[0-9][0-9]_*.html")):
        html = page.read_text()
        assert 'class="solution dropdown' in html or "solution dropdown" in html, page.name
        for markup in ("BEGIN SOLUTION", "END SOLUTION", "# SOLUTION", "BEGIN QUESTION",
                       "BEGIN TESTS", "# HIDDEN", "all_or_nothing", "def test_"):
            assert markup not in html, f"{page.name}: {markup}"


#: Formulas whose drawing holds glyphs that are in no element's text (the radical of
#: <msqrt> and <mroot>) or that the browser picks from the font's MATH table (a stretched
#: fence, a larger size, a stretched accent), with the plain constructs beside them.
IMPLICIT_GLYPHS = [r"\sqrt{d_k}", r"\sqrt[3]{y}", r"\sqrt{\frac{QK^{\mathsf T}}{d}}", r"\left(\frac{a}{b}\right)",
                   r"\Bigl\|x\Bigr\|", r"\hat q", r"\widehat{ab}", r"\vec v", r"\tilde\theta_i", r"a - b",
                   r"\operatorname{softmax}\left(\frac{S}{\sqrt{d}}\right)"]


def test_the_math_font_keeps_what_mathml_draws_without_text(browser, tmp_path):
    """The site's font subset draws each construct exactly as the whole font does.

    The formulas are typeset as the build does (Temml), the font is cut to them as the build
    cuts it (:func:`bookwork.sphinx.offline.font_subsets.subset_math_font`), and Chromium
    draws every formula twice, in the cut and in the whole STIX Two Math: the pixels must be
    the same, and a radical must have ink. A glyph left out of the cut is drawn by a
    fallback font or not at all (a square root with no radical sign) and fails."""
    from PIL import Image, ImageChops

    request = {"macros": {}, "pages": [{"formulas": [{"tex": tex, "display": True} for tex in IMPLICIT_GLYPHS]}]}
    typeset = subprocess.run(["node", str(ASSETS / "typeset.cjs")], input=json.dumps(request), capture_output=True,
                             text=True, check=True, env=dict(os.environ, NODE_PATH=str(ROOT / "node_modules")))
    (page_of_math,) = json.loads(typeset.stdout)
    assert page_of_math["errors"] == []
    whole = ROOT / "node_modules" / MATH_FONT_SOURCE
    subset_math_font(whole, ["".join(page_of_math["html"])], tmp_path / "cut.woff")
    shutil.copy(whole, tmp_path / "whole.woff")
    boxes = "".join(f'<div class="cut" style="top:{150 * i}px">{mathml}</div>'
                    f'<div class="whole" style="top:{150 * i}px">{mathml}</div>'
                    for i, mathml in enumerate(page_of_math["html"]))
    (tmp_path / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><style>"
        "@font-face { font-family: Cut; src: url(cut.woff) format('woff'); }"
        "@font-face { font-family: Whole; src: url(whole.woff) format('woff'); }"
        "body { background: #fff; color: #000; font-size: 40px; margin: 0; }"
        "div { position: absolute; width: 400px; height: 140px; }"
        ".cut { left: 0; } .cut math { font-family: Cut; }"
        ".whole { left: 450px; } .whole math { font-family: Whole; }"
        f"</style>{boxes}", encoding="utf-8")
    base, stop = serve(tmp_path)
    page = browser.new_page(viewport={"width": 900, "height": 150 * len(IMPLICIT_GLYPHS)})
    try:
        page.goto(base + "index.html", wait_until="load")
        page.wait_for_function("document.fonts.status === 'loaded' && document.fonts.size === 2"
                               " && [...document.fonts].every((f) => f.status === 'loaded')")

        def ink(locator):
            image = Image.open(io.BytesIO(locator.screenshot())).convert("L")
            return image.crop(ImageChops.invert(image).getbbox())

        different = []
        for i, tex in enumerate(IMPLICIT_GLYPHS):
            cut, whole_font = ink(page.locator(".cut").nth(i)), ink(page.locator(".whole").nth(i))
            if cut.size != whole_font.size or ImageChops.difference(cut, whole_font).getbbox() is not None:
                different.append(f"{tex}: {cut.size} in the cut, {whole_font.size} in the whole font")
        assert different == [], different
        # the radical sign has ink: the root is wider than what is under it
        for root in page.locator(".cut msqrt, .cut mroot").all():
            radical = root.evaluate("r => r.getBoundingClientRect().width"
                                    " - r.firstElementChild.getBoundingClientRect().width")
            assert radical > 10, radical
    finally:
        page.close()
        stop()


def test_the_site_math_font_has_every_character_of_the_site(built_site):
    """Every character of every page's MathML, and every one the browser draws without
    text, has a glyph in the font the site serves."""
    from fontTools.ttLib import TTFont

    font = TTFont(built_site / MATH_FONT)
    covered = set(font.getBestCmap())
    whole = set(TTFont(ROOT / "node_modules" / MATH_FONT_SOURCE).getBestCmap())
    missing = {}
    for page_path in html_pages(built_site):
        for formula in MATHML.findall((built_site / page_path).read_text(encoding="utf-8")):
            text = html.unescape(re.sub(r"<[^>]+>", "", formula))
            for character in {c for c in text if not c.isspace() and ord(c) not in covered}:
                missing.setdefault(character, page_path)
    # (MATH_ITALIC spans the alphabets with their holes: italic h is U+210E, not U+1D455)
    missing.update({chr(c): "(drawn without text)" for c in (DRAWN_WITHOUT_TEXT | MATH_ITALIC) & whole - covered})
    assert missing == {}, missing


def test_figures_are_numbered_within_chapters_as_in_the_reader_edition(built_site):
    """Plots and interactive figures share one sequence per chapter, Figure 3.1, 3.2, ...,
    on the site as in the reader's edition; every interactive figure has its caption."""
    import nbformat

    for page in sorted((built_site / "lessons").glob("[0-9][0-9]_*.html")):
        chapter = int(page.name[:2])
        html_text = page.read_text(encoding="utf-8")
        numbers = re.findall(r'<span class="caption-number">Figure (\d+)\.(\d+)', html_text)
        assert all(int(c) == chapter for c, _ in numbers), (page.name, numbers)
        assert [int(k) for _, k in numbers] == list(range(1, len(numbers) + 1)), (page.name, numbers)
        live = re.findall(r'<figure class="[^"]*\blive-figure\b[^"]*" id="(fig-\d\d-[a-z-]+)"', html_text)
        assert len(live) == html_text.count('class="companion-fallback"'), f"{page.name}: a live figure without caption"
        edition = nbformat.read(ROOT / "notebooks" / page.with_suffix(".ipynb").name, as_version=4)
        written = [int(k) for cell in edition.cells if cell.cell_type == "markdown"
                   for c, k in re.findall(r"^\*Figure (\d+)\.(\d+)", cell.source)]
        assert written == [int(k) for _, k in numbers], (page.name, written, numbers)


def test_folded_cells_are_labelled_on_the_site(built_site):
    """Every fold of every chapter shows the label its cell's first line gives it
    (:mod:`bookwork.sphinx.folded_cells`): "Check: ...", "Plot: ..." or "Setup: ...", never a bare
    "Show code cell source"."""
    for page in sorted((built_site / "lessons").glob("[0-9][0-9]_*.html")):
        labels = re.findall(r'<p class="collapsed admonition-title">([^<]*)</p>', page.read_text(encoding="utf-8"))
        folds = [label for label in labels if label not in ("", "Show code cell output")]
        assert all(label.startswith(("Check: ", "Plot: ", "Setup: ")) for label in folds), (page.name, folds)
    page = (built_site / "lessons" / "10_what_your_model_runs.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<p class="collapsed admonition-title">Check: ', page)) >= 10


def test_the_preface_maps_every_chapter_and_module():
    """The preface's chapter map has a row for every chapter, and its table of the package
    a row for every public module of companion: a chapter or a module added later fails
    here until the preface names it."""
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    chapter_map = intro.split("## Chapter map", 1)[1].split("\n## ", 1)[0]
    lessons = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
    rows = re.findall(r"^\| \{doc\}`\.\./lessons/(\w+)` \|", chapter_map, re.MULTILINE)
    assert rows == [lesson.stem for lesson in lessons], rows
    package = intro.split("## The `companion` package", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(companion\.\w+)`", package))
    modules = {".".join(module.split(".")[:2]) for module in public_modules()}
    assert modules - named == set(), f"modules missing from the preface's table: {sorted(modules - named)}"
    assert named - modules == set(), f"the preface names modules that do not exist: {sorted(named - modules)}"


def test_prose_is_set_in_a_readable_column(browser, site_server):
    """At laptop width a paragraph's lines hold about 75 characters (60 to 85), while code
    cells and figures keep the whole column."""
    page, problems = open_offline(browser, site_server, "lessons/03_rope.html")
    try:
        per_line = page.evaluate("""() => {
          const counts = [];
          for (const p of document.querySelectorAll('.bd-article section > p')) {
            const text = p.textContent.replace(/\\s+/g, ' ').trim();
            const lines = Math.round(p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight));
            if (lines >= 4) counts.push(text.length / lines);
          }
          return counts;
        }""")
        assert len(per_line) > 10
        average = sum(per_line) / len(per_line)
        assert 60 <= average <= 85, average
        prose = page.locator(".bd-article section > p").first.bounding_box()["width"]
        code = page.locator(".bd-article div.cell_input").first.bounding_box()["width"]
        assert code > prose + 40, (code, prose)
        # a box's title bar (Definition 3.1, an exercise, a fold) spans its box, though the
        # text under it keeps to the column
        short_bars = page.evaluate("""() => [
            ...document.querySelectorAll('.bd-article .admonition > .admonition-title')]
            .filter((title) => title.getBoundingClientRect().width > 0)
            .map((title) => title.parentElement.getBoundingClientRect().right - title.getBoundingClientRect().right)
            .filter((gap) => gap > 2)""")
        assert short_bars == [], f"{len(short_bars)} box titles stop short of their box: {short_bars[:4]}"
    finally:
        page.context.close()


def test_a_wide_table_on_a_phone_shows_that_it_scrolls(browser, site_server):
    """A table wider than a phone's column scrolls inside itself and fades out at the
    edge where there is more (book.js, book.css)."""
    page, problems = reader.open_offline(browser, site_server, "lessons/10_what_your_model_runs.html",
                                         viewport=reader.PHONE)
    try:
        page.wait_for_load_state("load")
        table = page.locator(".bd-article table").filter(has_text="gpt-oss-20b").first
        assert table.evaluate("t => t.scrollWidth > t.clientWidth")
        assert "scroll-more-right" in table.get_attribute("class")
        assert table.evaluate("t => getComputedStyle(t).maskImage || getComputedStyle(t).webkitMaskImage") != "none"
        table.evaluate("t => { t.scrollLeft = t.scrollWidth; t.dispatchEvent(new Event('scroll')); }")
        page.wait_for_function("t => !t.classList.contains('scroll-more-right')", arg=table.element_handle())
        assert "scroll-more-left" in table.get_attribute("class")
        assert problems["console"] == []
    finally:
        page.context.close()


def test_a_square_root_leaves_no_gap_after_its_radicand(browser, site_server):
    """The browser sizes <msqrt> for the widest radical sign of the math font; book.js
    closes the gap, so what follows a root starts where the radicand ends (√d_k then ")")."""
    page, problems = open_offline(browser, site_server, "book/glossary.html")
    try:
        page.evaluate("document.fonts.ready")
        page.wait_for_function("[...document.querySelectorAll('.bd-article msqrt')].every(r => r.dataset.gapClosed)")
        gaps = page.evaluate("""() => [...document.querySelectorAll('.bd-article msqrt')].map((root) => {
            const next = root.nextElementSibling;
            if (!next) return null;
            const end = root.lastElementChild.getBoundingClientRect().right;
            return (next.getBoundingClientRect().left - end) / parseFloat(getComputedStyle(root).fontSize);
        }).filter((gap) => gap !== null)""")
        assert gaps and max(gaps) < 0.12, gaps
        assert problems["console"] == []
    finally:
        page.context.close()


def test_results_are_numbered_tables_with_numbers_right_aligned(built_site):
    """A captioned companion.tables.Table is a numbered table of its chapter ("Table 10.1"),
    its caption above it; its numeric columns are right-aligned."""
    html_text = (built_site / "lessons" / "10_what_your_model_runs.html").read_text(encoding="utf-8")
    table = html_text.split('id="tab-10-configurations"', 1)[1].split("</table>", 1)[0]
    assert re.search(r'<caption><span class="caption-number">Table 10\.1 </span>', table)
    header = re.findall(r'<th class="head text-(\w+)"><p>([^<]*)', table)
    aligned = dict((name, side) for side, name in header)
    assert aligned["model"] == "left" and aligned["base"] == "right" and aligned["context"] == "right", aligned
    numbers = [int(k) for c, k in re.findall(r'<span class="caption-number">Table (\d+)\.(\d+) ', html_text)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 2
    assert "companion.tables:" not in html_text, "the table's marker comment reached the page"


def test_the_site_offers_the_reader_edition_from_every_page(built_site):
    """Every page's download menu offers the whole reader's edition (a zip the site serves);
    a chapter's offers its own notebook from the edition, not the lesson's source."""
    from bookwork.sphinx.editions import EDITION_ZIP

    assert (built_site / "notebooks" / EDITION_ZIP).is_file()
    for page_path in html_pages(built_site):
        html_text = (built_site / page_path).read_text(encoding="utf-8")
        if "dropdown-download-buttons" not in html_text:
            continue
        assert EDITION_ZIP in html_text, page_path
        if page_path.startswith("lessons/"):
            stem = Path(page_path).stem
            assert f'href="../notebooks/{stem}.ipynb"' in html_text, page_path
            assert (built_site / "notebooks" / f"{stem}.ipynb").is_file()
            assert f"_sources/lessons/{stem}.ipynb" not in html_text, page_path


def test_phone_tables_have_no_sliver_and_the_theme_button_always_changes(browser, site_server):
    """On a phone the tables of modules (the API overview, the preface) are lists, with no
    column squeezed under 90 px; the theme button shows the other theme at every press, and
    in the dark theme the static plots are drawn dark too."""
    page, problems = open_offline(browser, site_server, "book/api.html", viewport=reader.PHONE)
    try:
        page.wait_for_load_state("load")
        widths = page.evaluate("""() => [...document.querySelectorAll('.bd-article table tbody tr:first-child td')]
            .filter((td) => !td.closest('.companion-figure')).map((td) => td.getBoundingClientRect().width)""")
        assert widths and min(widths) >= 90, widths
        assert reader.horizontal_overflow(page) <= 0
    finally:
        page.context.close()
    # a table of results whose columns are narrow because their numbers are short stays a
    # table, its header naming the columns; a stacked table of three columns names the
    # column of each cell after the first
    page, problems = open_offline(browser, site_server, "lessons/00_why_positions.html", viewport=reader.PHONE)
    try:
        page.wait_for_load_state("load")
        numbers = page.locator(".bd-article table:has(caption)").first
        assert "table-stacked" not in (numbers.get_attribute("class") or ""), "Table 0.1 is set as a list on a phone"
        assert numbers.locator("thead").is_visible()
        page.goto(site_server + "book/intro.html")
        page.wait_for_load_state("load")
        named = page.evaluate("""() => [...document.querySelectorAll('.bd-article table.table-stacked')]
            .filter((t) => t.querySelectorAll('thead th').length === 3)
            .map((t) => [...t.querySelectorAll('tbody td:not(:first-child)')].every((td) => td.dataset.column))""")
        assert named and all(named), named
        # a table wider than the phone scrolls in its box; its caption stays on the screen
        page.goto(site_server + "lessons/03_rope.html")
        page.wait_for_load_state("load")
        captions = page.evaluate("""() => [...document.querySelectorAll('.bd-article table > caption')].map((c) =>
            [c.textContent.trim().slice(0, 12), c.parentElement.scrollWidth > c.parentElement.clientWidth + 1,
             Math.round(c.getBoundingClientRect().right)])""")
        assert any(scrolls for _, scrolls, _ in captions), "no table of chapter 3 scrolls on a phone"
        cut = [(name, right) for name, _, right in captions if right > reader.PHONE["width"]]
        assert cut == [], f"captions that run off the screen: {cut}"
    finally:
        page.context.close()
    page, problems = open_offline(browser, site_server, "lessons/03_rope.html")
    try:
        switch = page.locator(".theme-switch-button:visible").first
        themes = []
        for _ in range(3):
            switch.click()
            themes.append(page.evaluate("document.documentElement.dataset.theme"))
        assert themes == ["dark", "light", "dark"], themes
        plot = page.locator(".bd-article .cell_output img[src$='.svg']").first
        assert "invert" in plot.evaluate("img => getComputedStyle(img).filter")
        assert problems["console"] == []
    finally:
        page.context.close()


def test_the_search_field_shows_the_whole_query(browser, site_server):
    """The magnifier inside the search field does not cover the first letter of the query."""
    page, problems = open_offline(browser, site_server, "lessons/03_rope.html", viewport=reader.PHONE)
    try:
        page.locator(".search-button__button:visible").first.click()
        field = page.locator(".search-button__search-container input[type=search]")
        field.wait_for(state="visible")
        field.fill("YaRN")
        icon_right, text_left = page.evaluate("""() => {
            const form = document.querySelector('.search-button__search-container form');
            const input = form.querySelector('input');
            const icon = form.querySelector('i, svg');
            return [icon.getBoundingClientRect().right,
                    input.getBoundingClientRect().left + parseFloat(getComputedStyle(input).paddingLeft)]; }""")
        assert text_left >= icon_right + 2, (icon_right, text_left)
    finally:
        page.context.close()


def test_long_names_in_a_table_break_after_underscores(browser, site_server):
    """A long code name in a table may break after an underscore (as in print), so that it
    does not widen its column until the table scrolls sideways on a laptop and squeezes its
    other columns (chapter 6's methods, at 1280 px); the name as text is unchanged."""
    page, problems = open_offline(browser, site_server, "lessons/06_beyond_training_length.html",
                                  viewport={"width": 1280, "height": 800})
    try:
        page.wait_for_load_state("load")
        found = page.evaluate("""() => {
            const code = [...document.querySelectorAll('.bd-article table code.literal')]
                .find((c) => c.textContent === 'original_max_position_embeddings');
            const table = code && code.closest('table');
            return code ? [table.scrollWidth - table.clientWidth, code.getClientRects().length] : null; }""")
        assert found is not None, "chapter 6's methods table names original_max_position_embeddings"
        overflow, _ = found
        assert overflow <= 1, f"chapter 6's methods table scrolls sideways by {overflow} px on a laptop"
        assert problems["console"] == []
    finally:
        page.context.close()


def test_no_line_on_a_phone_opens_with_the_mark_after_a_formula(browser, site_server):
    """A formula in running text is one box; the full stop or comma after it stays on its
    line instead of opening the next one (". Why does ...", eleven times in chapter 3 at
    390 px)."""
    page, problems = open_offline(browser, site_server, "lessons/03_rope.html", viewport=reader.PHONE)
    try:
        page.wait_for_load_state("load")
        opened = page.evaluate("""() => [...document.querySelectorAll('.bd-article span.math')].filter((math) => {
            const mark = math.nextSibling;
            if (!mark || mark.nodeType !== Node.TEXT_NODE || !/^[.,;:)]/.test(mark.textContent)) return false;
            const range = document.createRange();
            range.setStart(mark, 0);
            range.setEnd(mark, 1);
            const at = range.getBoundingClientRect();
            return at.width > 0 && at.top > math.getBoundingClientRect().bottom - 2;
        }).map((math) => math.textContent.slice(0, 30))""")
        assert opened == [], f"{len(opened)} lines open with the mark after a formula: {opened[:4]}"
        assert reader.horizontal_overflow(page) <= 0
        assert problems["console"] == []
    finally:
        page.context.close()
