"""One reference page per module of ``companion``, found in the package itself.

Every public module (``companion.rope``, ``companion.figures.rope``, a new
``companion.lab.*``...) gets a page ``book/api/<module>.md`` holding its
``automodule``, written when the build starts; a module added to the package gets
its page with no edit anywhere, and the page of a module that is gone is removed.
The pages are generated, not committed (``book/api/`` is ignored by git).

``book/api.md`` shows the overview with the directive ``companion-modules``: a table
of every module, linked to its page, with the first paragraph of its docstring. The pages
are listed under the API page in the book's table of contents (added to what
``_toc.yml`` says), so they sit below it in the site's navigation.

Order: the modules in ``companion.__all__`` as the package lists them (the order the
book meets them), then every other module alphabetically, each package before the
modules inside it.

Why not ``sphinx.ext.autosummary`` with ``:recursive:``: built beside this extension
(the same API page, the modules listed in book order in the directive, a module
template holding the same ``automodule``), it gives the same module pages (39 of 41
with the same text; the two package pages gain a table of their modules), but only
with ``autosummary_generate``, a template folder, a glob in ``_toc.yml`` and
sphinx-external-toc's check of toctree directives in pages switched off for the whole
book (``suppress_warnings: etoc.toctree``: autosummary's ``:toctree:`` is one), and
then the site's navigation lists each module of ``figures`` and ``lab`` twice, once
from ``_toc.yml`` and once from autosummary's own toctree (99 links in the sidebar
instead of 41), and the recursion imports every submodule, ``companion.lab.__main__``
among them, which ran the lab's command line inside the build (it stopped on the
build's own arguments; arguments it accepted would have started a lab run). Here the
pages are written and listed in the book's table of contents in one place, and only
modules are imported.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

PACKAGE = "companion"
FOLDER = "book/api"
API_PAGE = "book/api"

PAGE = """\
# `{module}`

```{{eval-rst}}
.. automodule:: {module}
   :members:
```
"""


def public_modules(package: str = PACKAGE) -> list[str]:
    """Every public module of ``package`` (no part of the name starts with ``_``), in book order."""
    root = importlib.import_module(package)
    found = {package}
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.add(info.name)
    listed = [f"{package}.{name}" for name in getattr(root, "__all__", []) if f"{package}.{name}" in found]

    def rank(name: str):
        top = ".".join(name.split(".")[:2])
        return (listed.index(top) if top in listed else len(listed), top, name)

    return sorted(found - {package}, key=rank)


def re_exports(module: str) -> bool:
    """Whether ``module`` is a package whose public names are its modules' (``companion.configs``
    gathers ``read_config`` and the rest from ``companion.configs.reading`` and three more):
    its page then shows its docstring only, and each object is documented once, on the
    page of the module that defines it."""
    imported = importlib.import_module(module)
    names = [n for n in getattr(imported, "__all__", []) if not inspect.ismodule(getattr(imported, n, None))]
    # data (a table, a set of keys) has no module of its own: only classes and functions say where they live
    defined = [getattr(imported, n) for n in names]
    return hasattr(imported, "__path__") and bool(names) and all(
        obj.__module__.startswith(module + ".") for obj in defined if inspect.isclass(obj) or inspect.isroutine(obj))


def page(module: str) -> str:
    """The page of ``module``: its docstring and its members (its docstring only where :func:`re_exports`)."""
    text = PAGE.format(module=module)
    return text.replace("   :members:\n", "") if re_exports(module) else text


def write_pages(srcdir: Path, modules: list[str]) -> None:
    """``book/api/<module>.md`` for each module, touching only pages whose text changes."""
    folder = srcdir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f"{module}.md": page(module) for module in modules}
    for stale in folder.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def _generate(app: Sphinx, config) -> None:
    """Write the pages and list them under the API page in the table of contents."""
    from sphinx_external_toc.api import Document, FileItem, TocTree

    site_map = getattr(config, "external_site_map", None)
    api = site_map.get(API_PAGE) if site_map is not None else None
    if api is None:  # a book without the API page (a test book): no pages either
        app.companion_modules = []
        return
    modules = public_modules()
    write_pages(Path(app.srcdir), modules)
    app.companion_modules = modules
    pages = [FileItem(f"{FOLDER}/{module}") for module in modules]
    api.subtrees = [tree for tree in api.subtrees if not set(tree.files()) & set(pages)]
    api.subtrees.append(TocTree(items=pages))
    for page in pages:
        site_map[str(page)] = Document(docname=str(page))
    # sphinx-external-toc excluded the pages (not in _toc.yml) before they were listed.
    config.exclude_patterns = [p for p in config.exclude_patterns if not p.startswith(f"{FOLDER}/")]


def summary(module: str) -> str:
    """The first paragraph of a module's docstring, on one line."""
    text = (importlib.import_module(module).__doc__ or "").strip()
    return " ".join(text.split("\n\n", 1)[0].split())


class CompanionModules(SphinxDirective):
    """The overview table: every module, linked to its page, and the first line of its docstring.

    The table is built here as document nodes, so that it is the same table in every
    builder; the docstring's line is parsed as the page's own markup (Markdown), which
    reads its ````code```` as code."""

    def run(self) -> list[nodes.Node]:
        table = nodes.table(classes=["companion-modules"])
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=35)
        group += nodes.colspec(colwidth=65)
        head, body = nodes.thead(), nodes.tbody()
        head += self._row([nodes.paragraph("", "Module")], [nodes.paragraph("", "What it holds")])
        group += head
        group += body
        for module in self.env.app.companion_modules:
            link = addnodes.pending_xref("", nodes.literal(module, module), refdomain="py", reftype="mod",
                                         reftarget=module, refexplicit=True, refwarn=True)
            described = nodes.container()
            self.state.nested_parse(StringList([summary(module)], source=f"docstring of {module}"),
                                    self.content_offset, described)
            body += self._row([nodes.paragraph("", "", link)], described.children)
        # in print the summaries wrap in a column of their own (LaTeX would set a table
        # this long in columns as wide as their longest line, past the margin)
        widths = addnodes.tabular_col_spec(spec=r"\Y{0.36}\Y{0.64}")
        return [widths, table]

    @staticmethod
    def _row(*cells) -> nodes.row:
        row = nodes.row()
        for content in cells:
            entry = nodes.entry()
            entry.extend(content)
            row += entry
        return row


def one_document(app: Sphinx, doctree: nodes.document) -> None:
    """Point every node of a page at the page itself.

    Signatures that autodoc writes into a MyST page keep, in their text nodes, the
    document of the nested parse that made them, and that document still holds the
    whole build environment (every notebook's widget state among it): pickled with the
    page, it made each API page's doctree 5.5 MB and every build read 140 MB."""
    for node in doctree.findall(include_self=False):
        if getattr(node, "_document", None) is not None and node._document is not doctree:
            node.document = doctree


def setup(app: Sphinx) -> dict:
    # After sphinx-external-toc has added its exclusions (priority 900).
    app.connect("config-inited", _generate, priority=950)
    app.connect("doctree-read", one_document)
    app.add_directive("companion-modules", CompanionModules)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
