"""The book's MyST markup rewritten as Markdown that any notebook front end shows.

Jupyter, JupyterLab and Colab render CommonMark with math, not MyST: a ```` ```{prf:theorem} ````
block, a ``{cite:p}`key``` or a ``{prf:ref}`label``` role would show as raw text. Two
tools rewrite the lessons' Markdown with the functions here: :mod:`bookwork.assignments`
(the student notebooks) and :mod:`bookwork.edition` (the reader's edition).

    labels(text)                        label -> title of the labelled directives
    myst_to_markdown(text, titles, ...) the rewritten Markdown
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
    name = target.split("/")[-1]
    if name in documents:
        return documents[name]
    chapter = re.match(r"(\d\d)_", name)
    return f"chapter {int(chapter.group(1))}" if chapter else f"the {name.replace('_', ' ')} page of the book"


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
    text = re.sub(r"\{doc\}`([^`]+)`", lambda m: _doc_text(m.group(1), documents or {}), text)
    text = re.sub(r"\{(?:ref|numref|prf:ref)\}`([^`]+)`", lambda m: titles.get(m.group(1), m.group(1)), text)
    text = re.sub(r"\{py:\w+\}`~?([^`]+)`", r"`\1`", text)
    text = re.sub(r"\{math\}`([^`]+)`", r"$\1$", text)
    text = re.sub(r"\{eq\}`([^`]+)`",
                  lambda m: titles.get(m.group(1), f"equation ({numbers.get(m.group(1), m.group(1))})"), text)
    return text
