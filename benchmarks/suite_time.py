"""Where the test suite's time goes, by area, from the JUnit XML report pytest writes.

    make test PYTEST_ARGS="--junitxml=_build/test-times.xml"
    .venv/bin/python -m benchmarks.suite_time _build/test-times.xml

Each test's time is its setup, call and teardown, as pytest reports them; the first test
that needs the book carries the whole book build (lesson execution included) in its
setup, and the first test of a chapter's grades carries that chapter's grading. The sum
over areas is the work the pytest-xdist workers shared; the wall time of the run is
about that sum divided by the number of workers, when no single area is longer. The
PDF is built in a background process beside the tests, so its build is not in any
test's time (the PDF tests wait for it only when it is not yet done).
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

#: Areas in the order the README lists them: (name, test files or test-name prefixes).
AREAS = [
    ("book build and lesson execution", ("test_lessons.py::test_lesson_executes",)),
    ("grading the chapters' versions", ("test_assignments.py",)),
    ("the grader: attacks, a class's batch", ("test_attacks.py", "test_classroom.py")),
    ("site in the browser", ("test_site.py", "test_figure_")),
    ("reader's edition run alone", ("test_reader_edition.py",)),
    ("lab (reduced run, claims)", ("test_lab.py",)),
    ("PDF checks", ("test_pdf.py",)),
]
OTHER = "unit tests (companion, configurations, parity)"


def area_of(file: str, name: str) -> str:
    for area, prefixes in AREAS:
        if any(f"{file}::{name}".startswith(p) or file.startswith(p) for p in prefixes):
            return area
    return OTHER


def breakdown(path: str) -> tuple[dict, dict, dict, float]:
    """Seconds, test counts and the longest test per area, and the report's wall time."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    seconds, counts, longest = defaultdict(float), defaultdict(int), {}
    for case in suite.iter("testcase"):
        file = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
        name = case.get("name", "")
        area, time = area_of(file, name), float(case.get("time", 0))
        seconds[area] += time
        counts[area] += 1
        if time > longest.get(area, ("", -1.0))[1]:
            longest[area] = (f"{file}::{name}", time)
    return seconds, counts, longest, float(suite.get("time", 0))


def main(path: str) -> None:
    seconds, counts, longest, wall = breakdown(path)
    total = sum(seconds.values())
    print(f"{'area':50s} {'tests':>6s} {'seconds':>8s} {'share':>6s}  longest test")
    for area in [a for a, _ in AREAS] + [OTHER]:
        if counts[area]:
            name, time = longest[area]
            print(f"{area:50s} {counts[area]:6d} {seconds[area]:8.0f} {seconds[area] / total:6.0%}  "
                  f"{time:.0f} s {name[:60]}")
    print(f"{'all tests':50s} {sum(counts.values()):6d} {total:8.0f}")
    print(f"wall time of the run: {wall:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
