"""Fonts cut to the characters the site draws, with fontTools (installed with matplotlib).

Two fonts are served cut down: the math font, STIX Two Math (npm
``@fontsource/stix-two-math``, SIL Open Font License), to the characters of the site's
MathML and those the browser draws without text (about 35 kB; :func:`subset_math_font`),
and Font Awesome's web fonts to the icons the site shows
(:mod:`bookwork.sphinx.offline.icons`). Both keep every OpenType layout feature, the
math font its MATH table with it (the stretchy and large variants of the characters kept).
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path

#: Characters the browser may draw for a letter in ``<mi>`` although the MathML has the
#: plain letter: a one-letter identifier is set in mathematical italic (MathML Core's
#: ``math-auto`` text transform), so the font keeps the italic Latin and Greek alphabets.
MATH_ITALIC = {0x210E, *range(0x1D434, 0x1D468), *range(0x1D6E2, 0x1D71C)}
#: Characters the browser draws that are in no element's text:
#: - U+221A, the radical sign of ``<msqrt>`` and ``<mroot>`` (MathML Core draws it from the
#:   font's MATH table: the sign itself, its larger sizes and the parts of its stretched
#:   form, which fontTools keeps with the character);
#: - the digits and parentheses of the equation numbers, which Temml's stylesheet writes
#:   with a CSS counter, ``"(" counter(tmlEqnNo) ")"``;
#: - the upright Latin and Greek alphabets: when some of their letters are missing,
#:   Chromium places accents, radicals and fractions up to a twelfth of an em away from
#:   where the whole font puts them (found by rendering each construct in both fonts, as
#:   ``tests/test_site.py`` does); about a hundred small glyphs.
#: A fence, an accent or an arrow is the text of an ``<mo>``, so it is kept with the text,
#: and with it its sizes and stretched forms.
DRAWN_WITHOUT_TEXT = {0x221A, *map(ord, "()0123456789"), *range(0x41, 0x5B), *range(0x61, 0x7B),
                      *range(0x391, 0x3A2), *range(0x3A3, 0x3AA), *range(0x3B1, 0x3CA)}
MATHML = re.compile(r"<math\b.*?</math>", re.S)


def subset_font(source: Path, dest: Path, characters: Iterable[int]) -> None:
    """Write to ``dest`` (WOFF) the font ``source`` cut to the code points ``characters``."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff"  # woff2 would need the brotli package
    options.layout_features = ["*"]
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(set(characters)))
    subsetter.subset(font)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(dest), options)


def subset_math_font(source: Path, pages: Iterable[str], dest: Path) -> None:
    """Write to ``dest`` the math font cut to the characters of every page's MathML and those
    the browser draws without text (:data:`DRAWN_WITHOUT_TEXT`, :data:`MATH_ITALIC`)."""
    characters = set()
    for text in pages:
        for formula in MATHML.findall(text):
            characters |= set(html.unescape(re.sub(r"<[^>]+>", "", formula)))
    subset_font(source, dest, {ord(c) for c in characters if not c.isspace()} | MATH_ITALIC | DRAWN_WITHOUT_TEXT)
