"""How fast the figures redraw in a browser, and how much the pages weigh.

Run after ``make book``: ``.venv/bin/python -m benchmarks.bench_figures``.

Opens the built figures page and chapter 0 in headless Chromium (the system's
``chromium``; no network), and for each figure performs 50 interactions of the kind a
reader makes (pressing a button, a key, or moving a slider). For each it measures, in
the page, the time from dispatching the input event to the end of the redraw with
layout forced (``sync``), and to the next animation frame (``frame``, which includes
waiting for the frame). Reports the medians, each figure's embedded widget state
(aim: under 1 MB), and what every page of the site weighs: each file it loads,
scrolled to the end, bytes as served (uncompressed), by kind of file, with the median
and the largest page of each kind against the budgets (pages with a figure 2 MB,
other pages 1 MB; :mod:`tests.support.browser`).
"""
from __future__ import annotations

import json
import re
import shutil
import statistics
import sys
from pathlib import Path

from tests.support import browser as reader
from tests.support.browser import CHROMIUM_FLAGS, serve

ROOT = Path(__file__).resolve().parents[1]

SITE = ROOT / "_build" / "html"
PAGES = ["book/figures.html", "lessons/00_why_positions.html"]
N = 50

# For each figure: a JavaScript expression, evaluated with `root` (the figure) and `i`
# (the interaction number), that performs one interaction.
INTERACTIONS = {
    "permutation_explorer": "root.querySelectorAll('button')[i % 6].click()",
    "position_term": ("root.querySelector('svg').dispatchEvent(new KeyboardEvent('keydown', "
                      "{key: i % 2 ? 'ArrowRight' : 'ArrowLeft', bubbles: true}))"),
    "rope_rotation": ("[...root.querySelectorAll('button')].find(b => b.textContent.includes('Move both one later'))"
                      ".click()"),
    "alibi_heatmap": "root.querySelectorAll('fieldset')[0].querySelectorAll('button')[i % 8].click()",
    "context_extension": ("(() => { const s = root.querySelector('input[type=range]'); s.value = String(1 + (i % 16)); "
                          "s.dispatchEvent(new Event('input', {bubbles: true})); })()"),
}

MEASURE = """async ([name, action, n]) => {
  const root = document.querySelector(`[data-figure='${name}']`);
  const sync = [], frame = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    (new Function('root', 'i', action))(root, i);
    void root.offsetHeight;  // force layout
    const t1 = performance.now();
    await new Promise((resolve) => requestAnimationFrame(() => resolve()));
    frame.push(performance.now() - t0);
    sync.push(t1 - t0);
  }
  return {sync, frame};
}"""


def widget_state_sizes(html: str) -> dict[str, int]:
    """Bytes of each figure's embedded widget state, by figure name."""
    match = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', html, re.S)
    sizes = {}
    if match:
        for model in json.loads(match.group(1))["state"].values():
            anywidget_id = model["state"].get("_anywidget_id", "")
            if anywidget_id:
                sizes[anywidget_id.rsplit(".", 1)[-1]] = len(json.dumps(model["state"]))
    return sizes


def report_weights(browser, base: str) -> None:
    kinds = ("html", "script", "style", "font", "image")
    print(f"{'page':46s} {'total':>8s} " + " ".join(f"{k:>7s}" for k in kinds) + "   (kB; * a page with a figure)")
    weights = [reader.measure(browser, base, path, SITE) for path in reader.html_pages(SITE)]
    for w in weights:
        print(f"{w.page + (' *' if w.widgets else ''):46s} {w.total / 1e3:8.0f} "
              + " ".join(f"{w.by_kind.get(k, 0) / 1e3:7.0f}" for k in kinds))
    print()
    for kind, numbers in reader.summary(weights).items():
        budget = reader.WIDGET_PAGE_BUDGET if kind == "widget pages" else reader.OTHER_PAGE_BUDGET
        print(f"{kind:14s} {numbers['pages']:3d} pages: median {numbers['median'] / 1e6:.2f} MB, "
              f"largest {numbers['max'] / 1e6:.2f} MB (budget {budget / 1e6:.0f} MB)")
    print()


def main() -> int:
    if not (SITE / PAGES[0]).exists():
        print("Build the book first: make book", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    base, stop = serve(SITE)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
            report_weights(browser, base)
            page = browser.new_page()
            page.goto(base + PAGES[0], wait_until="networkidle")
            states = widget_state_sizes((SITE / PAGES[0]).read_text())
            print(f"{'figure':22s} {'state':>9s} {'sync median':>12s} {'sync max':>9s} {'to frame':>9s}  "
                  f"(ms, {N} interactions)")
            for name, action in INTERACTIONS.items():
                page.locator(f"[data-figure='{name}']").wait_for(state="attached")
                timings = page.evaluate(MEASURE, [name, action, N])
                class_name = {"permutation_explorer": "PermutationExplorer", "position_term": "PositionTerm",
                              "rope_rotation": "RopeRotation", "alibi_heatmap": "AlibiHeatmap",
                              "context_extension": "ContextExtension"}[name]
                print(f"{name:22s} {states.get(class_name, 0) / 1e3:7.1f}kB "
                      f"{statistics.median(timings['sync']):12.2f} {max(timings['sync']):9.2f} "
                      f"{statistics.median(timings['frame']):9.2f}")
            browser.close()
    finally:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
