"""Repository hygiene: clean notebooks, pinned dependencies, one repository address."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import yaml

from bookwork.sphinx.folded_cells import fold_label

ROOT = Path(__file__).resolve().parent.parent


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_name(requirement: str) -> str:
    return re.split(r"[ <>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_notebooks_are_committed_clean():
    result = subprocess.run([sys.executable, "-m", "bookwork.clean_notebooks", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    for path in list((ROOT / "lessons").glob("*.ipynb")) + list((ROOT / "book").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert set(nb.metadata) <= {"kernelspec", "language_info"}, path.name
        for cell in nb.cells:
            assert set(cell.metadata) <= {"tags", "mystnb"}, (path.name, cell.metadata)
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


def test_clean_notebooks_detects_outputs(tmp_path):
    """The hygiene check itself must be able to fail."""
    source = next((ROOT / "lessons").glob("*.ipynb"))
    nb = json.loads(source.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    code["execution_count"] = 3
    dirty = tmp_path / "dirty.ipynb"
    dirty.write_text(json.dumps(nb))
    result = subprocess.run([sys.executable, "-m", "bookwork.clean_notebooks", "--check", str(dirty)], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 1


def test_environment_yml_names_every_runtime_dependency():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    names = set()
    pip_entries = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_entries = dep.get("pip", [])
            names |= {requirement_name(p) for p in pip_entries if not p.startswith("-")}
        else:
            names.add(requirement_name(dep))
    assert any(d.startswith("python=3.11") for d in env["dependencies"] if isinstance(d, str))
    for requirement in pyproject()["project"]["dependencies"]:
        assert requirement_name(requirement) in names, f"environment.yml lacks {requirement}"
    assert "-e ." in pip_entries or "." in pip_entries, "Binder must install companion from the repository"


def test_torch_is_pinned_everywhere():
    torch_requirements = [r for r in pyproject()["project"]["dependencies"] if requirement_name(r) == "torch"]
    assert torch_requirements == ["torch==2.13.0"]
    for extra in pyproject()["project"]["optional-dependencies"].values():
        assert not any(requirement_name(r) == "torch" for r in extra)
    assert re.search(r"torch==2\.13\.0", (ROOT / "environment.yml").read_text())
    assert '"torch==2.13.0"' in (ROOT / "Makefile").read_text()


def test_front_end_assets_are_pinned_and_locked():
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    for name, version in package["dependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} must be pinned exactly, got {version}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
    assert lock["packages"][""]["dependencies"] == package["dependencies"]


def test_repository_address_lives_in_one_place():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"].rstrip("/")
    slug = url.split("github.com/")[1]
    texts = {"README.md": (ROOT / "README.md").read_text()}
    for path in list((ROOT / "lessons").glob("*.ipynb")) + list((ROOT / "book").glob("*.ipynb")):
        texts[path.name] = path.read_text()
    texts["environment.yml"] = (ROOT / "environment.yml").read_text()
    for name, text in texts.items():
        for found in re.findall(r"github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?(?=[/@\s\"')\]]|$)", text):
            assert found == slug, f"{name} names github.com/{found}; _config.yml says {slug}"
    assert slug in texts["README.md"]


def test_config_builds_offline_with_warnings_as_errors():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "cache"
    assert config["only_build_toc_files"] is True
    assert "local_extensions" not in config["sphinx"], "extensions load by name, from an installed package"
    for extension in ("sphinx_proof", "sphinx_exercise", "bookwork.sphinx.offline"):
        assert extension in config["sphinx"]["extra_extensions"]
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "-W -n --keep-going" in (ROOT / "Makefile").read_text()


def test_every_folded_cell_says_what_it_holds():
    """Every code cell folded on the site (``hide-input``) starts with the line that labels
    its fold: ``# Check: ...``, ``# Plot: ...`` or ``# Setup: ...`` (:mod:`bookwork.sphinx.folded_cells`)."""

    unlabelled = []
    for path in sorted((ROOT / "lessons").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.ipynb")):
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "code" and "hide-input" in cell.metadata.get("tags", []) \
                    and fold_label(cell.source) is None:
                first = cell.source.lstrip("\n").split("\n", 1)[0]
                unlabelled.append(f"{path.relative_to(ROOT)} cell {index} ({cell.id}): {first[:60]!r}")
    assert unlabelled == [], f"{len(unlabelled)} folded cells without a label line:\n" + "\n".join(unlabelled)


def test_a_fold_label_is_the_first_line_in_one_of_three_forms():
    assert fold_label("# Check: the wavelengths quoted in section 1.2\nassert x") == \
        "Check: the wavelengths quoted in section 1.2"
    assert fold_label("\n# Plot: figure 3.1\nplt.plot()") == "Plot: figure 3.1"
    assert fold_label("# Setup: the matrices") == "Setup: the matrices"
    for unlabelled in ("# checks of the numbers\nassert x", "assert x  # Check: y", "x = 1\n# Check: y",
                       "# Check:\nassert x", "# Note: a remark"):
        assert fold_label(unlabelled) is None, unlabelled


#: The code the house rules (``[tool.ruff]`` in pyproject.toml) cover: the package, the
#: tools, and the tests of the book, the grader and the lab. The tests of the math modules
#: (the other tests/test_*.py and tests/support/bad_inputs.py) join when they are grouped.
LINTED = ["bookwork", "benchmarks", "companion", "tests/__init__.py", "tests/conftest.py", "tests/grading",
          "tests/support/__init__.py", "tests/support/assignments.py", "tests/support/book.py",
          "tests/support/browser.py", "tests/support/lab_synthetic.py", "tests/support/pdf_build.py",
          "tests/support/runs.py", "tests/support/warm_kernels.py", "tests/test_assignments.py",
          "tests/test_exercise_solutions.py", "tests/test_hygiene.py", "tests/test_lab.py", "tests/test_lab_stats.py",
          "tests/test_lessons.py", "tests/test_models.py", "tests/test_pdf.py", "tests/test_reader_edition.py",
          "tests/test_site.py", "tests/test_warm_kernels.py"]


def test_the_house_rules_hold():
    """``ruff check`` (the rules in pyproject.toml: pycodestyle, pyflakes, import order,
    bugbear, pyupgrade; lines up to 120 characters) finds nothing in the code it covers."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *LINTED], cwd=ROOT,
                          capture_output=True, text=True)
    assert "No module named ruff" not in done.stderr, "ruff is missing: pip install -e '.[test]'"
    assert done.returncode == 0, f"ruff check {' '.join(LINTED)}:\n{done.stdout}{done.stderr}"


#: A change to Python's search path: a call that edits ``sys.path`` or an assignment to it,
#: also where code is written into a string to run elsewhere.
PATH_EDIT = re.compile(r"sys\.path\s*(\.\s*(insert|append|extend|remove|pop|clear)\s*\(|(\[[^\]]*\])?\s*\+?=(?!=))")
#: Files that must write one: a submission in the attack suite edits its own search path
#: inside the sandbox, as a student's notebook may.
PATH_EDITS_ALLOWED = {"tests/grading/test_attacks.py": 1}


def path_edits(text: str) -> int:
    return len(PATH_EDIT.findall(text))


def test_no_code_edits_the_search_path():
    """Every module is imported by its name from the installed packages (companion,
    bookwork) or the repository's own (tests, benchmarks): no file edits ``sys.path``,
    so every edge between the parts is an import a reader can follow."""
    skipped = {".venv", "node_modules", "_build", ".git", "mutants"}
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if skipped & set(relative.parts):
            continue
        count = path_edits(path.read_text(encoding="utf-8"))
        if count != PATH_EDITS_ALLOWED.get(str(relative), 0):
            found[str(relative)] = count
    assert found == {}, f"files that edit sys.path (edits found): {found}"


def test_the_search_path_check_finds_an_edit():
    """The check above is not vacuous: each form of an edit is found, reading is not (the
    examples name the search path ``{path}``, so that this file holds no edit itself)."""
    for edit in ("{path}.insert(0, here)", "{path}.append('.')", "{path}[0] = cwd", "{path} += [x]",
                 "{path} = []", "code = 'import sys\\n{path}.insert(0, %r)' % folder"):
        assert path_edits(edit.format(path="sys.path")) == 1, edit
    for reading in ("next(p for p in {path} if p)", "{path}[0] == ''", "print({path})"):
        assert path_edits(reading.format(path="sys.path")) == 0, reading
