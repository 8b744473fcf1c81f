"""``python -m companion.lab``: recompute the lab's results, or run new seeds (see :mod:`companion.lab.runner`)."""
from .runner import main

raise SystemExit(main())
