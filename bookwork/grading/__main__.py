"""``python -m bookwork.grading``: grade a class's submissions (:func:`bookwork.grading.classroom.main`)."""
import sys

from .classroom import main

sys.exit(main())
