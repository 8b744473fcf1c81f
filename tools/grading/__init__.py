"""Grading submissions that may try to cheat: the submission runs in a sandbox, the checks elsewhere.

- :mod:`grading.intake` -- what a submission may be (one notebook, or its export zip)
- :mod:`grading.review` -- the report of code that deserves the instructor's look
- :mod:`grading.sandbox` -- the sandbox (bubblewrap) a submission runs in
- :mod:`grading.runner` -- runs the notebook inside the sandbox, answers the judge
- :mod:`grading.judge` -- runs the checks, outside the sandbox, on values sent as data
- :mod:`grading.wire` -- the data that crosses between them (never a pickle)
- :mod:`grading.grade` -- one submission from start to end

``tools/assignments.py grade`` grades a class's submissions with it; the instructors'
page of the book describes what it prevents and what it does not.
"""
