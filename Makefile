# The two commands README.md opens with: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/postmortem analyze fixtures/demo/bundle --html reports/demo.html

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) bench/parse_bench.py --mb 20
	$(PY) bench/core_bench.py
	$(PY) bench/report_bench.py
	$(PY) bench/triage_bench.py

clean:
	rm -rf $(VENV) build dist reports/*.html
