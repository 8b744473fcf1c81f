"""The tests of companion and of the book (``make test``); shared helpers in :mod:`tests.support`."""
