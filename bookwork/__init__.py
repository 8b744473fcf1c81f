"""The book's own tools: the build's Sphinx extensions, the assignments and their grader, the reader's edition.

``companion`` is the book's math; ``bookwork`` is what makes the book out of the
repository's lessons. It is installed with companion (``pip install -e .``, which
``make`` runs), so that its parts import each other, and the book build and the
grader's sandbox import them, by name; its commands run with ``python -m``:

- :mod:`bookwork.sphinx` -- the Sphinx extensions of the book build (``_config.yml``)
- :mod:`bookwork.assignments` -- the lessons as graded assignments:
  ``python -m bookwork.assignments generate``
- :mod:`bookwork.grading` -- grading the submissions, each in a sandbox:
  ``python -m bookwork.grading AUTOGRADER.zip SUBMISSION ...``
- :mod:`bookwork.edition` -- the reader's edition in ``notebooks/``: ``python -m bookwork.edition``
- :mod:`bookwork.myst_markdown` -- the book's MyST markup as Markdown every notebook front end shows
- :mod:`bookwork.clean_notebooks` -- notebooks committed without outputs
- :mod:`bookwork.model_defaults` -- the table of the model types' RoPE defaults in ``companion/data``
- :mod:`bookwork.build_chapter` -- one chapter built before it is in the table of contents
- :mod:`bookwork.preview_figure` -- one interactive figure in a browser, without a book build
"""
from pathlib import Path

#: The checkout of the book the tools work on: bookwork is installed from it (editable).
ROOT = Path(__file__).resolve().parent.parent
