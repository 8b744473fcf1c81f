"""The built site: it builds with warnings as errors, and works with no network.

Every page is opened in headless Chromium with every request to a host other than
the local server blocked and recorded. The test fails on any such request, any
console error, untypeset math, or a figure that does not render or respond.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, build_book, open_offline

pytestmark = pytest.mark.site


def html_pages(site: Path) -> list[str]:
    skip = {"genindex.html", "search.html", "index.html", "prf-prf.html"}
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if p.name not in skip and "_static" not in p.parts)


def test_every_page_works_offline(browser, site_server, built_site):
    pages = html_pages(built_site)
    assert "lessons/00_why_positions.html" in pages
    for page_path in pages:
        page, problems = open_offline(browser, site_server, page_path)
        try:
            page.wait_for_timeout(300)
            assert problems["outside"] == [], f"{page_path} asked other hosts: {problems['outside']}"
            assert problems["console"] == [], f"{page_path} console errors: {problems['console']}"
            assert problems["http"] == [], f"{page_path} failed requests: {problems['http']}"
            if page.locator(".math").count():
                page.wait_for_selector("mjx-container", state="attached", timeout=15000)
                text = page.inner_text("article")
                assert "\\[" not in text and "\\(" not in text and "$$" not in text, f"raw LaTeX left on {page_path}"
        finally:
            page.close()


def test_lesson_0_math_and_figure(browser, site_server):
    page, problems = open_offline(browser, site_server, "lessons/00_why_positions.html")
    try:
        page.wait_for_selector("mjx-container", state="attached", timeout=15000)
        assert page.locator("mjx-container").count() > 50
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
        page.close()


def test_site_serves_its_own_front_end_files(built_site):
    vendor = built_site / "_static" / "vendor"
    for name in ("require.js", "widgets-config.js", "html-manager/embed-amd.js", "anywidget/index.js", "mathjax/tex-mml-chtml.js"):
        assert (vendor / name).is_file(), name
    html = (built_site / "lessons" / "00_why_positions.html").read_text()
    assert "application/vnd.jupyter.widget-state+json" in html
    for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com/@jupyter-widgets"):
        assert f'src="https://{cdn}' not in html


def test_a_notebook_that_raises_fails_the_build(tmp_path):
    """The build must not publish a traceback: a raising notebook is a failed build."""
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext")
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    (tmp_path / "index.md").write_text("# Index\n")
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Broken"},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [], "source": "raise RuntimeError('boom')"},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "broken.ipynb").write_text(json.dumps(nb))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n  - file: broken\n")
    result = build_book(tmp_path)
    assert result.returncode != 0
    report = tmp_path / "_build" / "html" / "reports" / "broken.err.log"
    log = re.sub(r"\x1b\[[0-9;]*m", "", report.read_text())  # drop terminal colours
    assert "RuntimeError: boom" in log


def test_lesson_pages_keep_solutions_and_hide_assignment_markup(built_site):
    """Solutions stay in dropdowns; otter's markers, configs and checks never reach a page."""
    for page in sorted((built_site / "lessons").glob("[0-9][0-9]_*.html")):
        html = page.read_text()
        assert 'class="solution dropdown' in html or "solution dropdown" in html, page.name
        for markup in ("BEGIN SOLUTION", "END SOLUTION", "# SOLUTION", "BEGIN QUESTION",
                       "BEGIN TESTS", "# HIDDEN", "all_or_nothing", "def test_"):
            assert markup not in html, f"{page.name}: {markup}"
