"""What a submission may be: one notebook, or the zip of ``grader.export`` holding it.

A submission is refused, with a sentence that says why, when it is not a notebook
(``.ipynb``) or a zip holding exactly one notebook, when it is larger than the caps
(the file, and the notebook inside a zip, measured as it is read, so a zip bomb is
stopped at the cap whatever its header claims), when its JSON is not a notebook, or
when it belongs to another assignment. A damaged file is an ordinary case (an upload
cut short, a zip whose data or member names are corrupt): whatever error reading it
raises, it is refused with that error named, never a crash of the class's grading.
Only the code cells' sources go on to the sandbox: never the file itself, nor anything
else from the zip.
"""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: The largest submission, and the largest notebook read from a zip.
MAX_BYTES = 32 * 2**20
#: What otter's ``grader.export`` writes beside the notebook (never opened here).
EXPORT_EXTRAS = {".OTTER_LOG", "__zip_filename__"}


class Refused(ValueError):
    """A file that is not a submission this autograder grades."""


@dataclass
class Submission:
    """A notebook as it was submitted: its code cells and where it came from."""

    cells: list[str]                 # code cells' sources, in order
    tags: list[list[str]]            # each code cell's tags
    assignment: str | None
    notes: list[str]                 # what the review should show (extra files in a zip)


def _from_zip(path: Path, max_bytes: int) -> tuple[bytes, list[str]]:
    try:
        archive = zipfile.ZipFile(path)
    except Exception as error:  # BadZipFile, OSError, and UnicodeDecodeError for a name flagged UTF-8 that is not
        raise Refused(f"not a readable zip ({type(error).__name__}: {error})") from None
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        notebooks = [info for info in members if info.filename.endswith(".ipynb")]
        others = [info.filename for info in members
                  if not info.filename.endswith(".ipynb") and Path(info.filename).name not in EXPORT_EXTRAS]
        if len(notebooks) != 1:
            raise Refused(f"the zip holds {len(notebooks)} notebooks; a submission is one notebook")
        if others:
            shown = ", ".join(repr(name[:60]) for name in others[:5])
            raise Refused(f"the zip holds files besides the notebook ({shown}{', ...' if len(others) > 5 else ''}); "
                          "a submission is the notebook alone, or the zip that grader.export writes")
        try:
            with archive.open(notebooks[0]) as member:
                data = member.read(max_bytes + 1)
        except Exception as error:  # corrupt data: zlib.error, lzma.LZMAError, BadZipFile (CRC), EOFError, ...
            raise Refused(f"the notebook in the zip cannot be read ({type(error).__name__}: {error})") from None
        if len(data) > max_bytes:
            raise Refused(f"the notebook in the zip is larger than {max_bytes // 2**20} MiB")
        return data, []


def read_submission(path: Path, assignment: str, max_bytes: int = MAX_BYTES) -> Submission:
    """The code cells of a submission for ``assignment``; Refused if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise Refused("no such file")
    size = path.stat().st_size
    if size > max_bytes:
        raise Refused(f"the file is {size / 2**20:.0f} MiB, larger than the cap of {max_bytes // 2**20} MiB")
    try:
        is_zip = zipfile.is_zipfile(path)
    except OSError as error:
        raise Refused(f"cannot be read ({error})") from None
    if is_zip:
        data, notes = _from_zip(path, max_bytes)
    elif path.suffix == ".ipynb":
        data, notes = path.read_bytes(), []
    else:
        raise Refused(f"not a notebook: a submission is a .ipynb file or the zip that grader.export writes, "
                      f"not a {path.suffix or 'file without extension'}")
    try:
        notebook = json.load(io.BytesIO(data))
    except (ValueError, RecursionError, MemoryError) as error:
        raise Refused(f"not a notebook: the file is not JSON ({str(error)[:80]})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise Refused("not a notebook: no list of cells")
    metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    otter = metadata.get("otter") if isinstance(metadata.get("otter"), dict) else {}
    name = otter.get("assignment_name")
    if name != assignment:
        raise Refused(f"this notebook is for assignment {name!r}, not {assignment!r}"
                      if name else f"this notebook names no assignment (this is {assignment!r})")
    code, tags = [], []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise Refused("not a notebook: a code cell whose source is not text")
        code.append(source)
        cell_tags = cell.get("metadata", {}).get("tags", []) if isinstance(cell.get("metadata"), dict) else []
        tags.append([str(t) for t in cell_tags] if isinstance(cell_tags, list) else [])
    return Submission(code, tags, name, notes)
