"""The reader's edition (notebooks/, :mod:`bookwork.edition`): fresh, plain, installable, runnable.

- it is what the lessons give today (``make edition`` rewrites it);
- its Markdown holds no MyST markup, its cells no assignment markers or checks;
- its setup cell installs the release tag of companion's version with the pinned
  versions, which are the versions these tests run with (and Binder's environment.yml
  gives the same);
- a chapter runs alone: copied into an empty folder, it runs from top to bottom in a
  fresh kernel of an environment where companion was installed as the setup cell installs
  it, from a wheel of this checkout instead of the repository address; it reads the lab's
  stored results from the installed package, not from a checkout, and writes nothing
  beside itself. Two chapters run so (the first, and the lab's, which reads the most
  package data: its runs, the controls and the corpus); for every chapter the parts of
  that proof hold separately: its code is the lesson's, which the book build executes
  (``test_edition_is_what_the_lessons_give``); it reads no file but through companion
  (``test_chapters_read_files_only_through_companion``); every file companion reads is in
  the installed wheel and found there (``test_the_installed_package_reads_its_data``); and
  the build's execution writes nothing beside the lessons
  (``tests/test_lessons.py::test_the_build_writes_nothing_beside_the_lessons``).
"""
from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient.exceptions import CellExecutionError
from packaging.requirements import Requirement
from packaging.version import Version

from bookwork import edition as reader_edition
from bookwork import myst_markdown
from bookwork.book_targets import book_targets
from bookwork.sphinx import editions
from tests.support.book import use_warm_kernels

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = [path.stem for path in reader_edition.lessons()]
#: MyST that a plain notebook front end would show as raw text.
RAW_MYST = myst_markdown.RAW_MYST
#: Chapters that read lessons/lab_results from a checkout: they cannot run alone until the
#: lab's stored results ship with the package.
READ_FROM_CHECKOUT: set[str] = set()


@functools.cache
def book_labels() -> frozenset[str]:
    """Every label of the book, which only a cross-reference may name."""
    return frozenset(book_targets(reader_edition.lessons()))


def edition_notebook(chapter: str):
    return nbformat.read(reader_edition.EDITION / f"{chapter}.ipynb", as_version=4)


def setup_requirements(nb) -> list[str]:
    """The REQUIREMENTS list of a notebook's setup cell (its first code cell)."""
    setup = next(cell for cell in nb.cells if cell.cell_type == "code")
    for node in ast.parse(setup.source).body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "REQUIREMENTS":
            return ast.literal_eval(node.value)
    raise AssertionError("the setup cell has no REQUIREMENTS list")


def test_edition_is_what_the_lessons_give():
    stale = reader_edition.stale()
    assert not stale, f"notebooks/ is out of date for {stale}: run 'make edition' and commit it"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_markdown_is_plain_and_checks_are_gone(chapter):
    nb = edition_notebook(chapter)
    lesson = nbformat.read(ROOT / "lessons" / f"{chapter}.ipynb", as_version=4)
    assert not [cell for cell in nb.cells if cell.cell_type == "raw"], "assignment markers are left"
    for cell in nb.cells:
        assert not cell.get("outputs") and not cell.get("execution_count"), "committed with outputs"
        if cell.cell_type == "markdown":
            left = myst_markdown.leftovers(cell.source, book_labels())
            assert not left, f"{left} in:\n{cell.source[:400]}"
        else:
            assert not re.search(r"#\s*(BEGIN|END) (SOLUTION|QUESTION|TESTS)|# SOLUTION\s*$|^# HIDDEN",
                                 cell.source, re.MULTILINE), f"an otter marker is left in:\n{cell.source[:300]}"
    checks = [cell.source for cell in lesson.cells
              if cell.cell_type == "code" and re.match(r"\s*(# HIDDEN\s*)?def test_", cell.source)]
    assert checks, "the lesson has checks, so this test can tell that they are left out"
    code = "\n".join(cell.source for cell in nb.cells)
    assert not [check for check in checks if check.strip() in code]
    text = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert nb.cells[0].source.startswith("# "), "the chapter's title comes first"
    exercises = re.findall(r"^### Exercise (\d+)\.(\d+): ", text, re.MULTILINE)
    number = str(int(chapter[:2]))
    assert exercises and [n for c, n in exercises] == [str(i + 1) for i in range(len(exercises))]
    assert {c for c, n in exercises} == {number}
    assert text.count("<details>") == text.count("</details>") > 0
    if "cite:" in "\n".join(cell.source for cell in lesson.cells):
        assert "### Works cited in this chapter" in text


def test_release_tag_and_pins_are_the_tested_ones():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    init = (ROOT / "companion" / "__init__.py").read_text()
    assert re.search(rf'^__version__ = "{re.escape(version)}"$', init, re.MULTILINE), \
        "companion.__version__ and pyproject.toml's version differ"
    pins = reader_edition.requirements()
    names = set()
    for line in pins:
        requirement = Requirement(line)
        (spec_,) = requirement.specifier
        assert spec_.operator == "==", f"{line}: pin an exact version"
        installed = Version(importlib.metadata.version(requirement.name)).public
        assert installed == spec_.version, (
            f"notebooks/requirements.txt pins {line}, but the tests run with {installed}: "
            "update the pin and run 'make edition'")
        names.add(requirement.name)
    runtime = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {Requirement(r).name for r in runtime} <= names, "pin every runtime dependency of companion"
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    for chapter in CHAPTERS:
        assert setup_requirements(edition_notebook(chapter)) == [
            f"companion @ git+{url}@v{version}", *pins], chapter
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    binder = [entry for dep in env["dependencies"] if isinstance(dep, dict) for entry in dep["pip"]]
    assert [line for line in binder if not line.startswith("-")] == pins, \
        "environment.yml must give Binder the same pins as notebooks/requirements.txt"


def test_myst_for_readers():
    text = ("(chapter-03)=\n# 3. RoPE\n\n```{prf:definition} Rotary position embedding\n:label: def-03-rope\n\n"
            "Turn pairs.\n```\n\n```{admonition} What you will learn\n:class: tip\n\n- turning\n```\n\n"
            "See {cite:p}`su2024roformer,press2022alibi` and {cite:t}`su2024roformer`, {prf:ref}`def-03-rope`, "
            "and the {doc}`../book/references` page.\n\n"
            "```{exercise} Coding: RoPE\n:label: ex-03-rotate\n\nWrite it.\n```\n\n"
            "```{solution} ex-03-rotate\n:class: dropdown\n\nLike so.\n```\n")
    titles = {"def-03-rope": "Definition 3.1 (Rotary position embedding)", "ex-03-rotate": "Exercise 3.4 (Coding)"}
    numbers = {"def-03-rope": "3.1", "ex-03-rotate": "3.4"}
    out = myst_markdown.myst_to_markdown(text, titles, numbers=numbers, documents={"references": "References"},
                                         cite=reader_edition.citation)
    assert out.startswith("# 3. RoPE")
    assert "**Definition 3.1: Rotary position embedding**\n\nTurn pairs." in out
    assert "> **What you will learn**\n>\n> - turning" in out
    assert ("See (Su et al., 2024; Press et al., 2022) and Su et al. (2024), Definition 3.1 (Rotary "
            "position embedding), and the References page.") in out
    assert "### Exercise 3.4: Coding: RoPE\n\nWrite it." in out
    assert "<details>\n<summary><b>Solution to Exercise 3.4 (Coding)</b></summary>\n\nLike so.\n\n</details>" in out
    assert not RAW_MYST.findall(out)


def test_nested_and_colon_fenced_directives():
    text = ("````{exercise} Nested\n:label: ex-01-n\n\nDo it:\n\n```python\nx = 1\n```\n\n"
            "```{prf:remark}\nNote.\n```\n````\n\n:::{admonition} Colon\n:class: tip\nBody.\n:::\n\n"
            "See {numref}`Figure %s <fig-01-a>`.\n")
    assert myst_markdown.labels(text) == {"ex-01-n": "Nested"}
    out = myst_markdown.myst_to_markdown(text, {}, numbers={"fig-01-a": "1.2", "ex-01-n": "1.1"})
    assert "### Exercise 1.1: Nested\n\nDo it:\n\n```python\nx = 1\n```\n\n**Remark.**\n\nNote." in out
    assert "> **Colon**\n>\n> Body." in out and "See Figure 1.2." in out
    assert not RAW_MYST.findall(out)


def test_author_year_and_works_cited():
    assert reader_edition.author_year("su2024roformer") == ("Su et al.", "2024")
    assert reader_edition.author_year("wang2021gptj") == ("Wang and Komatsuzaki", "2021")
    assert reader_edition.author_year("runge1901empirische") == ("Runge", "1901")
    cited = reader_edition.works_cited(["su2024roformer", "runge1901empirische", "su2024roformer"])
    lines = cited.splitlines()
    assert len(lines) == 2 and lines[0].startswith("- **Runge (1901).**") and "Über" in lines[0]
    assert lines[1].startswith("- **Su et al. (2024).**") and "RoFormer" in lines[1]


def test_launch_buttons_open_the_edition(tmp_path):
    class App:
        srcdir = str(ROOT)
        outdir = str(tmp_path / "html")
        builder = type("Builder", (), {"format": "html"})()
        env = type("Env", (), {"editions_pdf": True})()

    context = {"pathto": lambda name, resource: f"../{name}", "header_buttons": [
        {"label": "launch-buttons", "buttons": [
            {"text": "Binder", "url": "https://mybinder.org/v2/gh/o/r/main?urlpath=tree/lessons/03_rope.ipynb"},
            {"text": "Colab", "url": "https://colab.research.google.com/github/o/r/blob/main/lessons/03_rope.ipynb"},
            {"text": "Live Code", "javascript": "initThebeSBT()"}]},
        {"label": "download-buttons", "buttons": []}]}
    editions._launch_edition(App(), "lessons/03_rope", "page.html", context, None)
    binder, colab, live = context["header_buttons"][0]["buttons"]
    assert binder["url"].endswith("?urlpath=tree/notebooks/03_rope.ipynb")
    assert colab["url"] == "https://colab.research.google.com/github/o/r/blob/main/notebooks/03_rope.ipynb"
    assert live == {"text": "Live Code", "javascript": "initThebeSBT()"}
    edition, pdf = context["header_buttons"][1]["buttons"]
    assert edition["label"] == "download-edition-button" and edition["url"].endswith(".zip")
    assert pdf["url"] == f"../{editions.PDF_NAME}"


# --- every chapter alone, in a fresh environment ------------------------------------------

@pytest.fixture(scope="session")
def reader_environment(tmp_path_factory):
    """A virtual environment that sees the test environment's libraries (no second torch)
    and has companion installed from a wheel of this checkout, as the setup cell would
    install it: the same pinned requirements, nothing downloaded (--no-index)."""
    base = tmp_path_factory.mktemp("reader-env")
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "companion", source / "companion", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(source)], check=True)
    (wheel,) = wheels.glob("companion-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    tested = sysconfig.get_paths()["purelib"]  # this environment's libraries, as they are
    (Path(site) / "tested-libraries.pth").write_text(tested + "\n")
    requirements = setup_requirements(edition_notebook(CHAPTERS[0]))
    assert requirements[0].startswith("companion @ git+")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
                    str(wheel), *requirements[1:]], check=True, env=env)
    # its kernels are warm ones (tests/warm_kernels.py), forked from a server that runs
    # in this environment, with its companion, and has imported what the chapters import
    kernels = use_warm_kernels(base / "warm-kernels", str(python), name="reader") / "kernels"
    return {"python": python, "kernels": kernels, "env": env, "venv": venv}


#: The chapters run alone in the reader's environment: the first, and the lab's (its stored
#: runs, the controls and the corpus). The others' code runs in the book build, and the data
#: they read is read from the wheel by test_the_installed_package_reads_its_data; see the
#: module's docstring.
RUN_ALONE = ["00_why_positions", "09_lab"]

#: Calls that read or write a file, or name a path: a chapter's code reaches its data only
#: through companion, so that it runs wherever its notebook is.
FILE_ACCESS = re.compile(r"(?<![.\w])open\(|\bPath\(|read_text|write_text|read_bytes|np\.(load|save)|savefig|"
                         r"to_csv|read_csv|os\.(listdir|walk|remove|makedirs|mkdir)|glob\(|__file__")


def test_chapters_read_files_only_through_companion():
    """No code cell of the reader's edition opens, lists or writes a file itself."""
    assert FILE_ACCESS.search('with open("notes.txt") as f') and not FILE_ACCESS.search("sp.Interval.open(0, 1)")
    found = {}
    for chapter in CHAPTERS:
        for cell in edition_notebook(chapter).cells[1:]:  # the setup cell installs, and is checked above
            if cell.cell_type == "code":
                found.update({f"{chapter}: {m.group(0)}": cell.source[:60] for m in FILE_ACCESS.finditer(cell.source)})
    assert found == {}, found


def test_the_installed_package_reads_its_data(reader_environment):
    """Every file under companion/ that is not Python is in the wheel, and the readers of the
    package's data find it in the installed package: the lab's runs, the corpus, the published
    configurations and the class defaults."""
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "companion").rglob("*")
               if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts}
    probe = """import json, sys, importlib.resources as resources
import companion
from pathlib import Path
from companion import configs
from companion.lab import results, stdlib_corpus
root = Path(companion.__file__).parent
files = sorted("companion/" + p.relative_to(root).as_posix() for p in root.rglob("*")
               if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts)
runs = [results.load_results(), results.load_results(results.CONTROLS)]
corpus = stdlib_corpus.load_corpus()
print(json.dumps({"root": str(root), "files": files, "seeds": [r.seed_list() for r in runs],
                  "published": len(configs.PUBLISHED), "types": len(configs.model_defaults()["model_types"]),
                  "corpus": len(corpus.train) > 0}))"""
    done = subprocess.run([reader_environment["python"], "-c", probe], capture_output=True, text=True,
                          env=reader_environment["env"], cwd=str(reader_environment["venv"]))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["root"].startswith(str(reader_environment["venv"]))
    assert shipped <= set(found["files"]), sorted(shipped - set(found["files"]))
    assert found["seeds"] == [list(range(10)), [0, 1, 2, 3, 4]] and found["corpus"]
    assert found["published"] >= 15 and found["types"] > 100


@pytest.mark.parametrize("chapter", [
    pytest.param(chapter, marks=pytest.mark.xfail(
        raises=CellExecutionError, strict=True, reason="reads lessons/lab_results from a checkout"))
    if chapter in READ_FROM_CHECKOUT else chapter for chapter in RUN_ALONE])
def test_chapter_runs_alone(chapter, reader_environment, tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    folder = tmp_path / "alone"
    folder.mkdir()
    shutil.copy2(reader_edition.EDITION / f"{chapter}.ipynb", folder)
    nb = nbformat.read(folder / f"{chapter}.ipynb", as_version=4)
    probe = ("import companion, os\nfrom companion.lab import results\n"
             "print(companion.__file__, results.STORED, os.getcwd(), sep='\\n')")
    nb.cells.append(nbformat.v4.new_code_cell(probe))
    manager = KernelManager(kernel_name="reader",
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(reader_environment["kernels"])]))
    client = NotebookClient(nb, km=manager, timeout=600, resources={"metadata": {"path": str(folder)}})
    try:
        client.execute(env=reader_environment["env"])
    finally:
        manager.shutdown_kernel(now=True)
    # the kernel sends printed text as it flushes it: one line may come in an output of its own
    printed = "".join(out["text"] for out in nb.cells[-1].outputs if out.get("name") == "stdout")
    where, stored, cwd = printed.strip().split("\n")
    assert where.startswith(str(reader_environment["venv"])), f"the kernel imported companion from {where}"
    # the lab's stored results (chapters 7 and 9 read them) are the installed package's data
    assert stored.startswith(str(reader_environment["venv"])) and "lessons" not in Path(stored).parts, stored
    assert Path(cwd) == folder
    assert sorted(p.name for p in folder.iterdir()) == [f"{chapter}.ipynb"], "it wrote nothing beside itself"
