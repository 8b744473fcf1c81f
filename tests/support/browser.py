"""Helpers for looking at the built site in a browser as a reader would.

Used by the site tests (``tests/test_site.py``) and by :mod:`benchmarks.bench_figures`:
the site served on this machine only (:func:`serve`), the list of pages, what a page
weighs as served, whether it scrolls sideways, its drawers on a phone, and screenshots
for reviewers.
"""
from __future__ import annotations

import functools
import http.server
import re
import socketserver
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path

#: The widths a reader's screen has: a laptop and a phone (an iPhone 12 to 15).
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}

#: Page-weight budgets, bytes as served (uncompressed), for the median page of each kind.
WIDGET_PAGE_BUDGET = 2_000_000
OTHER_PAGE_BUDGET = 1_000_000
#: The tests hold each median this far under its budget, so that a chapter can grow a little.
HEADROOM = 0.85
#: No page of any kind may weigh more than this.
PAGE_CAP = 2_000_000

WIDGET_VIEW = 'type="application/vnd.jupyter.widget-view+json"'


def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 only, on a free port; returns (base URL, stop)."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(directory))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/", stop


def html_pages(site: Path) -> list[str]:
    """Every page a reader can reach, relative to the site root (index.html only redirects)."""
    skip = {"genindex.html", "search.html", "index.html", "prf-prf.html"}
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html")
                  if p.name not in skip and "_static" not in p.parts and "_sources" not in p.parts)


def has_widgets(site: Path, page_path: str) -> bool:
    """Whether the page shows an interactive figure."""
    return WIDGET_VIEW in (site / page_path).read_text(encoding="utf-8")


@dataclass
class Weight:
    """What one page cost to load: bytes as served, by kind of file."""

    page: str
    widgets: bool
    by_kind: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    @property
    def budget(self) -> int:
        return WIDGET_PAGE_BUDGET if self.widgets else OTHER_PAGE_BUDGET

    @classmethod
    def of(cls, page: str, widgets: bool, served: dict[str, int]) -> Weight:
        """From the bytes served for each address the page asked for (each file counts once)."""
        by_kind: dict[str, int] = {}
        for url, size in served.items():
            by_kind[kind_of(url)] = by_kind.get(kind_of(url), 0) + size
        return cls(page, widgets, by_kind)


def kind_of(url: str) -> str:
    path = url.split("?", 1)[0]
    for kind, pattern in (("font", r"\.(woff2?|ttf|otf|eot)$"), ("script", r"\.m?js$"), ("style", r"\.css$"),
                          ("image", r"\.(png|svg|jpe?g|gif|ico|webp)$")):
        if re.search(pattern, path):
            return kind
    return "html"


def measure(browser, base_url: str, page_path: str, site: Path, viewport=DESKTOP) -> Weight:
    """Load ``page_path`` cold (nothing cached), scrolled to the end, and add up the bytes served."""
    served: dict[str, int] = {}
    page, _ = open_offline(browser, base_url, page_path, viewport=viewport, served=served)
    settle_at_the_end(page, served)
    page.context.close()
    return Weight.of(page_path, has_widgets(site, page_path), served)


def settle_at_the_end(page, served: dict | None = None) -> None:
    """Scroll to the end of the page at once (not smoothly, as the theme would) and wait
    until it has everything it asks for: every image (those further down too) and every
    font it uses loaded. With ``served`` (the bytes
    served for each address, as :func:`open_offline` records them), also wait for the icon
    of the tab, which the browser fetches after the page, in its own time (at most 5 s)."""
    page.evaluate("window.scrollTo({top: document.body.scrollHeight, behavior: 'instant'})")
    page.wait_for_function("""() => document.readyState === 'complete'
        && [...document.images].every((image) => image.complete)
        && document.fonts.status === 'loaded'""", polling=50)
    icon = None if served is None else page.evaluate("() => document.querySelector('link[rel~=icon]')?.href ?? null")
    for _ in range(200):
        if icon is None or icon in served:
            break
        page.wait_for_timeout(25)


def summary(weights: list[Weight]) -> dict[str, dict[str, float]]:
    """Median and largest page of each kind, in bytes."""
    result = {}
    for label, chosen in (("widget pages", [w for w in weights if w.widgets]),
                          ("other pages", [w for w in weights if not w.widgets])):
        if chosen:
            totals = [w.total for w in chosen]
            result[label] = {"pages": len(chosen), "median": statistics.median(totals), "max": max(totals)}
    return result


def horizontal_overflow(page) -> int:
    """How many CSS pixels the page is wider than the window (0: no sideways scrolling)."""
    return page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")


def widest_elements(page, limit: int = 5) -> list[str]:
    """The elements that stick out past the right edge of the window, for a failure message."""
    return page.evaluate(
        """(limit) => {
          const out = [];
          for (const el of document.querySelectorAll('body *')) {
            const r = el.getBoundingClientRect();
            if (r.right > window.innerWidth + 1 && r.width > 0) {
              let scroller = false;
              for (let p = el.parentElement; p; p = p.parentElement) {
                const o = getComputedStyle(p).overflowX;
                if (o === 'auto' || o === 'scroll' || o === 'hidden') { scroller = true; break; }
              }
              if (!scroller) out.push(`${el.tagName.toLowerCase()}.${el.className} (${Math.round(r.right)} px)`);
            }
            if (out.length >= limit) break;
          }
          return out;
        }""",
        limit,
    )


def screenshot_name(page_path: str, label: str) -> str:
    return page_path.replace("/", "__").removesuffix(".html") + f"--{label}.png"


#: How the tests launch Chromium. Every request to a host other than the local server
#: goes to a proxy that is not there (port 9, the discard port, on this machine; the
#: loopback addresses always bypass a proxy), so nothing leaves the machine, and
#: :func:`open_offline` records each such request as a problem.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--proxy-server=http://127.0.0.1:9",
]


def open_offline(browser, base_url: str, page_path: str, viewport=DESKTOP, served: dict | None = None):
    """Open a page at ``viewport``, in a browser context of its own (close it with
    ``page.context.close()``), and record what goes wrong while it is open.

    Returns ``(page, problems)``; ``problems`` collects, as they happen, requests to any
    host other than the local server (which never leave the machine: ``CHROMIUM_FLAGS``),
    console errors and uncaught exceptions, and HTTP errors. With ``served``, a dict, it
    also records the bytes the local server sends for each address (:meth:`Weight.of`).
    The page is returned when it has loaded (the ``load`` event).
    """
    tab = Tab(browser, base_url, viewport)
    tab.served = served
    return tab.open(page_path)


class Tab:
    """One browser tab at one viewport that opens page after page, as a reader who follows
    links does: what the pages share (style sheets, scripts, fonts) comes from the
    browser's cache after the first page, and the settings a page stores (the theme) stay.

    With ``cold=True`` the tab's cache is off: every page loads each of its files again,
    as on a first visit, and :meth:`weight` is what that visit cost (what a new browser
    context would load; a test holds the two equal).

    :meth:`open` loads a page and returns ``(page, problems)`` as :func:`open_offline`
    does, ``problems`` collecting only what goes wrong while that page is open. Close the
    tab with :meth:`close`.
    """

    def __init__(self, browser, base_url: str, viewport=DESKTOP, cold: bool = False):
        self.base_url = base_url
        self.page = browser.new_context(viewport=viewport).new_page()
        self.problems = {"outside": [], "console": [], "http": []}
        self.served: dict[str, int] | None = None
        if cold:
            cdp = self.page.context.new_cdp_session(self.page)
            cdp.send("Network.enable")
            cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
            self.served = {}
        self.page.on("request", lambda request: None if request.url.startswith((base_url, "data:", "blob:"))
                     else self.problems["outside"].append(request.url))
        self.page.on("console", lambda msg: self.problems["console"].append(msg.text) if msg.type == "error" else None)
        self.page.on("pageerror", lambda err: self.problems["console"].append(f"uncaught: {err}"))
        self.page.on("response", self._record)

    def _record(self, response) -> None:
        if response.status >= 400:
            self.problems["http"].append(f"{response.status} {response.url}")
        elif self.served is not None and response.url.startswith(self.base_url):
            self.served[response.url] = int(response.headers.get("content-length", 0))

    def open(self, page_path: str):
        self.problems = {"outside": [], "console": [], "http": []}
        if self.served is not None:
            self.served.clear()
        self.page.goto(self.base_url + page_path, wait_until="load")
        return self.page, self.problems

    def weight(self, site: Path, page_path: str) -> Weight:
        """What the page just opened in this cold tab cost to load, scrolled to the end
        (:func:`settle_at_the_end` first)."""
        assert self.served is not None, "a tab with its cache on does not see every file a page loads"
        return Weight.of(page_path, has_widgets(site, page_path), dict(self.served))

    def close(self) -> None:
        self.page.context.close()


#: Text in the figures must reach WCAG AA contrast against what is behind it.
TEXT_CONTRAST = 4.5

#: For every piece of text a reader sees in the interactive figures of the page, its colour,
#: what it is drawn on, and the contrast between them (WCAG 2): text in an SVG is measured
#: against the shape under its middle (a heatmap cell, a band) or, where there is none, the
#: page; HTML text against its nearest background; see-through ink and shapes are blended
#: first. Also the text's size in CSS pixels as drawn.
FIGURE_TEXT = """() => {
  const parse = (c) => { const v = (c.match(/[\\d.]+/g) || []).map(Number);
    return v.length < 3 ? null : [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; };
  const over = (top, under) => { const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const lum = (c) => { const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255;
    return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const opacity = (el, stop) => { let o = 1;
    for (let e = el; e && e !== stop; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o; };
  const htmlBackground = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let base = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      const page = parse(getComputedStyle(document.body).backgroundColor);
      if (page && page[3] > 0) base = page;
    }
    for (const layer of layers.reverse()) base = over(layer, base);
    return base;
  };
  const shown = (el) => { const r = el.getBoundingClientRect(), st = getComputedStyle(el);
    return r.width > 1 && r.height > 1 && st.visibility !== 'hidden' && st.display !== 'none'
      && !el.closest('.cf-sr, .cf-caption, [aria-hidden=true] .cf-swatch'); };
  const found = [];
  for (const figure of document.querySelectorAll('.companion-figure')) {
    const name = figure.dataset.figure;
    for (const text of figure.querySelectorAll('svg text')) {
      if (!text.textContent.trim() || !shown(text)) continue;
      const st = getComputedStyle(text), svg = text.ownerSVGElement;
      const r = text.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
      let ground = htmlBackground(svg);
      const under = document.elementsFromPoint(x, y).filter((e) => e instanceof SVGGeometryElement
        && svg.contains(e) && !(e instanceof SVGTextContentElement));
      for (const shape of under.reverse()) {
        const fill = parse(getComputedStyle(shape).fill);
        if (!fill) continue;
        fill[3] *= Number(getComputedStyle(shape).fillOpacity) * opacity(shape, svg.parentElement);
        if (fill[3] > 0) ground = over(fill, ground);
      }
      const ink = parse(st.fill);
      if (!ink) continue;
      ink[3] *= Number(st.fillOpacity) * opacity(text, svg.parentElement);
      const m = text.getScreenCTM(), size = parseFloat(st.fontSize) * Math.hypot(m.a, m.b);
      found.push({ figure: name, text: text.textContent.trim().slice(0, 40),
                   contrast: ratio(over(ink, ground), ground), size });
    }
    const walker = document.createTreeWalker(figure, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || el.closest('svg, style') || !shown(el)) continue;
      const st = getComputedStyle(el), ground = htmlBackground(el), ink = parse(st.color);
      ink[3] *= opacity(el, figure.parentElement);
      found.push({ figure: name, text: node.textContent.trim().slice(0, 40), contrast: ratio(over(ink, ground), ground),
                   size: parseFloat(st.fontSize) });
    }
  }
  return found;
}"""


def figure_text(page) -> list[dict]:
    """Every piece of text shown in the page's interactive figures: the figure, the text, its
    contrast against what it is drawn on and its size in CSS pixels (:data:`FIGURE_TEXT`)."""
    return page.evaluate(FIGURE_TEXT)


def set_theme(page, mode: str) -> None:
    """Switch the book's theme with its own switch in the page header, as a reader does,
    until the page is in ``mode`` ("light" or "dark")."""
    switch = page.locator(".theme-switch-button:visible").first
    for _ in range(3):
        if page.evaluate("document.documentElement.dataset.theme") == mode:
            return
        switch.click()
    assert page.evaluate("document.documentElement.dataset.theme") == mode, mode


#: The smallest text a plot or a figure may show on a phone, in CSS pixels.
MIN_TEXT_PX = 9.0
#: A line of code up to this many characters fits its box at laptop width.
CODE_WIDTH = 88


def scrolling_code(page) -> list[dict]:
    """Code cells of the page whose code is wider than its box, with their longest line."""
    return page.evaluate("""() => [...document.querySelectorAll('.bd-article div.cell_input pre')]
        .filter((pre) => pre.scrollWidth > pre.clientWidth + 1)
        .map((pre) => ({longest: Math.max(...pre.textContent.split('\\n').map((l) => l.length)),
                        first: pre.textContent.split('\\n')[0].slice(0, 60),
                        over: pre.scrollWidth - pre.clientWidth}))""")


def plot_images(page) -> list[dict]:
    """The static plots of the page (SVG images in cell outputs): address and drawn width."""
    return page.evaluate("""() => [...document.querySelectorAll('.bd-article .cell_output img')]
        .filter((img) => /\\.svg($|\\?)/.test(img.getAttribute('src') || ''))
        .map((img) => ({src: new URL(img.src).pathname, width: img.getBoundingClientRect().width}))""")


FONT_SIZE = re.compile(r"font-size:\s*([\d.]+)px")
SVG = "{http://www.w3.org/2000/svg}"


def plot_text_sizes(svg: str) -> dict[str, float]:
    """The smallest font size of a matplotlib SVG's tick labels and legend entries, in the
    SVG's own units (the size of each label's text, not of a superscript inside it), and
    the width of its viewBox (``"width"``)."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.fromstring(svg)
    smallest: dict[str, float] = {"width": float(root.get("viewBox").split()[2])}
    for group in root.iter(f"{SVG}g"):
        name = group.get("id", "")
        kind = "tick labels" if re.match(r"[xy]tick_\d+$", name) else "legend" if name.startswith("legend_") else None
        if kind is None:
            continue
        for text in group.iter(f"{SVG}text"):
            size = FONT_SIZE.search(text.get("style", "")) or re.match(r"([\d.]+)", text.get("font-size", ""))
            if size:
                smallest[kind] = min(smallest.get(kind, float("inf")), float(size.group(1)))
    return smallest
