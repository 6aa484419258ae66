# llamafleet.llamacpp — developer entry points. `make test` is what CI runs.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export LLAMAFLEET_CACHE ?= $(HOME)/.cache/llamafleet

.PHONY: venv deploy-local demo test lint changelog unit sanity integration engine model bench clean \
	collections fleet-up fleet-down molecule docker-engine engine-image

$(STAMP): requirements-dev.txt
	test -x $(PY) || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

## The main job on an embedded default: deploy llama-server to a local fleet of two systemd hosts
## (systemd-nspawn) with the real CPU engine and Gemma-3-270M, print the summary and a completion per host.
deploy-local: $(STAMP) collections
	VENV=$(CURDIR)/$(VENV) scripts/local_fleet.sh

## Plan the example preset for the example two-GPU host (pure planning, nothing deployed).
demo: $(STAMP)
	$(PY) scripts/plan_demo.py

## Real parts, cached under $(LLAMAFLEET_CACHE) (a cold machine builds them).
engine:
	scripts/build_engine.sh current

model:
	scripts/fetch_model.sh

## A local fleet of real systemd hosts (systemd-nspawn, ssh over veth); see scripts/fleet.sh.
FLEET_SIZE ?= 2
fleet-up:
	scripts/fleet.sh up $(FLEET_SIZE)

fleet-down:
	scripts/fleet.sh down

## A private Docker engine (own dockerd, socket, data root; Compose v2 as its CLI plugin)
## for the container deployments; `eval "$$(scripts/docker_engine.sh env)"` points docker at it.
docker-engine: $(STAMP)
	@VENV=$(CURDIR)/$(VENV) scripts/docker_engine.sh up

## The CPU engine as a Docker image in that engine (docker import, no registry); prints its tag.
engine-image: docker-engine
	@VENV=$(CURDIR)/$(VENV) scripts/engine_image.sh

## The checkout as collection llamafleet.llamacpp (symlink tree, as conftest.py makes it),
## plus community.docker from PyPI's ansible wheel (Galaxy is not reachable).
collections: $(STAMP)
	@$(PY) -c 'import conftest'
	@VENV=$(CURDIR)/$(VENV) scripts/docker_collections.sh $(CURDIR)/.collections >/dev/null

## Molecule on the local fleet (create/destroy: molecule/shared); MOLECULE_ARGS="-s default" for one.
MOLECULE_ARGS ?= --all
molecule: $(STAMP) collections
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/molecule test $(MOLECULE_ARGS)

lint: $(STAMP) collections
	$(VENV)/bin/ruff check .
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ANSIBLE_COLLECTIONS_PATH="$(CURDIR)/.collections" \
	  $(VENV)/bin/ansible-lint --profile production --offline
	$(VENV)/bin/antsibull-changelog lint
	@# The execution-environment metadata, as ansible-builder reads it.
	$(VENV)/bin/ansible-builder introspect --sanitize .collections | grep -q 'from collection llamafleet.llamacpp'

## CHANGELOG.md from changelogs/fragments (antsibull-changelog), for the version in galaxy.yml.
changelog: $(STAMP) collections
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" ANSIBLE_COLLECTIONS_PATH="$(CURDIR)/.collections" \
	  $(VENV)/bin/antsibull-changelog release --update-existing --refresh-fragments without-archives \
	  --version "$$($(PY) -c 'import yaml; print(yaml.safe_load(open("galaxy.yml"))["version"])')"

unit: $(STAMP)
	$(VENV)/bin/pytest tests/unit \
	  --cov --cov-report=term-missing --cov-fail-under=95

sanity: $(STAMP)
	VENV=$(CURDIR)/$(VENV) scripts/ansible_test_sanity.sh

integration: $(STAMP)
	LLAMAFLEET_ENGINE_DIR="$$(scripts/build_engine.sh current)" \
	LLAMAFLEET_OLD_ENGINE_DIR="$$(scripts/build_engine.sh old)" \
	LLAMAFLEET_MODEL="$$(scripts/fetch_model.sh)" \
	LLAMAFLEET_DOCKER_JSON="$$(VENV=$(CURDIR)/$(VENV) scripts/compose_artifacts.sh $(CURDIR)/.cache/fleet-share)" \
	  $(VENV)/bin/pytest tests/integration -p no:cacheprovider

bench: $(STAMP)
	$(PY) bench/gguf_read.py "$$(scripts/fetch_model.sh)"
	$(PY) bench/gguf_hostile.py
	$(PY) bench/fuzz_plan.py
	$(PY) bench/fuzz_engine.py "$$(scripts/build_engine.sh current)" "$$(scripts/fetch_model.sh)"
	$(PY) bench/module_plan.py "$$(scripts/build_engine.sh current)" "$$(scripts/fetch_model.sh)" \
	  --docker-json "$$(VENV=$(CURDIR)/$(VENV) scripts/compose_artifacts.sh $(CURDIR)/.cache/fleet-share)"

## Every test and linter.
test: engine model lint unit sanity integration molecule

clean:
	rm -rf $(VENV) .collections .pytest_cache .ruff_cache .cache
