"""Only the Font Awesome icons the site shows: a small stylesheet and small fonts.

The theme links Font Awesome's whole CSS (100 kB, rules for some 2,000 icons) and
its web fonts (270 kB) on every page, to draw about fifteen icons. After the build,
this module finds the icons the site uses (the ``fa-*`` class names in its pages and
scripts, and the glyphs the theme's own stylesheets draw with ``content:"\\f…"``),
writes a stylesheet with Font Awesome's base rules and only those icons' rules, cuts
the fonts down to those glyphs (:func:`bookwork.sphinx.offline.font_subsets.subset_font`),
and points the pages at the result. An icon outside the set would show as an empty
box, so the set is taken from everything the site serves, not from a fixed list.
"""
from __future__ import annotations

import re
from pathlib import Path

from bookwork.sphinx.offline.font_subsets import subset_font

FA_CSS = re.compile(r'href="([^"]*?/vendor/fontawesome/[^/"]+/css/all\.min\.css)(\?[^"]*)?"')
ICON_NAME = re.compile(r"\bfa-[a-z0-9]+(?:-[a-z0-9]+)*")
GLYPH = re.compile(r'content:\s*"\\([0-9a-fA-F]{4,5})"')
FONT_URL = re.compile(r"url\(\.\./webfonts/([^)]+?)\.(woff2|ttf)\)\s*format\(\"(?:woff2|truetype)\"\)")
OUT = "vendor/icons"


def split_rules(css: str) -> list[str]:
    """The top-level rules of a stylesheet (``@keyframes`` and other nested blocks kept whole)."""
    rules, depth, start = [], 0, 0
    for i, char in enumerate(css):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                rules.append(css[start : i + 1].strip())
                start = i + 1
    return [rule for rule in rules if rule]


def icon_selectors(rule: str) -> list[str] | None:
    """The icon names a glyph rule (``.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}``) defines."""
    selectors, _, body = rule.partition("{")
    if not GLYPH.fullmatch(body.rstrip("}").strip().rstrip(";")):
        return None
    names = [re.fullmatch(r"\.(fa-[a-z0-9-]+):+before", s.strip()) for s in selectors.split(",")]
    return [n.group(1) for n in names] if all(names) else None


SCRIPT_SRC = re.compile(r'<script[^>]*\ssrc="([^"?#]+)')


def used_names(site: Path) -> set[str]:
    """The ``fa-*`` names in the site's pages and in the scripts those pages load."""
    names, scripts = set(), set()
    for page in site.rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8", errors="replace")
        names.update(ICON_NAME.findall(text))
        scripts.update((page.parent / src).resolve() for src in SCRIPT_SRC.findall(text) if "://" not in src)
    for script in scripts:
        if script.is_file():
            names.update(ICON_NAME.findall(script.read_text(encoding="utf-8", errors="replace")))
    return names


def theme_glyphs(site: Path) -> set[int]:
    """Glyphs the theme's stylesheets draw themselves (admonition and link icons)."""
    glyphs = set()
    for path in (site / "_static").rglob("*.css"):
        if "fontawesome" not in path.parts and "icons" not in path.parts:
            glyphs.update(int(code, 16) for code in GLYPH.findall(path.read_text(encoding="utf-8", errors="replace")))
    return glyphs


def subset_css(css: str, names: set[str]) -> tuple[str, set[int]]:
    """Font Awesome's stylesheet with only the glyph rules of ``names``, and their code points."""
    kept, glyphs = [], set()
    for rule in split_rules(css):
        icons = icon_selectors(rule)
        if icons is None:
            kept.append(rule)
            continue
        chosen = [name for name in icons if name in names]
        if chosen:
            code = GLYPH.search(rule).group(1)
            glyphs.add(int(code, 16))
            kept.append(",".join(f".{name}:before" for name in chosen) + '{content:"\\' + code + '"}')
    return "\n".join(kept), glyphs


def theme_fontawesome() -> Path:
    """The Font Awesome folder of the installed pydata-sphinx-theme (the one the pages link)."""
    import pydata_sphinx_theme

    static = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
    return max((static / "vendor" / "fontawesome").iterdir())


def slim_icons(site: Path, pages: dict[Path, str]) -> dict[Path, str]:
    """Write the small stylesheet and fonts under ``_static/vendor/icons``; returns the pages re-pointed."""
    fa_dir = theme_fontawesome()
    css, glyphs = subset_css((fa_dir / "css" / "all.min.css").read_text(encoding="utf-8"), used_names(site))
    glyphs |= theme_glyphs(site)
    out = site / "_static" / OUT
    for font in sorted((fa_dir / "webfonts").glob("*.ttf")):
        subset_font(font, out / "webfonts" / f"{font.stem}.woff", glyphs)
    css = FONT_URL.sub(lambda m: f'url(../webfonts/{m.group(1)}.woff) format("woff")', css)
    css = re.sub(r',\s*url\(\.\./webfonts/[^)]+\.woff\) format\("woff"\)', "", css)  # one source per face
    (out / "css").mkdir(parents=True, exist_ok=True)
    (out / "css" / "icons.css").write_text(css, encoding="utf-8")
    result = {}
    for page, text in pages.items():
        prefix = "../" * len(page.relative_to(site).parts[:-1])
        result[page] = FA_CSS.sub(f'href="{prefix}_static/{OUT}/css/icons.css"', text)
    return result
