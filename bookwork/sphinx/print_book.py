"""The PDF as a printed textbook (the LaTeX build, ``make pdf``).

What a page of the site does is not what a printed page should do. For the LaTeX
build this extension

- sets the page as a book's: 11-point text on a measure of about 80 characters
  (:data:`companion.plotting.PRINT_WIDTH`, the width the plots are drawn for), FreeSerif
  with a matching math font (STIX Two Math, the site's, converted from its web font when
  the PDF is built), code in DejaVu Sans Mono scaled to the text's x-height with
  high-contrast colours, each block of code in the largest size (at most 9 points)
  that holds its longest line in the text's width; running heads with the
  chapter and the section, the page number in the foot, and nothing on the empty
  left-hand page before a chapter;
- sets a title page and its reverse (title, subtitle, authors; version, licence and
  repository on the back) instead of Sphinx's page with "Release 0.2.0", the title and
  authors in the PDF's document information, and a titled preface;
- prints a proof as textbooks do: "*Proof.*" and the argument, no box (sphinx-proof
  draws every proof as a box whose title bar is empty);
- keeps a box's header with its first lines at a page break, lets a figure float only
  where it fills most of a page, sets tables a size below the text with no column too
  narrow for its header, long code names in a table's cells breakable after an
  underscore or a dot;
- moves every solution to the end of its chapter, under "Solutions", and puts a line
  under each exercise saying on which page its solution is, so that a reader can try
  first; the solution's title links back to the exercise, and a reference to an
  exercise from another chapter finds it;
- lists the definitions, theorems and other results by number and title with their
  pages ("Corollary 1.1 (The dot product cannot tell before from after) ... 43"), in
  place of sphinx-proof's index of internal labels;
- leaves out the pages that only make sense on screen: the collection of interactive
  figures (each is printed in its chapter), the references page, whose list LaTeX
  prints at the end of the book anyway ("References"), and the reference page of each
  module of ``companion``: the API appendix keeps the table of the modules and says
  where the reference is (the website, and ``help()``); a name in the text that links
  to such a page is printed as code;
- builds an index of the book's concepts: each term of the glossary, and each
  definition by its title, pointing to the page of each chapter that first uses it (and
  to the section named after it), in the text's type;
- prints the plots and the interactive figures in their print versions: every plot's
  output carries a vector PDF drawn for the printed measure (``companion.plotting``),
  and every interactive figure's fallback its drawing as a vector PDF
  (``companion.figures``), which myst-nb's LaTeX priorities pick; the live view of each
  interactive figure is dropped;
- defines the math macros of ``mathjax3_config`` for LaTeX too, so that the site and
  the PDF typeset the same formulas;
- numbers the chapters as the book does (chapter 0 to 9, the front matter unnumbered,
  the reference pages as appendices);
- supplies a stand-in for the ``bbm`` package that Jupyter Book's LaTeX class loads
  (``latex/bbm.sty``), so that Debian's large ``texlive-fonts-extra`` is not needed.

The site is not changed; it links the PDF once built (:mod:`bookwork.sphinx.editions`).
"""
from __future__ import annotations

import datetime
import re
from pathlib import Path
from string import Template

from docutils import nodes
from pygments.styles.vs import VisualStudioStyle
from pygments.token import Keyword, Name
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging

from bookwork.sphinx.offline.vendor_files import MATH_FONT_SOURCE
from companion.plotting import PRINT_WIDTH

LOGGER = logging.getLogger(__name__)
LATEX_FILES = Path(__file__).resolve().parent / "latex"

#: Pages left out of the PDF (see the module docstring).
SCREEN_ONLY_PAGES = ("book/figures", "book/references")
#: The reference pages of the modules, left to the website (the API overview stays).
API_PAGES = "book/api/"
#: Lines a box needs on the page it starts on; otherwise it starts on the next one.
BOX_NEEDS = 9

#: myst-nb picks one output per mime bundle by these priorities (lower wins). For the
#: LaTeX build a plot's or an interactive figure's print version (``application/pdf``,
#: priority 10 by default) wins; an SVG plot without one becomes a PDF image; a
#: widget's view (which only a browser can draw) wins over its text form, so that neither
#: is printed.
LATEX_MIME_PRIORITIES = [
    ("latex", "application/vnd.jupyter.widget-view+json", 5),
    ("latex", "image/svg+xml", 15),
]

#: A lesson's own numbering in a title, "3. " or "3.1 ", which LaTeX prints itself.
NUMBERED_TITLE = re.compile(r"^\d+\.(\d+)?\s+")

#: The page: letter paper, the text block PRINT_WIDTH wide in the middle (inches).
PAPER_WIDTH = 8.5
#: The body's size in points (the plots' print versions set their text a little below it).
BODY_SIZE = 11
#: A table in the text stands out this far past the text block on each side (inches), so
#: that a table of many columns keeps its numbers on one line.
CODE_OUTSET = 0.5
#: A table with more characters of text than this may be taller than a page: it is set as a
#: long table, which breaks across pages (the chapter map of the preface; see _wide_tables).
LONG_TABLE = 2000
#: A long table's cells: the width of a character of its text (points, FreeSerif at the
#: table's size, a little over the average so that a word fits), and the padding of a cell.
TABLE_CHARACTER = 5.0
TABLE_CELL_PADDING = 12.0
#: Code is DejaVu Sans Mono (a regular weight that prints dark, with every character the
#: chapters print), scaled to FreeSerif's x-height; its characters are 0.602 em wide.
CODE_SCALE = 0.85
CODE_ADVANCE = 0.602
#: The size of code (points, before CODE_SCALE), and the smallest a long line may ask for.
CODE_SIZE = 9.0
CODE_SMALLEST = 6.0
#: The frame of a code block and the padding of a box take this much of the width (pt).
CODE_FRAME = 14.0
BOX_PADDING = 30.0
#: A list indents its items this far (points): LaTeX's first-level indent, 2.5 em.
LIST_INDENT = 28.0
#: Syntax colours that read on paper: Pygments' "vs" (black text, keywords in blue,
#: strings in dark red, comments in green), each at 4.5:1 or more on the code's background
#: (:class:`PrintStyle`).
PRINT_PYGMENTS = "bookwork.sphinx.print_book.PrintStyle"
#: The math font: the site's STIX Two Math, an OpenType file for XeLaTeX.
MATH_FONT_FILE = "book-math.otf"

class PrintStyle(VisualStudioStyle):
    """Pygments' "vs" for paper: its teal for type and class names (#2b91af, 3.4:1 on the
    code's light grey) darkened to 5.6:1; the other colours already read."""

    styles = {**VisualStudioStyle.styles, Keyword.Type: "#1c6a86", Name.Class: "#1c6a86"}


FONTS = r"""
\setmainfont{FreeSerif}[Extension=.otf, UprightFont=*, ItalicFont=*Italic, BoldFont=*Bold,
  BoldItalicFont=*BoldItalic]
\setsansfont{FreeSans}[Extension=.otf, UprightFont=*, ItalicFont=*Oblique, BoldFont=*Bold,
  BoldItalicFont=*BoldOblique]
% code: a regular weight that prints dark; no hyphen is ever added to a name
\setmonofont{DejaVu Sans Mono}[Scale=${scale}, HyphenChar=None]
"""

PREAMBLE = r"""
% --- bookwork/sphinx/print_book.py ------------------------------------------------
\usepackage{needspace}
\usepackage{etoolbox}
% links to a file at a commit are long and have no spaces: they break after any character
\usepackage{xurl}
% math in the site's font, STIX Two Math, drawn to match the Times design of FreeSerif
\IfFileExists{${math_font}}{\setmathfont{${math_font}}}{}
\hypersetup{pdftitle={${title}}, pdfauthor={${author}}}
% a box (definition, theorem, exercise, solution) starts where its header and first
% lines fit, never with its header alone at the foot of a page
\BeforeBeginEnvironment{sphinxadmonition}{\needspace{${box}\baselineskip}}
% no paragraph leaves its last line alone at the top of a page ("and 2r."), or its first
% alone at the foot of one (the pages end a line short instead: the bottom is ragged)
\widowpenalty=10000
\clubpenalty=10000
\displaywidowpenalty=10000
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
% in a table a name such as no_consistent_u may break after an underscore (within the
% table's group only): its column need not be as wide as the whole name
\let\bookunderscore\_
\newcommand{\bookbreakingunderscore}{\bookunderscore\allowbreak}
\renewcommand{\sphinxattablestart}{\bookattablestart\small\let\_\bookbreakingunderscore}
\let\bookatlongtablestart\sphinxatlongtablestart
\renewcommand{\sphinxatlongtablestart}{\bookatlongtablestart\small\let\_\bookbreakingunderscore
  \global\booktablecaptionedfalse}
% a long table's head on the pages it continues on names it only when it has a name: a
% table without a caption (the preface's chapter map, the appendix's modules) says
% "continued from previous page", not "Table 1 - continued" for a table never called so
\newif\ifbooktablecaptioned
\let\bookthelongtablecaptionisattop\sphinxthelongtablecaptionisattop
\renewcommand{\sphinxthelongtablecaptionisattop}{\noalign{\global\booktablecaptionedtrue}%
  \bookthelongtablecaptionisattop}
\makeatletter
\protected\def\sphinxtablecontinued#1{{\small\itshape\in@{\tablename}{#1}%
  \ifin@\ifbooktablecaptioned#1\else continued from previous page\fi\else#1\fi}}
% a box's title wraps inside its title row: Sphinx sets it on one line, and a long one
% ("Solution to Exercise 2.4 (Coding: where does a T5 decoder look when content says
% nothing?)") ran past the box and into the margin
\renewcommand\sphinxdotitlerowwithicon[2]{%
  \begingroup
    \kern-\spx@boxes@padding@top
    \parskip\z@skip
    \noindent
    \kern-\spx@boxes@padding@left
    \spx@boxes@border@top=\z@ \spx@boxes@border@right=\z@
    \spx@boxes@border@bottom=\z@ \spx@boxes@border@left=\z@
    \spx@boxes@radius@bottomright@x=\z@ \spx@boxes@radius@bottomright@y=\z@
    \spx@boxes@radius@bottomleft@x=\z@ \spx@boxes@radius@bottomleft@y=\z@
    \spx@boxes@padding@top=\sphinxtitlerowtoppadding\relax
    \spx@boxes@padding@bottom=\sphinxtitlerowbottompadding\relax
    \spx@boxes@withshadowfalse
    \sphinxcolorlet{spx@boxes@backgroundcolor}{sphinx#1TtlBgColor}%
    \spx@boxes@fcolorbox{\parbox{\linewidth}{\raggedright\strut
      \textcolor{sphinx#1TtlFgColor}{\@nameuse{sphinx#1TtlIcon}\sphinxtitlerowaftericonspacecmd}%
      \sphinxstrong{#2}\strut}}%
    \kern-\spx@boxes@padding@right
    \par
  \endgroup
  \vskip-\parskip
  \kern\spx@boxes@padding@top}
\makeatother
% figures, tables and equations numbered within the chapter, chapter 0 included (Sphinx
% leaves out a chapter number of 0: "Figure 2" for the second figure of chapter 0); in
% the front matter, whose chapters are not numbered, by a number alone
\makeatletter
\newcommand{\bookinchapter}[1]{\ifnum\c@secnumdepth<\z@\arabic{#1}\else\thechapter.\arabic{#1}\fi}
\makeatother
\AtBeginDocument{%
  \renewcommand{\thefigure}{\bookinchapter{figure}}%
  \renewcommand{\thetable}{\bookinchapter{table}}%
  \renewcommand{\theliteralblock}{\thechapter.\arabic{literalblock}}%
  \renewcommand{\theequation}{\thechapter.\arabic{equation}}}
% the list of references at the end is "References", and a link to the references
% page of the site (left out here) leads to it
\addto\captionsenglish{\renewcommand{\bibname}{References}}
\apptocmd{\thebibliography}{\phantomsection\label{\detokenize{book/references::doc}}}{}{}
\makeatletter
% running heads: the chapter on a left-hand page, the section on a right-hand one; the
% page number in the foot; no release
\AtBeginDocument{\renewcommand{\py@release}{}\let\sphinxheadercomma\empty}
\fancypagestyle{normal}{%
  \fancyhf{}%
  \fancyhead[LE]{{\py@HeaderFamily\small\nouppercase{\leftmark}}}%
  \fancyhead[RO]{{\py@HeaderFamily\small\nouppercase{\rightmark}}}%
  \fancyfoot[LE,RO]{{\py@HeaderFamily\small\thepage}}%
  \renewcommand{\headrulewidth}{0pt}\renewcommand{\footrulewidth}{0pt}}
\fancypagestyle{plain}{%
  \fancyhf{}\fancyfoot[LE,RO]{{\py@HeaderFamily\small\thepage}}%
  \renewcommand{\headrulewidth}{0pt}\renewcommand{\footrulewidth}{0pt}}
% the left-hand page left empty before a chapter or a part carries nothing
\renewcommand{\cleardoublepage}{\clearpage\if@twoside\ifodd\c@page\else
  \hbox{}\thispagestyle{empty}\newpage\fi\fi}
% code cells as wide as the text, inputs and outputs aligned (the class indents them);
% the size of each block is set just before it (a verbatim block wraps its lines at the
% text's width even where adjustwidth widens its frame)
\renewenvironment{sphinxVerbatimInput}
  {\colorlet{VerbatimBorderColor}{CodeBlockInputBorderColor}%
   \colorlet{VerbatimColor}{CodeBlockInputColor}}
  {}
\renewenvironment{sphinxVerbatimOutput}
  {\colorlet{VerbatimBorderColor}{CodeBlockOutputBorderColor}%
   \colorlet{VerbatimColor}{CodeBlockOutputColor}}
  {}
% a code block split by a page break says nothing: its frame is open at the break (the
% style around the message too, which otherwise prints an empty "()" at the break)
\renewcommand{\literalblockcontinuedname}{}
\renewcommand{\literalblockcontinuesname}{}
\renewcommand*{\sphinxstylecodecontinued}[1]{}
\renewcommand*{\sphinxstylecodecontinues}[1]{}
% the index: entries in the text's type (Sphinx sets them in typewriter), ragged right
\def\sphinxstyleindexentry#1{#1}
\AtBeginEnvironment{sphinxtheindex}{\raggedright}
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

#: The preface: the book's opening page (its title is the book's, which the title page
#: already prints), titled and headed as a chapter of the front matter.
PREFACE = r"""
\sphinxtableofcontents
\chapter*{Preface}
\addcontentsline{toc}{chapter}{Preface}
\markboth{Preface}{Preface}
"""

#: The API appendix's pointer to the reference, which the PDF leaves to the website.
API_POINTER = (
    "The reference of each module, every function and class with its parameters, what "
    "each parameter accepts and what it returns, is generated from the docstrings and is "
    "not printed here: it is on the book's website, one page per module under "
    "\u201cThe companion package\u201d, and in Python, where help(companion.rope) shows "
    "the same text. The table lists every module with the first paragraph of its "
    "docstring."
)


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
    config.latex_use_xindy = False  # makeindex: the index of concepts needs no xindy
    config.latex_domain_indices = False  # sphinx-proof's index of labels; see _results_list
    config.latex_additional_files = list(config.latex_additional_files) + [str(LATEX_FILES / "bbm.sty")]
    version = config.release or config.version
    overrides = getattr(config, "latex_doc_overrides", None) or {}
    title = overrides.get("title") or config.html_title or config.project
    elements = dict(config.latex_elements or {})
    elements["pointsize"] = f"{BODY_SIZE}pt"
    margin = (PAPER_WIDTH - PRINT_WIDTH) / 2
    elements["sphinxsetup"] = ", ".join(filter(None, [elements.get("sphinxsetup", ""),
                                                      f"hmargin={{{margin:g}in,{margin:g}in}}",
                                                      "vmargin={1in,1.1in}"]))
    elements["fontpkg"] = Template(FONTS).substitute(scale=CODE_SCALE)
    # the chapter's number as a numeral, its title as written (Sphinx's default spells
    # the number out and sets the title in capitals)
    elements["fncychap"] = r"\usepackage[Sonny]{fncychap}"
    elements["preamble"] = (elements.get("preamble", "") + "\n" + _macros(config)
                            + Template(PREAMBLE).substitute(box=BOX_NEEDS,
                                                            math_font=MATH_FONT_FILE, title=_latex_escape(title),
                                                            author=_latex_escape(config.author)))
    elements["fvset"] = rf"\fvset{{fontsize={_code_size(CODE_SIZE)}}}"
    elements["tableofcontents"] = PREFACE
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


def _code_size(points: float) -> str:
    return rf"\fontsize{{{points:.1f}}}{{{1.2 * points:.1f}}}\selectfont"


def _print_settings(app: Sphinx) -> None:
    """For the LaTeX builder: syntax colours for paper, and the math font as OpenType."""
    if app.builder.name != "latex":
        return
    app.config.pygments_style = PRINT_PYGMENTS
    source = Path(app.confdir) / "node_modules" / MATH_FONT_SOURCE
    if not source.is_file():
        LOGGER.warning(f"{source} is missing (npm ci): the PDF's math is set in Latin Modern Math")
        return
    from fontTools.ttLib import TTFont

    font = TTFont(source)
    font.flavor = None  # WOFF to plain OpenType, which XeLaTeX reads
    Path(app.outdir).mkdir(parents=True, exist_ok=True)
    font.save(Path(app.outdir) / MATH_FONT_FILE)


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
    """Drop the pages that only make sense on screen and the modules' reference pages;
    a link into a module's page keeps its text (the name, as code) without the link."""
    api = set()
    for page in list(doctree.findall(addnodes.start_of_file)):
        if page["docname"] in SCREEN_ONLY_PAGES or page["docname"].startswith(API_PAGES):
            page.parent.remove(page)
            if page["docname"].startswith(API_PAGES):
                api.add(page["docname"])
    for reference in list(doctree.findall(nodes.reference)):
        uri = reference.get("refuri", "")
        if uri.startswith("%") and uri[1:].split("#", 1)[0] in api:
            reference.replace_self(reference.children)


def _api_pointer(doctree: nodes.document) -> None:
    """The API appendix says where the modules' reference is, in place of the sentence
    that sends the reader to each module's page."""
    page = next((p for p in doctree.findall(addnodes.start_of_file) if p["docname"] == API_PAGES.rstrip("/")), None)
    if page is None:
        return
    pointer = nodes.paragraph("", API_POINTER)
    sends = next((p for p in page.findall(nodes.paragraph) if p.astext().startswith("Each module has its own page")),
                 None)
    if sends is not None:
        sends.replace_self(pointer)
    else:
        table = next(iter(page.findall(nodes.table)), None)
        if table is not None:
            table.parent.insert(table.parent.index(table), pointer)


def _latex_text(node: nodes.Node) -> str:
    """A heading's text as LaTeX: words escaped, code in typewriter."""
    if isinstance(node, nodes.Text):
        return _latex_escape(str(node)).replace("~", r"\textasciitilde{}")
    inner = "".join(_latex_text(child) for child in node.children)
    return rf"\texttt{{{inner}}}" if isinstance(node, nodes.literal) else inner


def _preface_headings(doctree: nodes.document) -> None:
    """The preface's headings as headings (Jupyter Book's LaTeX sets the first page's
    sections as bold lines, which a page break can strand at the foot of a page)."""
    for header in list(doctree.findall(lambda n: n.__class__.__name__ == "RootHeader")):
        command = r"\section*" if header.get("level", 2) <= 2 else r"\subsection*"
        header.replace_self(nodes.raw("", f"\n\\needspace{{{BOX_NEEDS}\\baselineskip}}{command}"
                                          f"{{{_latex_text(header)}}}\n", format="latex"))


def _inside(node: nodes.Node, test) -> bool:
    node = node.parent
    while node is not None:
        if test(node):
            return True
        node = node.parent
    return False


def _count_inside(node: nodes.Node, test) -> int:
    """How many of the node's ancestors pass ``test``."""
    count, node = 0, node.parent
    while node is not None:
        count += bool(test(node))
        node = node.parent
    return count


def _is_box(node: nodes.Node) -> bool:
    """A box: an admonition, an exercise, a solution, a definition or result, a table."""
    kind = node.__class__
    return isinstance(node, (nodes.Admonition, nodes.table, nodes.sidebar, nodes.topic)) or (
        kind.__module__.startswith(("sphinx_exercise", "sphinx_proof")) and kind.__name__.endswith("node"))


def _wide_tables(doctree: nodes.document) -> None:
    """A table in the text (not in a box) is CODE_OUTSET wider than the text on each side,
    so that a table of many columns keeps its numbers on one line in the book's measure;
    a table of the front or back matter with more text than a page holds (LONG_TABLE
    characters: the chapter map) is set as a long table instead, at the text's width,
    which breaks across pages. (A chapter's tables of results stay tables that LaTeX
    sizes to their contents, but for one of more than 30 rows, which Sphinx sets as a long
    table: its columns are given widths so that they wrap, in the wider block too.)"""
    for table in list(doctree.findall(nodes.table)):
        if _inside(table, _is_box):
            continue
        rows = sum(1 for body in table.findall(nodes.tbody) for _ in body.findall(nodes.row))
        chapter = (_page(table) or "").startswith("lessons/")
        if rows > 30 or (len(table.astext()) > LONG_TABLE and not chapter):
            _long_table(table, PRINT_WIDTH + (2 * CODE_OUTSET if chapter else 0))
            if not chapter:
                continue
        table.parent.insert(table.parent.index(table), nodes.raw(
            "", f"\\begin{{adjustwidth}}{{-{CODE_OUTSET}in}}{{-{CODE_OUTSET}in}}\n", format="latex"))
        table.parent.insert(table.parent.index(table) + 1, nodes.raw("", "\\end{adjustwidth}\n", format="latex"))


def _is_raw(node: nodes.Node) -> bool:
    return isinstance(node, nodes.raw)


def _long_table(table: nodes.table, width: float = PRINT_WIDTH) -> None:
    """Set a table as a long table whose columns wrap, with widths in proportion to what
    its cells hold. Each column first gets its longest word (a name's pieces between
    underscores, where it may break), so that no header or word is hyphenated ("Chap-ter",
    "sec-ond"); what the line has left is shared in proportion to how much more each column
    would take to hold its longest cell, counted up to 40 characters, on one line (a long
    table's default columns do not wrap), ``width`` inches. A width the text gives
    (``tabularcolumns``) is kept."""
    table["classes"].append("longtable")
    tgroup = next(iter(table.findall(nodes.tgroup)), None)
    given = isinstance(table.previous_sibling(), addnodes.tabular_col_spec)
    if tgroup is None or given:
        return
    specs = [child for child in tgroup.children if isinstance(child, nodes.colspec)]
    need = [1] * len(specs)  # characters: the longest word
    want = [1] * len(specs)  # characters: the longest cell, up to 40
    for row in tgroup.findall(nodes.row):
        for i, entry in enumerate(child for child in row.children if isinstance(child, nodes.entry)):
            if i < len(specs):
                # the cell's text as printed: without the break points of its names (raw LaTeX)
                text = "".join(node.astext() for node in entry.findall(nodes.Text) if not _inside(node, _is_raw))
                # a name breaks after its underscores in a table (the preamble's \_)
                need[i] = max(need[i], max((len(word) for word in re.split(r"[\s_]+", text)), default=0))
                want[i] = max(want[i], min(len(text), 40))
    pad = TABLE_CELL_PADDING / TABLE_CHARACTER
    need = [n + pad for n in need]
    want = [max(w + pad, n) for w, n in zip(want, need)]
    line = width * 72 / TABLE_CHARACTER  # characters
    if sum(want) <= line:
        widths = want
    elif sum(need) >= line:
        widths = need
    else:
        spare = (line - sum(need)) / sum(w - n for w, n in zip(want, need))
        widths = [n + (w - n) * spare for w, n in zip(want, need)]
    for spec, width in zip(specs, widths):
        spec["colwidth"] = max(1, round(10 * width))
    table["classes"].append("colwidths-given")


def _code_blocks(doctree: nodes.document) -> None:
    """Each block of code in the largest size, at most CODE_SIZE points, that holds its
    longest line in the width it has: the text's, less the padding of each box and the
    indent of each list it is in."""
    inch = 72.27
    for block in list(doctree.findall(nodes.literal_block)):
        longest = max((len(line.expandtabs()) for line in block.astext().split("\n")), default=0)
        width = PRINT_WIDTH * inch - CODE_FRAME
        width -= BOX_PADDING * _count_inside(block, _is_box)
        width -= LIST_INDENT * _count_inside(block, lambda n: isinstance(n, nodes.list_item))
        size = CODE_SIZE if longest == 0 else min(CODE_SIZE, width / (longest * CODE_ADVANCE * CODE_SCALE))
        size = max(int(size * 10) / 10, CODE_SMALLEST)
        if size != CODE_SIZE:
            block.parent.insert(block.parent.index(block),
                                nodes.raw("", f"\\fvset{{fontsize={_code_size(size)}}}\n", format="latex"))
            after = block.parent.index(block) + 1
            block.parent.insert(after, nodes.raw("", f"\\fvset{{fontsize={_code_size(CODE_SIZE)}}}\n",
                                                 format="latex"))


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
        text = re.sub(r"\\\$(.*?)\\\$", lambda m: "$" + re.sub(r"\\([_{}])", r"\1", m.group(1)) + "$", text)
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


#: A term named in at least this share of the chapters is indexed only where a section or a
#: definition is about it.
UBIQUITOUS = 0.75


def _term_pattern(name: str) -> re.Pattern:
    """A term as a whole word or phrase; case matters when the name is spelled in mixed case
    (RoPE, YaRN, ALiBi), not for a name that is capitalised only as a sentence starts."""
    flags = re.IGNORECASE if name[1:] == name[1:].lower() else 0
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", flags)


def _index_at(paragraph: nodes.paragraph, name: str, main: bool = False) -> None:
    paragraph.insert(0, addnodes.index(entries=[("single", name, "", "main" if main else "", None)]))


def _concept_index(doctree: nodes.document) -> None:
    """The index of concepts: each glossary term at the first paragraph of each chapter
    that names it, and at the sections whose titles name it; each definition by its title.
    A term that nearly every chapter uses throughout (attention, a key) is indexed only
    where a section or a definition is about it."""
    from sphinx_proof.nodes import NODE_TYPES

    names = list(dict.fromkeys(term.astext().strip() for glossary in doctree.findall(addnodes.glossary)
                               for term in glossary.findall(nodes.term)))
    patterns = {name: _term_pattern(name) for name in names if name}
    kinds = tuple(NODE_TYPES.values())
    chapters = [page for page in doctree.findall(addnodes.start_of_file) if page["docname"].startswith("lessons/")]
    texts = [page.astext() for page in chapters]
    everywhere = {name for name, pattern in patterns.items()
                  if sum(bool(pattern.search(text)) for text in texts) >= UBIQUITOUS * len(texts)}
    for page in chapters:
        for section in page.findall(nodes.section):
            title = section.next_node(nodes.title)
            first = next(iter(section.findall(nodes.paragraph)), None)
            if title is None or first is None:
                continue
            for name, pattern in patterns.items():
                if pattern.search(title.astext()):
                    _index_at(first, name, main=True)
        named = set(everywhere)
        for paragraph in list(page.findall(nodes.paragraph)):
            if _inside(paragraph, lambda n: isinstance(n, (nodes.caption, nodes.table, nodes.title))):
                continue
            text = paragraph.astext()
            for name, pattern in patterns.items():
                if name not in named and pattern.search(text):
                    _index_at(paragraph, name)
                    named.add(name)
        for result in page.findall(lambda n: isinstance(n, kinds)):
            title = result.get("title", "").strip()
            if title.startswith("(") and title.endswith(")"):  # sphinx-proof keeps the title's parentheses
                title = title[1:-1].strip()
            first = next(iter(result.findall(nodes.paragraph)), None)
            if result.get("realtype") == "definition" and title and "$" not in title and first is not None:
                _index_at(first, title, main=True)


def _check_print_versions(doctree: nodes.document) -> None:
    """Every interactive figure's fallback carries its print version (companion.figures)."""
    for raw in list(doctree.findall(nodes.raw)):
        if "companion-fallback" not in raw.astext():
            continue
        bundle = raw.parent.parent if raw.parent is not None else None
        if bundle is None or bundle.get("nb_element") != "mime_bundle":
            continue
        if not any(child.get("mime_type") == "application/pdf" for child in bundle.children):
            LOGGER.warning("an interactive figure's fallback has no print version (application/pdf): "
                           "run its chapter again", location=raw)


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
    _api_pointer(doctree)
    _preface_headings(doctree)
    _plain_proofs(doctree)
    _solutions_at_chapter_ends(app, doctree)
    _results_list(app, doctree)
    _breakable_names_in_tables(doctree)
    _wide_tables(doctree)
    _code_blocks(doctree)
    _concept_index(doctree)
    _check_print_versions(doctree)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinxcontrib.rsvgconverter")
    app.connect("config-inited", _settings, priority=950)
    app.connect("builder-inited", _print_settings)
    # the book's pages first, then the chapters numbered and the appendices marked
    app.connect("doctree-resolved", _print_book, priority=400)
    app.connect("doctree-resolved", _chapter_numbers)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
