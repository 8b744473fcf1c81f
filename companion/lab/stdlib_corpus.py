r"""The lab's text: a fixed selection of Python's own source, read as bytes.

The corpus is a fixed selection of Python's own standard-library source files
(:data:`CORPUS_FILES`), found through ``sysconfig.get_paths()["stdlib"]``, so it is
on every machine that runs the book and nothing is downloaded. Tokens are the bytes
of the files (0..255; :func:`encode` and :func:`decode` turn text into tokens and
back). Three parts, by whole files: the files of :data:`VALIDATION_FILES` are held
out for every reported number (the test text); those of :data:`TUNING_FILES` are
held out to choose settings such as the learning rate, so that no choice is made on
the text the results are reported on; the others are the training text. Python
versions edit these files a little from release to release, so the corpus differs
slightly between versions: :func:`load_corpus` records the Python version, the files
that were missing (if any) and the SHA-256 of the corpus bytes, and the lab writes
them next to its results.

Training reads random windows of the text (:func:`text_batch`), perplexity reads
consecutive ones (:func:`text_windows`). The synthetic tasks the models also learn
and are probed with are in :mod:`companion.lab.tasks`.
"""
from __future__ import annotations

import hashlib
import platform
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import torch

from .._contracts import AnyValue, Count, InstanceOf, Label, WholeNumbers, contract
from .kinds import TokenTensor

__all__ = [
    "CORPUS_FILES",
    "VALIDATION_FILES",
    "TUNING_FILES",
    "Corpus",
    "stdlib_dir",
    "load_corpus",
    "sha256",
    "text_batch",
    "text_windows",
    "encode",
    "decode",
]

#: The standard-library files of the corpus, relative to the stdlib folder, in order.
CORPUS_FILES = (
    "abc.py", "argparse.py", "ast.py", "base64.py", "bisect.py", "calendar.py", "cmd.py",
    "code.py", "codecs.py", "collections/__init__.py", "colorsys.py", "configparser.py",
    "contextlib.py", "copy.py", "csv.py", "dataclasses.py", "difflib.py", "dis.py", "enum.py",
    "fnmatch.py", "functools.py", "getopt.py", "gettext.py", "glob.py", "hmac.py",
    "inspect.py", "json/__init__.py", "json/decoder.py", "json/encoder.py", "keyword.py",
    "linecache.py", "locale.py", "logging/__init__.py", "numbers.py", "operator.py",
    "optparse.py", "os.py", "random.py", "shutil.py", "string.py", "tarfile.py",
    "threading.py", "tokenize.py", "traceback.py", "types.py", "typing.py", "uuid.py",
    "warnings.py", "weakref.py",
    # held out for validation (VALIDATION_FILES)
    "fractions.py", "heapq.py", "pprint.py", "queue.py", "shlex.py", "statistics.py", "textwrap.py",
)
#: The files held out whole for the reported numbers (about 170 kB with Python 3.11).
VALIDATION_FILES = ("fractions.py", "heapq.py", "pprint.py", "queue.py", "shlex.py", "statistics.py", "textwrap.py")
#: The files held out whole for choosing settings (the learning rate), never for a reported number.
TUNING_FILES = ("base64.py", "calendar.py", "csv.py", "gettext.py")

#: A stream of byte tokens: a 1-D integer tensor.
TokenStream = Annotated[torch.Tensor, TokenTensor(1, "(n,)")]
#: The sequence of file names of :func:`load_corpus`.
FileNames = Annotated[tuple, InstanceOf((list, tuple), "a sequence of file names (strings) relative to the stdlib "
                                                     "folder", error=ValueError)]


def _names_are_strings(files) -> None:
    """Each of ``files`` is a file name."""
    if not all(isinstance(f, str) for f in files):
        raise ValueError("files must be a sequence of file names (strings) relative to the stdlib folder")


def _stream_holds(data, length) -> None:
    """The stream ``data`` holds a window of ``length + 1`` tokens and a place to start it."""
    if data.numel() < length + 2:
        raise ValueError(f"length must be below the size of data ({data.numel()} tokens), got {length}")


def _one_window_fits(data, length) -> None:
    """The stream ``data`` holds at least one window of ``length + 1`` tokens."""
    if (data.numel() - 1) // length < 1:
        raise ValueError(f"length must be below the size of data ({data.numel()} tokens), got {length}")


def _bytes(tokens) -> None:
    """``tokens`` is a 1-D sequence of bytes."""
    if tokens.ndim != 1 or (tokens.size and tokens.max() > 255):
        raise ValueError("tokens must be a 1-D sequence of integers in 0..255")


@dataclass(frozen=True)
class Corpus:
    """The byte corpus: ``train``, ``tuning`` and ``validation`` are 1-D uint8 tensors.

    ``sha256`` is the hash of all corpus bytes (train files, then tuning files, then
    validation files, each file followed by a newline); ``files`` lists the files
    read, ``missing`` those absent from this Python's standard library.
    ``validation_starts`` holds the offset at which each validation file starts in
    ``validation`` (the clusters of :func:`companion.lab.evals.perplexity_by_length`).
    """

    train: torch.Tensor
    validation: torch.Tensor
    sha256: str
    python_version: str
    files: tuple
    missing: tuple
    tuning: torch.Tensor = torch.zeros(0, dtype=torch.uint8)
    validation_starts: tuple = (0,)

    def info(self) -> dict:
        """JSON-serialisable description: hash, Python version, sizes, files, missing files."""
        return {
            "sha256": self.sha256, "python_version": self.python_version,
            "train_bytes": int(self.train.numel()), "tuning_bytes": int(self.tuning.numel()),
            "validation_bytes": int(self.validation.numel()),
            "files": list(self.files), "missing": list(self.missing),
            "tuning_files": [f for f in self.files if f in TUNING_FILES],
            "validation_files": [f for f in self.files if f in VALIDATION_FILES],
            "validation_starts": list(self.validation_starts),
        }


def stdlib_dir() -> Path:
    """The folder of Python's standard library, ``sysconfig.get_paths()["stdlib"]``."""
    return Path(sysconfig.get_paths()["stdlib"])


@contract(_names_are_strings)
def load_corpus(files: FileNames = CORPUS_FILES, root: AnyValue = None) -> Corpus:
    """Read ``files`` (paths relative to ``root``, the stdlib folder by default) into a :class:`Corpus`.

    Files named in :data:`VALIDATION_FILES` go to ``validation``, those in
    :data:`TUNING_FILES` to ``tuning``, the rest to ``train``. Missing files are
    skipped and listed; ``ValueError`` if the training or validation part ends up empty.
    """
    root = stdlib_dir() if root is None else Path(root)
    found, missing, parts = [], [], {"train": [], "tuning": [], "validation": []}
    for name in files:
        path = root / name
        if not path.is_file():
            missing.append(name)
            continue
        found.append(name)
        part = "validation" if name in VALIDATION_FILES else "tuning" if name in TUNING_FILES else "train"
        parts[part].append(path.read_bytes() + b"\n")
    train, tuning, validation = (b"".join(parts[p]) for p in ("train", "tuning", "validation"))
    if not train or not validation:
        raise ValueError(f"files must include training and validation files present under {root}; missing: {missing}")
    starts = tuple(int(v) for v in np.cumsum([0] + [len(b) for b in parts["validation"][:-1]]))
    return Corpus(
        train=_bytes_tensor(train), validation=_bytes_tensor(validation), sha256=sha256(train + tuning + validation),
        python_version=platform.python_version(), files=tuple(found), missing=tuple(missing),
        tuning=_bytes_tensor(tuning), validation_starts=starts,
    )


@contract
def sha256(data: Annotated[bytes, InstanceOf((bytes, bytearray, torch.Tensor), "bytes or a uint8 tensor",
                                             error=ValueError)]) -> str:
    """Hex SHA-256 of ``bytes`` or of a uint8 tensor's bytes."""
    if isinstance(data, torch.Tensor):
        data = data.to(torch.uint8).cpu().numpy().tobytes()
    return hashlib.sha256(data).hexdigest()


@contract(_stream_holds)
def text_batch(data: TokenStream, batch_size: Count, length: Count,
               generator: Annotated[torch.Generator, InstanceOf(torch.Generator, "a torch.Generator",
                                                                error=ValueError)]):
    r"""Random windows of the byte stream ``data`` for next-token training.

    Draws ``batch_size`` start offsets uniformly with ``generator`` and returns
    ``(x, y)``, both ``(batch_size, length)`` int64: ``x`` the window and ``y`` the
    window moved on by one byte, so the target of ``x[:, t]`` is ``y[:, t]``.
    """
    start = torch.randint(0, data.numel() - length - 1, (batch_size,), generator=generator)
    window = data[start[:, None] + torch.arange(length + 1)].long()
    return window[:, :-1], window[:, 1:]


@contract(_one_window_fits)
def text_windows(data: TokenStream, length: Count, n_windows: Count | None = None) -> torch.Tensor:
    r"""Consecutive non-overlapping windows of ``length + 1`` bytes from the start of ``data``.

    The windows used for perplexity: a model reads ``w[:, :length]`` and is scored on
    ``w[:, 1:]``. ``n_windows`` (default: as many as fit) is capped at what fits.
    Returns ``(n_windows, length + 1)`` int64.
    """
    fit = (data.numel() - 1) // length
    n = fit if n_windows is None else min(n_windows, fit)
    start = torch.arange(n) * length
    return data[start[:, None] + torch.arange(length + 1)].long()


@contract
def encode(text: Label) -> torch.Tensor:
    """The UTF-8 bytes of ``text`` as an int64 tensor ``(n,)``."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


@contract(_bytes)
def decode(tokens: Annotated[np.ndarray, WholeNumbers(floats=False, what="integers in 0..255")]) -> str:
    """Byte tokens (any 1-D integer sequence in 0..255) back to text; invalid UTF-8 becomes U+FFFD."""
    t = torch.as_tensor(tokens)
    return bytes(t.tolist()).decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------
# Private helpers
# ---------------------------------------------------------------------------

def _bytes_tensor(b: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(b), dtype=torch.uint8) if b else torch.zeros(0, dtype=torch.uint8)
