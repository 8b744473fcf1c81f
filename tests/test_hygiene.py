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

