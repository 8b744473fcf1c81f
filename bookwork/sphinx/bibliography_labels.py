"""Author–year labels in the bibliography, to match the author–year citations in the text.

The chapters cite "(Chen et al., 2023)"; with pybtex's ``plain`` style the list of
references labels the same entry "[7]", and a reader cannot match the two by eye.
This extension registers the pybtex formatting style ``plain_author_year``: the
``plain`` style with labels such as "Su et al., 2024": the names as the citations
write them (one author: the surname; two: both surnames joined by "and"; more: the
first surname and "et al."), then the year; two entries
that would share a label get "a", "b" after the year. Select it with
``bibtex_default_style: plain_author_year``.

It also puts every installed pybtex plugin in pybtex's registry of plugins registered
at run time, once (:func:`register_installed_plugins`), which makes the build's
bibliography work about a hundred times cheaper.
"""
from __future__ import annotations

from collections import Counter
from importlib.metadata import entry_points
from string import ascii_lowercase

from pybtex.plugin import _DEFAULT_PLUGINS, register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx


def _surname(person) -> str:
    return " ".join(str(part.render_as("plaintext")) for part in person.rich_prelast_names + person.rich_last_names)


def author_year(entry) -> str:
    """The label of one entry, "Surname, 2021", "A and B, 2021" or "A et al., 2021"."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    surnames = [_surname(p) for p in persons]
    if not surnames:
        who = entry.fields.get("organization") or entry.fields.get("publisher") or entry.key
    elif len(surnames) == 1:
        who = surnames[0]
    elif len(surnames) == 2:
        who = f"{surnames[0]} and {surnames[1]}"
    else:
        who = f"{surnames[0]} et al."
    year = entry.fields.get("year", "n.d.")
    return f"{who}, {year}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        labels = [author_year(entry) for entry in entries]
        counts, seen = Counter(labels), Counter()
        for label in labels:
            if counts[label] > 1:
                suffix = ascii_lowercase[seen[label]]
                seen[label] += 1
                yield label + suffix
            else:
                yield label


class PlainAuthorYear(PlainStyle):
    default_label_style = "author_year_book"


def register_installed_plugins() -> None:
    """Register every installed pybtex plugin at run time, so that pybtex finds each in
    its own registry instead of reading the environment's entry points.

    ``pybtex.plugin.find_plugin`` looks a plugin up (a style, a backend such as the one
    behind ``render_as("text")``) by reading the entry points of every installed
    distribution, on every call; a build of this book makes about 1,100 such calls,
    each a scan of the whole environment, and they were a third of the build's time.
    It looks in its run-time registry first, so the same classes registered there once
    are found at once. Groups, names and classes are exactly the installed entry
    points'."""
    for group in _DEFAULT_PLUGINS:
        for kind in (group, f"{group}.aliases", f"{group}.suffixes"):
            for entry_point in entry_points(group=kind):
                register_plugin(kind, entry_point.name, entry_point.load(), force=True)


register_installed_plugins()
register_plugin("pybtex.style.labels", "author_year_book", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "plain_author_year", PlainAuthorYear)


def setup(app: Sphinx) -> dict:
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
