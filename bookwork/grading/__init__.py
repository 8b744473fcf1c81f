"""Grading submissions that may try to cheat: the submission runs in a sandbox, the checks elsewhere.

- :mod:`bookwork.grading.intake` -- what a submission may be (one notebook, or its export zip)
- :mod:`bookwork.grading.review` -- the report of code that deserves the instructor's look
- :mod:`bookwork.grading.sandbox` -- the sandbox (bubblewrap) a submission runs in
- :mod:`bookwork.grading.runner` -- runs the notebook inside the sandbox, answers the judge
- :mod:`bookwork.grading.judge` -- runs the checks, outside the sandbox, on values sent as data
- :mod:`bookwork.grading.wire` -- the data that crosses between them (never a pickle)
- :mod:`bookwork.grading.grade` -- one submission from start to end
- :mod:`bookwork.grading.classroom` -- a class's submissions: the grades on the terminal and as CSV
- :mod:`bookwork.grading.versions` -- the book's own notebooks: many versions of a chapter in one kernel

The command line grades a class's submissions with an ``autograder.zip`` that
:mod:`bookwork.assignments` generated::

    python -m bookwork.grading AUTOGRADER.zip SUBMISSION ... [--csv FILE] [--jobs N] [--timeout S]
                               [--max-size MIB] [--no-sandbox]

The instructors' page of the book describes what the grading prevents and what it does not.
"""
