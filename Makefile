# theorylab: `make checks` validates every registered claim; `make test` runs all tests, lint and the docs build.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch for the trained tier: by default the CPU build from PyTorch's CPU wheel index (no CUDA
# packages). `make TORCH_INDEX=` installs from PyPI instead (on Linux that is the CUDA build: several GB); a GPU
# user can also install the torch they need first, and the pin is then skipped. Only torch comes from that index
# (--no-deps); its dependencies come from the ordinary index with the project's own.
TORCH ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# extra pytest options, e.g. PYTEST_ARGS=-q (no measured-numbers line) or -v (every measured number listed)
PYTEST_ARGS ?=

.PHONY: venv checks exact test lint docs docs-render report report-render mutation quoted clean

$(BIN)/theorylab: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || \
		$(BIN)/python -m pip install -q --no-deps $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[dev,distributed]"
	touch $@

venv: $(BIN)/theorylab

checks: venv
	$(BIN)/pytest checks/ -n auto --durations=10 --claims-json artifacts/claims.json --artifacts-dir artifacts $(PYTEST_ARGS)

exact: venv
	$(BIN)/pytest checks/ --tier exact $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

docs: venv
	$(BIN)/mkdocs build --strict --site-dir site

# the built site in headless chromium (apt-get install -y chromium): screenshots, fails on visible raw TeX
docs-render: docs
	$(BIN)/python scripts/check_docs_render.py site artifacts/screenshots

test: venv lint
	$(BIN)/pytest checks/ tests/ -n auto --dist loadgroup --durations=15 --claims-json artifacts/claims.json --artifacts-dir artifacts $(PYTEST_ARGS)
	$(BIN)/python scripts/quoted_numbers.py check artifacts/claims.json

# numbers quoted in the docs ({{ run(...) }}) from a run of the checks: docs/measured.json. Seeds do not depend on
# the command; the same command as `make test` keeps the trained checks' environment (threads per xdist worker)
quoted: venv
	$(BIN)/pytest checks/ tests/ -n auto --dist loadgroup -q --claims-json artifacts/claims.json --artifacts-dir artifacts $(PYTEST_ARGS)
	$(BIN)/python scripts/quoted_numbers.py update artifacts/claims.json

# Mutation testing of one claim family (exact and property tiers): make mutation FAMILY=hmm [SAMPLE=120 SEED=0]
mutation: venv
	$(BIN)/python -m pip install -q -e ".[mutation]"
	$(BIN)/python tools/mutation.py $(FAMILY) $(if $(SAMPLE),--sample $(SAMPLE) --seed $(or $(SEED),0))

report: artifacts/claims.json
	$(BIN)/theorylab report artifacts/claims.json --out artifacts/report.html

# the HTML report in headless chromium: a screenshot, fails on visible raw TeX
report-render: report
	$(BIN)/python scripts/check_docs_render.py artifacts/report.html artifacts/screenshots

clean:
	rm -rf $(VENV) site artifacts .pytest_cache .hypothesis .mutation
