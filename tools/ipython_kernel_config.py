# Settings for the IPython kernels that run the lessons (book build, tests, grading).
# `make` copies this file into the virtual environment, .venv/etc/ipython/, where every
# kernel started from .venv reads it.
#
# The kernels talk to the process that started them over TCP on 127.0.0.1, and each one
# logs at start that this is not encrypted: once per notebook, a dozen times per book
# build, though nothing leaves the machine. The kernel logs errors only.
c.IPKernelApp.log_level = "ERROR"  # noqa: F821 (c is the configuration IPython passes in)
