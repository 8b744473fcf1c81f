"""The book's MyST markup rewritten as Markdown that any notebook front end shows.

Jupyter, JupyterLab and Colab render CommonMark with math, not MyST: a ```` ```{prf:theorem} ````
block, a ``{cite:p}`key``` or a ``{prf:ref}`label``` role would show as raw text. Two
tools rewrite the lessons' Markdown with the functions here: :mod:`bookwork.assignments`
(the student notebooks) and :mod:`bookwork.edition` (the reader's edition).

    labels(text)                        label -> title of the labelled directives
    myst_to_markdown(text, titles, ...) the rewritten Markdown
    leftovers(markdown, book_labels)    what of the markup a reader would still see

A cross-reference reads as it does on the site: the text it was given, or what it
points to (``Figure 6.4``, ``Definition 3.1 (Rotary position embedding)``, a section's
or a page's title), never the label itself; a link to a chapter reads "chapter 3".
"""
from __future__ import annotations

import re
from collections.abc import Callable

#: A directive: ```` ```{kind} title ````, its options (``:label: x``), its body, and the
#: same fence again (three or more backticks, or colons with ``colon_fence``; a longer
#: fence holds directives or code blocks inside).
DIRECTIVE = re.compile(r"^(`{3,}|:{3,})\{([\w:-]+)\}([^\n]*)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
#: A section label, ``(name)=`` on the line before a heading.
SECTION_LABEL = re.compile(r"^\(([\w-]+)\)=[ \t]*\n", re.MULTILINE)
OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*)$")
CITE = re.compile(r"\{cite:([pt])\}`([^`]+)`")


def labels(text: str) -> dict[str, str]:
    """Titles of the labelled directives in MyST ``text`` (``{prf:theorem} Title`` + ``:label:``)."""
    return {options["label"]: title for kind, title, options in directives(text) if title and "label" in options}


def directives(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """``(kind, title, options)`` of every directive in ``text``, in order (``prf:`` dropped)."""
    found = []
    for match in DIRECTIVE.finditer(text):
        options = dict(OPTION.match(line).groups() for line in match.group(4).splitlines()
                       if OPTION.match(line))
        found.append((match.group(2).split(":")[-1], match.group(3).strip(), options))
        found += directives(match.group(4))
    return found


def kind_name(kind: str) -> str:
    """The heading word of a directive kind: ``prf:theorem`` -> ``Theorem``."""
    return kind.split(":")[-1].replace("-", " ").capitalize()


def _doc_text(target: str, documents: dict[str, str]) -> str:
    """How a link to a whole page reads: a chapter as "chapter 3", another page by its
    title (``documents``; without it, its name in words), as in "the References page"."""
    name = target.split("/")[-1]
    chapter = re.match(r"(\d\d)_", name)
    if chapter:
        return f"chapter {int(chapter.group(1))}"
    return documents.get(name, name.replace("_", " "))


#: "chapter 3 ({doc}`03_rope`)": the site shows the chapter's title in the parentheses.
CHAPTER_AND_LINK = re.compile(r"\b([Cc]hapter (\d+)) \(\{doc\}`(?:[^`]*/)?(\d\d_\w+)`\)")


def _chapter_and_title(match: re.Match, documents: dict[str, str]) -> str:
    title = documents.get(match.group(3))
    return f"{match.group(1)} ({title})" if title else match.group(1)


def _keys(cite: str) -> list[str]:
    return [key.strip() for key in cite.split(",") if key.strip()]


def show_keys(keys: list[str], textual: bool) -> str:
    """A citation as its keys, ``[key1, key2]`` (the student notebooks' form)."""
    return "[" + ", ".join(keys) + "]"


def myst_to_markdown(text: str, titles: dict[str, str] | None = None, *,
                     numbers: dict[str, str] | None = None,
                     documents: dict[str, str] | None = None,
                     cite: Callable[[list[str], bool], str] = show_keys) -> str:
    """Rewrite the MyST markup of the book into Markdown any notebook front end shows.

    Exercise directives become headings; other directives (definitions, theorems, proofs) a
    bold title followed by their body; ``tabularcolumns`` (for the PDF) goes; admonitions a
    quoted block under their title; a solution a collapsed ``<details>`` block. Cross-
    references show their text, or the title of what they point to (``titles``, label ->
    title, as :func:`labels` finds them, or with numbers, as the reader's edition gives
    them). ``numbers`` (label -> number) puts numbers into the headings of labelled
    directives; ``documents`` (page name -> text) says how a ``{doc}`` link to a page reads,
    by default "chapter 3" or "the references page of the book". Citations show ``cite(keys,
    textual)``: by default their keys, in brackets.
    """
    titles = titles or {}
    numbers = numbers or {}
    text = SECTION_LABEL.sub("", text)

    def directive(match: re.Match) -> str:
        kind, title = match.group(2).split(":")[-1], match.group(3).strip()
        lines = DIRECTIVE.sub(directive, match.group(4)).splitlines()
        options = dict(OPTION.match(line).groups() for line in lines if OPTION.match(line))
        body = "\n".join(line for line in lines if not OPTION.match(line)).strip()
        if kind == "tabularcolumns":  # how the PDF sets the next table's columns
            return ""
        if kind == "admonition":
            quoted = "\n".join(f"> {line}".rstrip() for line in body.splitlines())
            return f"> **{title}**\n>\n{quoted}\n"
        if kind == "solution":
            exercise = titles.get(title, "the exercise")
            return (f"<details>\n<summary><b>Solution to {exercise}</b></summary>\n\n{body}\n\n"
                    "</details>\n")
        number = numbers.get(options.get("label", ""), "")
        name = kind_name(kind) + (f" {number}" if number else "")
        if kind == "exercise":
            return f"### {name}: {title}\n\n{body}\n" if title else f"### {name}\n\n{body}\n"
        heading = f"**{name}: {title}**" if title else f"**{name}.**"
        return f"{heading}\n\n{body}\n"

    text = DIRECTIVE.sub(directive, text)
    text = CITE.sub(lambda m: cite(_keys(m.group(2)), m.group(1) == "t"), text)
    text = re.sub(r"\{numref\}`([^`<]+?)\s*<([^`]+)>`",
                  lambda m: m.group(1).replace("%s", numbers.get(m.group(2), "")).replace("{number}", numbers.get(
                      m.group(2), "")), text)
    text = re.sub(r"\{(?:ref|doc|prf:ref|term)\}`([^`<]+?)\s*<[^`]+>`", r"\1", text)
    text = re.sub(r"\{term\}`([^`]+)`", r"\1", text)
    text = CHAPTER_AND_LINK.sub(lambda m: _chapter_and_title(m, documents or {}), text)
    text = re.sub(r"\{doc\}`([^`]+)`", lambda m: _doc_text(m.group(1), documents or {}), text)
    text = re.sub(r"\{(?:ref|numref|prf:ref)\}`([^`]+)`", lambda m: titles.get(m.group(1), m.group(1)), text)
    text = re.sub(r"\{py:\w+\}`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"\{math\}`([^`]+)`", r"$\1$", text)
    text = re.sub(r"\{eq\}`([^`]+)`",
                  lambda m: titles.get(m.group(1), f"equation ({numbers.get(m.group(1), m.group(1))})"), text)
    return text


#: MyST that a plain notebook front end would show as raw text: a directive's fence, a
#: role, a label line, a directive's option.
RAW_MYST = re.compile(
    r"```\{|:::\{|\{(?:cite|prf|ref|doc|numref|term|eq|math|py|glue|index|download)(?::[\w:]+)?\}`"
    r"|^\([\w-]+\)=[ \t]*$|^:(?:label|class|name|nonumber|dropdown):", re.MULTILINE)
#: A small word twice ("the the"): a rewritten reference that brought its own article.
DOUBLED_WORD = re.compile(r"\b(the|a|an|of|to|in|on|and|is)\s+\1\b", re.IGNORECASE)
#: A reference repeated in its own parentheses: "chapter 0 (chapter 0)".
REPEATED_REFERENCE = re.compile(
    r"\b((?:chapter|section|figure|definition|theorem|lemma|exercise|equation)\s+[\d.]+)\s*\(\1\b", re.IGNORECASE)
#: Code and math, where a label or a repeated word may stand on purpose.
CODE_OR_MATH = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$", re.DOTALL)


def leftovers(markdown: str, book_labels=()) -> list[str]:
    """What of the book's markup a reader of ``markdown`` would still see, each with the
    words around it: raw MyST, any of ``book_labels`` (the book's labels, which only a
    cross-reference should name) outside code and math, a doubled small word, a
    reference repeated in its own parentheses. Empty when the rewriting is clean."""
    found = [f"raw MyST {m.group(0)!r}" for m in RAW_MYST.finditer(markdown)]
    prose = CODE_OR_MATH.sub(" \u2026 ", markdown)  # an ellipsis in their place: no word meets across them
    words = set(re.findall(r"[\w-]+", prose))
    labels = {label for label in book_labels if "-" in label}  # ("conventions" is a word too)
    found += [f"the label {label!r}" for label in sorted(labels & words)]
    for name, pattern in (("a doubled word", DOUBLED_WORD), ("a repeated reference", REPEATED_REFERENCE)):
        for m in pattern.finditer(prose):
            found.append(f"{name}: ...{' '.join(prose[max(0, m.start() - 30):m.end() + 20].split())}...")
    return found
