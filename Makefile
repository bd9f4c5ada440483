# The two commands of the README:
#   make book   build the site into _build/html (the main job)
#   make test   run every test: library, notebooks (nbval, strict) and the built site
# Both create .venv with the exact versions of requirements.txt when it is missing or stale.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The environment of the committed outputs: PyTorch's kernels on their AVX2 paths (the same
# digits on every CPU) and the figures' phone renderings for the site.
include tests/committed_outputs.mk
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000

.PHONY: book test execute bench serve lab lint format clean

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@# Build matplotlib's font cache now: on a new machine the first import announces it on
	@# stderr, which would otherwise land in a notebook's outputs.
	$(BIN)/python -c "import matplotlib.pyplot"
	@touch $(STAMP)

book: $(STAMP)
	$(BIN)/python -m tools.instructors_page
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built. Open $(CURDIR)/_build/html/index.html"
	@echo "or run 'make serve' and visit http://localhost:$(PORT)/"

# Two more environments run every notebook (tests/test_isolated_run.py, test_colab_run.py):
# the runtime of requirements.txt alone, and Google Colab's versions (tests/envs/*.txt).
# The tests install the course's freshly built wheel into them; nothing else of the repository.
NOTEBOOK_ENVS := .venv-isolated/.installed .venv-colab/.installed

.venv-%/.installed: tests/envs/%.txt
	rm -rf .venv-$*
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	.venv-$*/bin/python -m pip install --quiet -r $<
	.venv-$*/bin/python -c "import matplotlib.pyplot"
	@touch $@

# The accessibility audit of the site (axe-core in Chromium, driven by playwright-core):
# installed from the npm registry exactly as package-lock.json says.
A11Y_STAMP := tests/a11y/node_modules/.installed

$(A11Y_STAMP): tests/a11y/package.json tests/a11y/package-lock.json
	@if command -v npm >/dev/null; then \
		cd tests/a11y && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error \
		&& touch node_modules/.installed; \
	else echo "npm not found: the accessibility audit will be skipped (fails with CI set)"; fi

test: $(STAMP) $(NOTEBOOK_ENVS) $(A11Y_STAMP)
	$(BIN)/python -m pytest

# Re-run every chapter top to bottom in a fresh kernel and save its outputs (commit them);
# `make execute NOTEBOOKS=notebooks/06_masks.ipynb` re-runs one.
NOTEBOOKS ?= notebooks/*.ipynb
execute: $(STAMP)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.store_widget_state=False \
		--ExecutePreprocessor.record_timing=False \
		$(NOTEBOOKS)

# Time every chapter, a clean book build and NumPy vs PyTorch attention; writes
# benchmarks/results.md (commit it). Not a test: nothing in `make test` depends on timings.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.bench

# How long each chapter is for a learner: core-path words, folded words, figures, computed
# diagrams, exercises and (when the book is built) laptop screens. tools/stats.py says how.
.PHONY: stats
stats: $(STAMP)
	$(BIN)/python -m tools.stats

# The instructors' page (book/instructors.md) is generated from the notebooks: run this after
# changing a chapter's opening cell or its exercises (`make book` runs it too), and commit it.
.PHONY: instructors student answers retarget
instructors: $(STAMP)
	$(BIN)/python -m tools.instructors_page

# Student copies of the chapters, without solutions, run top to bottom: dist/student/.
student: $(STAMP)
	rm -rf dist/student
	$(BIN)/python -m tools.student_copies --output dist/student

# The instructors' answer key, dist/answers/ (one Markdown file per chapter and an index): each
# exercise's prompt, its solution with the outputs the notebook was committed with, and the
# model answers and marking notes of the prose questions (tools/prose_answers.yml). For
# instructors only: never in the student copies or on the site.
answers: $(STAMP)
	rm -rf dist/answers
	$(BIN)/python -m tools.answers --output dist/answers

# Grade a class's submitted notebooks with the course's checkers, each in a fresh process with
# time and memory limits (tools/grade.py): make grade SUBMISSIONS=dir [HIDDEN=cases.py] [OUT=dir]
# writes grades/grades.csv (one row per exercise) and grades/summary.csv (one per notebook).
ifeq ($(filter grade,$(MAKECMDGOALS)),grade)
ifndef SUBMISSIONS
$(error make grade needs the folder of submitted notebooks: make grade SUBMISSIONS=<dir>)
endif
endif
.PHONY: grade
grade: $(STAMP)
	$(BIN)/python -m tools.grade "$(SUBMISSIONS)" --out "$(or $(OUT),grades)" \
		$(if $(HIDDEN),--hidden "$(HIDDEN)")

# Point a fork at itself, and pin a term to a tag or branch (tools/retarget.py):
#   make retarget REPO=https://github.com/<owner>/<name> [TAG=<tag> | BRANCH=<branch>]
ifeq ($(filter retarget,$(MAKECMDGOALS)),retarget)
ifndef REPO
$(error make retarget needs the URL of your fork: make retarget REPO=https://github.com/<owner>/<name>)
endif
ifdef TAG
ifdef BRANCH
$(error make retarget pins one ref: TAG=<tag> or BRANCH=<branch>, not both)
endif
endif
endif
retarget: $(STAMP)
	$(BIN)/python -m tools.retarget "$(REPO)" $(if $(TAG),--tag "$(TAG)") \
		$(if $(BRANCH),--branch "$(BRANCH)")

serve:
	@test -f _build/html/index.html || { echo "Nothing to serve: run 'make book' first."; exit 1; }
	@echo "Serving _build/html at http://localhost:$(PORT)/ (Ctrl-C to stop)"
	$(PYTHON) -m http.server $(PORT) --bind 127.0.0.1 --directory _build/html

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf _build dist
