"""Build one chapter, before it is in the table of contents, with the book's settings (warnings are errors).

    python -m bookwork.build_chapter lessons/03_rope.ipynb [--bib extra.bib]

makes a book in ``_build/chapters/<name>/`` holding the front matter (``book/``), the
chapters already in ``_toc.yml`` and the given chapter, builds it executed with ``-W -n
--keep-going`` (execution is cached there between runs), and exits with the build's
status. ``--bib`` appends BibTeX entries not yet in ``book/references.bib``. Use it
while writing a chapter; ``make book`` builds everything.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bookwork import ROOT

FRONT = ["book/intro", "book/readers", "book/students", "book/instructors"]
BACK = ["book/figures", "book/api", "book/glossary", "book/references"]


def main(argv: list[str]) -> int:
    extra_bib = None
    if "--bib" in argv:
        index = argv.index("--bib")
        extra_bib = Path(argv[index + 1])
        argv = argv[:index] + argv[index + 2 :]
    if len(argv) != 1:
        print(__doc__)
        return 2
    chapter = Path(argv[0]).resolve().relative_to(ROOT)
    work = ROOT / "_build" / "chapters" / chapter.stem
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_config.yml", work / "_config.yml")
    sources = [p for p in (ROOT / "book").iterdir() if p.is_file()]
    listed = [line.split("file:")[1].strip() for line in (ROOT / "_toc.yml").read_text().splitlines()
              if "file: lessons/" in line]
    others = [ROOT / f"{name}.ipynb" for name in listed]
    sources += others + [ROOT / chapter]
    for source in sources:
        target = work / source.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copy(source, target)
    if extra_bib is not None:
        bib = work / "book" / "references.bib"
        bib.write_text((ROOT / "book" / "references.bib").read_text() + "\n" + extra_bib.read_text())
    if not (work / "node_modules").exists():
        (work / "node_modules").symlink_to(ROOT / "node_modules")
    if not (work / "companion").exists():
        (work / "companion").symlink_to(ROOT / "companion")
    def entries(names):
        return "".join(f"      - file: {name}\n" for name in dict.fromkeys(names))

    (work / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n"
        f"  - caption: Getting started\n    chapters:\n{entries(FRONT[1:])}"
        f"  - caption: Chapters\n    chapters:\n{entries(listed + [str(chapter.with_suffix(''))])}"
        f"  - caption: Reference\n    chapters:\n{entries(BACK)}"
    )
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jupyter_book), "build", str(work), "-W", "-n", "--keep-going"], cwd=work)
    print(f"\n{chapter}: build {'succeeded' if result.returncode == 0 else 'FAILED'} in {work}")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
