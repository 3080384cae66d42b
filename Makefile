# The two commands of the README: `make run` and `make test`. Everything they need installs here.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
VENDOR_FILES := node_modules/sigma/dist/sigma.min.js node_modules/graphology/dist/graphology.umd.min.js \
                node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css \
                node_modules/marked/lib/marked.umd.js node_modules/dompurify/dist/purify.min.js \
                node_modules/@dagrejs/dagre/dist/dagre.min.js
# A failing or hung test run must end: whole-suite wall clock limit, in seconds.
TEST_TIMEOUT ?= 2400

.PHONY: install run test test-slow test-all test-fast test-python test-js lint lint-imports bench clean

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-client.txt pyproject.toml clients/python/pyproject.toml
	command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found: install Python 3.11 or run 'make PYTHON=python3 ...'"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	# The client distribution first (on no index; `swarmscope.client` re-exports it), then the app.
	$(PY) -m pip install --quiet --no-deps -e clients/python
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

static/vendor/.copied: node_modules/.installed
	mkdir -p static/vendor
	cp $(VENDOR_FILES) static/vendor/
	touch $@

install: $(VENV)/.installed static/vendor/.copied

run: install
	$(PY) manage.py up $(ARGS)

# Parallel pytest workers for the tests that start no processes of their own (pytest-xdist).
WORKERS ?= auto

# `make test`: the developer's loop (linters, JS tests, and in parallel the Python tests that start no
# processes). `make test-slow`: the tests that start Celery workers, Daphne, RabbitMQ, `manage.py up` or
# Chromium, one at a time. CI (.ci/run) runs both; `make test-all` does too.
test: install lint test-js test-python

test-all: test test-slow

lint: $(VENV)/.installed node_modules/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	npm run lint --silent
	$(VENV)/bin/lint-imports

lint-imports: $(VENV)/.installed
	$(VENV)/bin/lint-imports

test-js: node_modules/.installed
	timeout 300 npm test --silent

test-python: install
	timeout --kill-after=30 $(TEST_TIMEOUT) $(PY) -m pytest -q -ra -n $(WORKERS) -m "not processes and not browser"

test-slow: install
	timeout --kill-after=30 $(TEST_TIMEOUT) $(PY) -m pytest -q -ra -m "processes or browser"

test-fast: install
	$(PY) -m pytest -q -n $(WORKERS) -m "not processes and not browser"

bench: install
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) node_modules static/vendor
