"""The PDF as a printed textbook (the LaTeX build, ``make pdf``).

What a page of the site does is not what a printed page should do. For the LaTeX
build this extension

- sets a title page and its reverse (title, subtitle, authors; version, licence and
  repository on the back) instead of Sphinx's page with "Release 0.2.0", and running
  heads without a release;
- prints a proof as textbooks do: "*Proof.*" and the argument, no box (sphinx-proof
  draws every proof as a box whose title bar is empty);
- keeps a box's header with its first lines at a page break, lets a figure float only
  where it fills most of a page, sets tables a size below the text with no column too
  narrow for its header, long code names in a table's cells breakable after an
  underscore or a dot, and code in the size that fits a line of 88 characters;
- moves every solution to the end of its chapter, under "Solutions", and puts a line
  under each exercise saying on which page its solution is, so that a reader can try
  first; the solution's title links back to the exercise, and a reference to an
  exercise from another chapter finds it;
- lists the definitions, theorems and other results by number and title with their
  pages ("Corollary 1.1 (The dot product cannot tell before from after) ... 43"), in
  place of sphinx-proof's index of internal labels;
- leaves out the pages that only make sense on screen: the collection of interactive
  figures (each is printed in its chapter) and the references page, whose list LaTeX
  prints at the end of the book anyway ("References");
- prefers SVG plots (converted to PDF by ``sphinxcontrib.rsvgconverter``) and drops the
  live view of each interactive figure, whose printed form is its static fallback: the
  PNG that every figure embeds in an HTML block (``companion.figures._base``), which is
  turned into an image here;
- defines the math macros of ``mathjax3_config`` for LaTeX too, so that the site and
  the PDF typeset the same formulas;
- numbers the chapters as the book does (chapter 0 to 9, the front matter unnumbered,
  the reference pages as appendices);
- supplies a stand-in for the ``bbm`` package that Jupyter Book's LaTeX class loads
  (``latex/bbm.sty``), so that Debian's large ``texlive-fonts-extra`` is not needed.

The site is not changed; it links the PDF once built (:mod:`bookwork.sphinx.editions`).
"""
from __future__ import annotations

import base64
import datetime
import hashlib
import html
import os
import re
from pathlib import Path
from string import Template

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
LATEX_FILES = Path(__file__).resolve().parent / "latex"

#: Pages left out of the PDF (see the module docstring).
SCREEN_ONLY_PAGES = ("book/figures", "book/references")
#: Lines a box needs on the page it starts on; otherwise it starts on the next one.
BOX_NEEDS = 6

#: myst-nb picks one output per mime bundle by these priorities (lower wins). For the
#: LaTeX build, an SVG plot becomes a PDF image, and a widget's view (which only a
#: browser can draw) wins over its text form, so that neither is printed.
LATEX_MIME_PRIORITIES = [
    ("latex", "application/vnd.jupyter.widget-view+json", 5),
    ("latex", "image/svg+xml", 15),
]

FALLBACK_IMAGE = re.compile(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"[^>]*>')
ALT = re.compile(r'alt="([^"]*)"')


#: A lesson's own numbering in a title, "3. " or "3.1 ", which LaTeX prints itself.
NUMBERED_TITLE = re.compile(r"^\d+\.(\d+)?\s+")

PREAMBLE = r"""
% --- bookwork/sphinx/print_book.py ------------------------------------------------
\usepackage{needspace}
\usepackage{etoolbox}
% links to a file at a commit are long and have no spaces: they break after any character
\usepackage{xurl}
% a box (definition, theorem, exercise, solution) starts where its header and first
% lines fit, never with its header alone at the foot of a page
\BeforeBeginEnvironment{sphinxadmonition}{\needspace{${box}\baselineskip}}
% floats: a figure goes to a page of its own only when it fills most of one
\renewcommand{\topfraction}{0.9}
\renewcommand{\bottomfraction}{0.8}
\renewcommand{\textfraction}{0.07}
\renewcommand{\floatpagefraction}{0.75}
\setcounter{topnumber}{3}
\setcounter{totalnumber}{4}
% tables: a size below the text, and no column narrower than a short word (a header
% such as "Method" or `rope_type` would run into the next column)
\setlength{\tymin}{48pt}
\let\bookattablestart\sphinxattablestart
\renewcommand{\sphinxattablestart}{\bookattablestart\small}
% figures, tables and equations numbered within the chapter, chapter 0 included (Sphinx
% leaves out a chapter number of 0: "Figure 2" for the second figure of chapter 0)
\AtBeginDocument{%
  \renewcommand{\thefigure}{\thechapter.\arabic{figure}}%
  \renewcommand{\thetable}{\thechapter.\arabic{table}}%
  \renewcommand{\theliteralblock}{\thechapter.\arabic{literalblock}}%
  \renewcommand{\theequation}{\thechapter.\arabic{equation}}}
% the list of references at the end is "References", and a link to the references
% page of the site (left out here) leads to it
\addto\captionsenglish{\renewcommand{\bibname}{References}}
\apptocmd{\thebibliography}{\phantomsection\label{\detokenize{book/references::doc}}}{}{}
% running heads: the book's title, no release
\makeatletter
\AtBeginDocument{\renewcommand{\py@release}{}\let\sphinxheadercomma\empty}
\makeatother
"""

TITLE_PAGE = r"""
\begin{titlepage}
  \centering
  \vspace*{0.22\textheight}
  {\sffamily\bfseries\fontsize{30}{36}\selectfont ${title}\par}
  \vspace{1.2\baselineskip}
  {\sffamily\Large ${subtitle}\par}
  \vfill
  {\sffamily\large ${author}\par}
  \vspace{0.08\textheight}
\end{titlepage}
\thispagestyle{empty}
\null\vfill
\begin{flushleft}\small
\textit{${title}}, version ${version}, typeset on ${date} from the book's sources.\par\medskip
The book is an executable textbook: every chapter is a notebook whose code ran to produce
the numbers, tables and figures printed here. The chapters, the interactive figures and
the code are at \url{${url}}.\par\medskip
Text \copyright{} ${year} ${author}, licensed under CC BY 4.0. Code under the MIT licence.
\end{flushleft}
\clearpage
"""


def _latex_escape(text: str) -> str:
    return re.sub(r"([&%$#_{}])", r"\\\1", text)


def _macros(config) -> str:
    """The math macros of ``mathjax3_config`` as LaTeX definitions, so that the site and
    the PDF typeset the same formulas."""
    macros = (config.mathjax3_config or {}).get("tex", {}).get("macros", {})
    definitions = ""
    for name, body in macros.items():  # "body", or [body, number of arguments]
        body, arguments = (body[0], f"[{body[1]}]") if isinstance(body, list) else (body, "")
        definitions += rf"\providecommand{{\{name}}}{arguments}{{{body}}}" + "\n"
    return definitions


def _settings(app: Sphinx, config) -> None:
    """The LaTeX builder's settings (the other builders do not read them)."""
    config.nb_mime_priority_overrides = list(config.nb_mime_priority_overrides) + LATEX_MIME_PRIORITIES
    config.latex_use_xindy = False  # makeindex: a book without an index of terms needs no xindy
    config.latex_domain_indices = False  # sphinx-proof's index of labels; see _results_list
    config.latex_additional_files = list(config.latex_additional_files) + [str(LATEX_FILES / "bbm.sty")]
    version = config.release or config.version
    elements = dict(config.latex_elements or {})
    elements["preamble"] = (elements.get("preamble", "") + "\n" + _macros(config)
                            + Template(PREAMBLE).substitute(box=BOX_NEEDS))
    # code and output in the size that holds a line of 88 characters in the text width
    elements["fvset"] = r"\fvset{fontsize=\footnotesize}"
    overrides = getattr(config, "latex_doc_overrides", None) or {}
    title = overrides.get("title") or config.html_title or config.project
    today = datetime.date.today()
    elements["maketitle"] = Template(TITLE_PAGE).substitute({
        "title": _latex_escape(title),
        "subtitle": "Positional encoding, from attention's blind spot to context extension",
        "author": _latex_escape(config.author),
        "version": _latex_escape(version or "unreleased"),
        "date": today.strftime("%-d %B %Y"),
        "year": today.year,
        "url": (config.html_theme_options or {}).get("repository_url", ""),
    })
    config.latex_elements = elements


def _repair_parents(doctree: nodes.document) -> None:
    """Point every node at the parent it has in this tree.

    The LaTeX builder assembles the book from the pages' trees, and some nodes (the
    exercises' and solutions', after sphinx-exercise's transforms) still name as their
    parent a node of the page's own tree; moving them needs the parent they have here."""
    stack = [doctree]
    while stack:
        node = stack.pop()
        for child in node.children:
            child.parent = node
            if isinstance(child, nodes.Element):
                stack.append(child)


def _page(node) -> str | None:
    while node is not None and not isinstance(node, addnodes.start_of_file):
        node = node.parent
    return node["docname"] if node is not None else None


def _leave_out_screen_pages(doctree: nodes.document) -> None:
    for page in list(doctree.findall(addnodes.start_of_file)):
        if page["docname"] in SCREEN_ONLY_PAGES:
            page.parent.remove(page)


def _plain_proofs(doctree: nodes.document) -> None:
    """A proof as text: "*Proof.*" and the argument, without sphinx-proof's box."""
    from sphinx_proof.nodes import proof_node

    for proof in list(doctree.findall(proof_node)):
        content = []
        for box in proof.children:
            content.extend(box.children if isinstance(box, nodes.admonition) else [box])
        first = next((p for p in content if isinstance(p, nodes.paragraph)), None)
        if first is not None and first.children and isinstance(first[0], nodes.Text) \
                and str(first[0]).startswith("Proof. "):
            rest = str(first[0])[len("Proof. "):]
            first.children[0:1] = [nodes.emphasis("", "Proof."), nodes.Text(" " + rest)]
        container = nodes.container(classes=["printed-proof"])
        container.extend(content)
        proof.replace_self(container)


def _solutions_at_chapter_ends(app: Sphinx, doctree: nodes.document) -> None:
    """Each chapter's solutions after its last section, each exercise pointing to its own."""
    from sphinx_exercise.nodes import solution_node

    registry = getattr(app.env, "sphinx_exercise_registry", {})
    exercises = {}
    for node in list(doctree.findall(lambda n: n.__class__.__name__ in ("exercise_node",
                                                                         "exercise_enumerable_node"))):
        exercises[node.get("label")] = node
        # sphinx-exercise labels an exercise "exercise:<label>" in LaTeX; a {ref} to it
        # asks for "<page>:<label>", as for any other target: give it that label too
        page = _page(node)
        if page is not None and node.get("label"):
            node.parent.insert(node.parent.index(node), nodes.raw(
                "", f"\\phantomsection\\label{{\\detokenize{{{page}:{node['label']}}}}}\n", format="latex"))
    by_chapter: dict[str, list] = {}
    for solution in list(doctree.findall(solution_node)):
        docname = _page(solution)
        if docname is None or not docname.startswith("lessons/"):
            continue
        solution.parent.remove(solution)
        by_chapter.setdefault(docname, []).append(solution)
        target = solution.get("target_label")
        exercise = exercises.get(target)
        owner = registry.get(target, {}).get("docname", docname)
        label = f"{owner}:{solution['label']}"
        if exercise is not None:
            exercise.parent.insert(exercise.parent.index(exercise) + 1, nodes.raw(
                "", "\\par\\nopagebreak\\noindent\\hfill{\\small\\itshape Solution on "
                f"\\hyperref[{label}]{{page~\\pageref*{{{label}}}}}}}\\par\\medskip\n", format="latex"))
    for page in doctree.findall(addnodes.start_of_file):
        solutions = by_chapter.get(page["docname"])
        if not solutions:
            continue
        chapter = next(iter(page.findall(nodes.section)), None)
        if chapter is None:
            continue
        chapter += nodes.raw("", "\n\\section*{Solutions}\n\\addcontentsline{toc}{section}{Solutions}\n"
                                 "\\markright{Solutions}\n", format="latex")
        chapter.extend(solutions)


def _results_list(app: Sphinx, doctree: nodes.document) -> None:
    """An appendix listing every numbered definition and result by number, title and page."""
    from sphinx_proof.nodes import NODE_TYPES

    kinds = tuple(NODE_TYPES.values())
    lines = []
    for node in doctree.findall(lambda n: isinstance(n, kinds)):
        docname = _page(node)
        label = node.get("label", "")
        number = app.env.toc_fignumbers.get(docname, {}).get(node.get("countertype", ""), {}).get(label)
        if not number or docname is None:
            continue
        kind = node.get("realtype", "").title()
        title = node.get("title", "").strip()
        text = _latex_escape(f"{kind} {'.'.join(map(str, number))} {title}".strip())
        text = re.sub(r"\\\$(.*?)\\\$", lambda m: "$" + m.group(1).replace("\\_", "_") + "$", text)
        lines.append(f"\\item[] \\hyperref[{docname}:{label}]{{{text}}}\\dotfill\\pageref*{{{docname}:{label}}}")
    if not lines:
        return
    body = ("\n\\chapter{Definitions and results}\n"
            "\\begin{description}\\setlength{\\itemsep}{0pt}\\setlength{\\parskip}{0pt}\n"
            + "\n".join(lines) + "\n\\end{description}\n")
    doctree += nodes.raw("", body, format="latex")


#: A name in a table cell longer than this may break after an underscore or a dot.
BREAKABLE_NAME = 16


def _breakable_names_in_tables(doctree: nodes.document) -> None:
    """A long code name in a table cell (``original_max_position_embeddings``) breaks after
    an underscore or a dot where the column is too narrow for it, as LaTeX does not
    break inside a name (the site's tables scroll instead)."""
    for cell in list(doctree.findall(nodes.entry)):
        for literal in list(cell.findall(nodes.literal)):
            text = literal.astext()
            if len(text) <= BREAKABLE_NAME or not re.search(r"[_.]", text) or len(literal.children) != 1:
                continue
            pieces = []
            for part in re.split(r"(?<=[_.])", text):
                if pieces:
                    pieces.append(nodes.raw("", r"\allowbreak{}", format="latex"))
                pieces.append(nodes.Text(part))
            literal.children = []
            literal.extend(pieces)


def _print_fallbacks(app: Sphinx, doctree: nodes.document) -> None:
    """Give each interactive figure's fallback block an image the LaTeX builder can use.

    The fallback is an HTML output (the site shows it in print); next to it in the same
    mime bundle goes an ``image/png`` alternative holding the same picture (the figure's
    Markdown caption follows it). The HTML builder still picks the HTML (it ranks first
    there).
    """
    folder = Path(app.outdir).parent / "jupyter_execute" / "print_fallbacks"
    for raw in list(doctree.findall(nodes.raw)):
        if "companion-fallback" not in raw.astext():
            continue
        container = raw.parent
        bundle = container.parent if container is not None else None
        if bundle is None or bundle.get("nb_element") != "mime_bundle":
            continue
        match = FALLBACK_IMAGE.search(raw.astext())
        if not match:
            LOGGER.warning("an interactive figure's fallback has no PNG image", location=raw)
            continue
        alt = ALT.search(match.group(0))
        png = base64.b64decode(match.group(1))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{hashlib.sha256(png).hexdigest()[:16]}.png"
        if not path.exists():
            path.write_bytes(png)
        uri = "/" + Path(os.path.relpath(path, app.srcdir)).as_posix()  # as myst-nb writes them
        image = nodes.image(uri=uri, alt=html.unescape(alt.group(1)) if alt else "")
        alternative = nodes.container(nb_element="mime_type", mime_type="image/png")
        alternative += image  # the Markdown caption under the figure says what it shows
        bundle += alternative


def _chapter_numbers(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Number the PDF's chapters as the book does: front matter unnumbered, the lessons
    from chapter 0 (their titles carry the number, which LaTeX then prints), the
    reference pages as appendices."""
    if app.builder.name != "latex":
        return
    files = list(doctree.findall(addnodes.start_of_file))
    lessons = [node for node in files if node["docname"].startswith("lessons/")]
    if not lessons:
        return
    first, last = lessons[0], lessons[-1]
    doctree.insert(0, nodes.raw("", "\\edef\\booksecnumdepth{\\arabic{secnumdepth}}"
                                    "\\setcounter{secnumdepth}{-1}\n", format="latex"))
    first.insert(0, nodes.raw("", "\\setcounter{secnumdepth}{\\booksecnumdepth}"
                                  "\\setcounter{chapter}{-1}\n", format="latex"))
    after = files.index(last) + 1
    if after < len(files):
        files[after].insert(0, nodes.raw("", "\\appendix\n", format="latex"))
    for lesson in lessons:
        for title in lesson.findall(nodes.title):
            text = title.children[0] if title.children else None
            if isinstance(text, nodes.Text) and NUMBERED_TITLE.match(text):
                title.replace(text, nodes.Text(NUMBERED_TITLE.sub("", text, count=1)))


def _print_book(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.name != "latex" or not any(True for _ in doctree.findall(addnodes.start_of_file)):
        return
    _repair_parents(doctree)
    _leave_out_screen_pages(doctree)
    _plain_proofs(doctree)
    _solutions_at_chapter_ends(app, doctree)
    _results_list(app, doctree)
    _breakable_names_in_tables(doctree)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinxcontrib.rsvgconverter")
    app.connect("config-inited", _settings, priority=950)
    app.connect("doctree-read", _print_fallbacks, priority=400)  # before the image collector
    # the book's pages first, then the chapters numbered and the appendices marked
    app.connect("doctree-resolved", _print_book, priority=400)
    app.connect("doctree-resolved", _chapter_numbers)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
