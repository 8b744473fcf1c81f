""":mod:`bookwork.sphinx.exercise_solutions`: solution markers never show, and a build can leave solutions out."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bookwork.sphinx import exercise_solutions

PAGE = """# Page

```{exercise} Write it
:label: ex-demo

Define `double`.
```

```{solution-start} ex-demo
:class: dropdown
```

The worked answer multiplies by two.

```python
def double(x):
    # BEGIN SOLUTION
    return 2 * x
    # END SOLUTION

answer = double(21)  # SOLUTION
```

```{solution-end}
```

```{exercise} Say why
:label: ex-why
```

```{solution} ex-why
:class: dropdown

Because the written reason says so.
```
"""


def build(tmp_path: Path, without_solutions: bool, env: dict | None = None) -> str:
    """Build a one-page site with the book's exercise extensions (warnings are errors)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "extensions = ['myst_parser', 'sphinx_exercise', 'bookwork.sphinx.exercise_solutions']\n"
        f"book_without_solutions = {without_solutions}\n")
    (src / "index.md").write_text(PAGE)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return (tmp_path / "out" / "index.html").read_text()


def test_markers_are_stripped_from_code():
    code = "def f(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION\n\ny = f(1)  # SOLUTION\n"
    assert exercise_solutions.strip_markers(code) == "def f(x):\n    return 2 * x\n\ny = f(1)\n"


def test_site_shows_solutions_without_markers(tmp_path):
    html = build(tmp_path, without_solutions=False)
    assert "The worked answer multiplies by two." in html
    assert "Because the written reason says so." in html
    assert "SOLUTION" not in html
    assert "Define" in html and "double" in html


def test_site_without_solutions_keeps_exercises_only(tmp_path):
    html = build(tmp_path, without_solutions=True)
    assert "Define" in html and "Say why" in html
    for text in ("The worked answer", "multiplies by two", "Because the written reason", "return"):
        assert text not in html, text


def test_environment_variable_switches_it_on(tmp_path):
    html = build(tmp_path, without_solutions=False, env={"BOOK_WITHOUT_SOLUTIONS": "1"})
    assert "The worked answer" not in html and "Say why" in html
