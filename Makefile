# The two commands of the README:
#   make book   build the site into _build/html (the main job)
#   make test   run every test: library, notebooks (nbval, strict) and the built site
# Both create .venv with the exact versions of requirements.txt when it is missing or stale.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000

.PHONY: book test execute serve lab lint format clean

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@# Build matplotlib's font cache now: on a new machine the first import announces it on
	@# stderr, which would otherwise land in a notebook's outputs.
	$(BIN)/python -c "import matplotlib.pyplot"
	@touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo
	@echo "The book is built. Open $(CURDIR)/_build/html/index.html"
	@echo "or run 'make serve' and visit http://localhost:$(PORT)/"

test: $(STAMP)
	$(BIN)/python -m pytest

# Re-run every chapter top to bottom in a fresh kernel and save its outputs (commit them).
execute: $(STAMP)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=120 --ExecutePreprocessor.store_widget_state=False \
		--ExecutePreprocessor.record_timing=False \
		notebooks/*.ipynb

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
