# The two commands README.md opens with: `make demo` and `make test`.
# `make demo` installs the tool alone (its five runtime packages); `make test` adds the test
# extras (pytest, hypothesis, playwright, dask, ...).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TOOL   := $(VENV)/.installed-tool
STAMP  := $(VENV)/.installed

.PHONY: demo test venv bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(TOOL): $(PY) pyproject.toml
	$(PY) -m pip install -q -e .
	touch $(TOOL)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e '.[test]'
	touch $(TOOL) $(STAMP)

venv: $(STAMP)

demo: $(TOOL)
	$(VENV)/bin/postmortem analyze fixtures/demo/bundle --html reports/demo.html
	@echo
	@echo "postmortem is installed in $(VENV). To run it as 'postmortem':  . $(VENV)/bin/activate"
	@echo "(or without activating: $(VENV)/bin/postmortem ...; for a user-wide install: pipx install .)"

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) bench/parse_bench.py --mb 20
	$(PY) bench/core_bench.py
	$(PY) bench/report_bench.py
	$(PY) bench/triage_bench.py

clean:
	rm -rf $(VENV) build dist reports/*.html
