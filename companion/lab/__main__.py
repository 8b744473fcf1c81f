"""``python -m companion.lab``: recompute the lab's stored results (see :mod:`companion.lab.experiments`)."""
from .experiments import main

raise SystemExit(main())
