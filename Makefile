# Positions in Transformers: build the executed book and run the tests.
#
#   make book    set everything up (first time only) and build the executed book
#   make test    set everything up (first time only) and run every test
#
# For instructors (book/instructors.md):
#   make assignments             student notebooks and autograders in _build/assignments
#   make book-without-solutions  the book with exercise solutions left out
#
# Setup is automatic: a virtual environment in .venv (Python 3.11+, torch pinned to 2.13.0,
# its CPU build), the pinned front-end files in node_modules (npm ci), and, for the browser
# tests, Chromium from the system's package manager (or CHROMIUM=/path/to/chromium); for
# the grading tests, bubblewrap (the grader's sandbox) from the system's package manager.
#
# make test runs the tests in parallel, one pytest-xdist worker per core: one worker builds
# the book while the others run the tests that do not need it (tests/conftest.py orders
# them so). Options for pytest go in PYTEST_ARGS, e.g.
#   make test PYTEST_ARGS="--durations=25"      also list the 25 slowest tests
#   make test PYTEST_ARGS="-n 0 tests/test_rope.py"   one file, no workers

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.installed
NPM_STAMP := node_modules/.installed
KERNEL_CONFIG := $(VENV)/etc/ipython/ipython_kernel_config.py
# --no-compile: pip byte-compiles the environment's 15,000 modules one at a time; the setup
# compiles them once at the end on every core instead (the grading sandbox mounts the
# environment read-only, so its modules must be compiled beforehand).
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile
# PyTorch's index of CPU-only wheels, as in environment.yml: from the default index the
# pinned torch is the CUDA build, several gigabytes.
TORCH_INDEX := https://download.pytorch.org/whl/cpu
PYTEST_ARGS ?=

.PHONY: book test serve lab bench clean-notebooks browser sandbox clean assignments book-without-solutions

book: $(PY_STAMP) $(NPM_STAMP) $(KERNEL_CONFIG)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo ""
	@echo "The book is in _build/html. Open _build/html/index.html, or run 'make serve'"
	@echo "and visit http://127.0.0.1:8000/"

test: $(PY_STAMP) $(NPM_STAMP) $(KERNEL_CONFIG) browser tex sandbox
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

# Every lesson, or only those named: make assignments LESSONS="lessons/03_rope.ipynb"
assignments: $(PY_STAMP)
	$(BIN)/python -m bookwork.assignments generate $(LESSONS)

# Same pages, no solutions; reuses the executed outputs of 'make book' when they exist.
WITHOUT := _build/without-solutions
book-without-solutions: $(PY_STAMP) $(NPM_STAMP) $(KERNEL_CONFIG)
	@mkdir -p $(WITHOUT)/_build
	@if [ -d _build/.jupyter_cache ] && [ ! -d $(WITHOUT)/_build/.jupyter_cache ]; then cp -r _build/.jupyter_cache $(WITHOUT)/_build/; fi
	BOOK_WITHOUT_SOLUTIONS=1 $(BIN)/jupyter-book build . -W -n --keep-going --path-output $(WITHOUT)
	@echo ""
	@echo "The book without solutions is in $(WITHOUT)/_build/html."

serve:
	$(BIN)/python -m http.server --directory _build/html --bind 127.0.0.1 8000

lab: $(PY_STAMP) $(KERNEL_CONFIG)
	@$(BIN)/python -c "import jupyterlab" 2>/dev/null || $(BIN)/python -m pip install --quiet --disable-pip-version-check jupyterlab
	$(BIN)/jupyter lab lessons/

clean-notebooks: $(PY_STAMP)
	$(BIN)/python -m bookwork.clean_notebooks

$(PY_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11 or newer is needed, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned, its CPU build: pip looks in PyTorch's CPU index as well as the
	# configured one, and 2.13.0+cpu is the newer version by PEP 440; when the CPU index
	# cannot be reached (a 5 s timeout, one retry) pip says so and takes 2.13.0 from the
	# configured index.
	$(PIP) --timeout 5 --retries 1 --extra-index-url $(TORCH_INDEX) "torch==2.13.0"
	$(PIP) -e '.[test]'
	# (one module of torch's own tests is written for Python 3.12; pip skips it too)
	$(BIN)/python -m compileall -q -j 0 -x 'torch/testing/_internal/py312_intrinsics' $(VENV)/lib > /dev/null
	touch $@

# Quiet kernels (see the file); every kernel started from .venv reads it.
$(KERNEL_CONFIG): tools/ipython_kernel_config.py | $(PY_STAMP)
	mkdir -p $(dir $@)
	cp $< $@

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# The browser tests drive the system's Chromium (or the one CHROMIUM names); install it
# when it is missing.
browser:
	@[ -n "$$CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || tools/install_chromium.sh

# The assignment grader runs every submission in a bubblewrap sandbox (bookwork/grading), and
# the tests grade submissions written to cheat: install bubblewrap when it is missing.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || tools/install_bubblewrap.sh

clean:
	rm -rf _build

# The reader's edition: every chapter as a plain notebook in notebooks/, which the Colab
# and Binder buttons open. Run it after changing a lesson, and commit notebooks/.
edition: $(PY_STAMP)
	$(BIN)/python -m bookwork.edition

# The whole book as one PDF, with XeLaTeX; it reuses the executed notebooks of 'make book'.
# Then 'make book' adds the PDF to the site (download menu). TeX comes from the system's
# packages, installed when it is missing.
PDF := _build/latex/positions-in-transformers.pdf
pdf: $(PY_STAMP) $(NPM_STAMP) tex
	$(BIN)/jupyter-book build . --builder pdflatex -W -n --keep-going
	@echo ""
	@echo "The book is in $(PDF): $$(pdfinfo $(PDF) | sed -n 's/^Pages: *//p') pages, $$(du -h $(PDF) | cut -f1)."

tex:
	@command -v xelatex >/dev/null 2>&1 && command -v latexmk >/dev/null 2>&1 && command -v rsvg-convert >/dev/null 2>&1 \
	  && command -v pdfinfo >/dev/null 2>&1 && fc-list | grep -q FreeSerif || tools/install_tex.sh

.PHONY: edition pdf tex
