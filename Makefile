# llamafleet.llamacpp — developer entry points. `make test` is what CI runs.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export LLAMAFLEET_CACHE ?= $(HOME)/.cache/llamafleet

.PHONY: venv deploy-local demo test lint changelog unit sanity integration engine model bench bench-smoke clean \
	collections fleet-up fleet-down molecule docker-engine engine-image matrix-oldest matrix-newest unit-matrix \
	molecule-dev molecule-side artifacts downloads engine-old tiny-model rootfs-bookworm rootfs-trixie gpu-prepare gpu-dry-run \
	venvs venv-oldest venv-newest compose-share checks-oldest checks-newest molecule-oldest molecule-newest

# The dev venv (ansible-core 2.19 on Python 3.11); the matrix targets below make others with their own
# REQUIREMENTS and VENV_PYTHON.
REQUIREMENTS ?= requirements-dev.txt
VENV_PYTHON ?= python3.11
$(STAMP): $(REQUIREMENTS)
	test -x $(PY) || $(VENV_PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r $(REQUIREMENTS)
	touch $(STAMP)

venv: $(STAMP)

## The main job on an embedded default: deploy llama-server to a local fleet of two systemd hosts
## (systemd-nspawn) with the real CPU engine and Gemma-3-270M, print the summary and a completion per host.
## Staged like `make test` (scripts/steps.sh): a line per step, logs named on failure; VERBOSE=1 streams all.
deploy-local: $(STAMP)
	@VENV=$(CURDIR)/$(VENV) scripts/local_fleet.sh

## Plan the example preset for the example two-GPU host (pure planning, nothing deployed).
demo: $(STAMP)
	$(PY) scripts/plan_demo.py

## Real parts, cached under $(LLAMAFLEET_CACHE) (a cold machine builds them).
engine:
	scripts/build_engine.sh current

model:
	scripts/fetch_model.sh

## Everything the tests build or download, at once: the two engine builds share the cores while the downloads
## (model, sdists, wheels, the venvs) and the Debian rootfs builds wait on the network. Each piece is cached and
## locked. What the two lanes of `make test` would both make comes first, here: the venvs, the collection's symlink
## tree, the Docker engine with the engine's image.
artifacts:
	$(MAKE) --no-print-directory -j5 engine engine-old downloads rootfs-bookworm rootfs-trixie venvs
	$(MAKE) --no-print-directory collections compose-share

## The venvs of the ansible-core range: the dev one (2.19), the oldest (2.16) and the newest (2.21).
venvs: venv venv-oldest venv-newest

venv-oldest:
	$(MAKE) --no-print-directory venv VENV=.venv-2.16 REQUIREMENTS=requirements-2.16.txt

venv-newest:
	$(MAKE) --no-print-directory venv VENV=.venv-2.21 REQUIREMENTS=requirements-2.21.txt \
	  VENV_PYTHON="$$(scripts/find_python.sh 3.12)"

## The molecule share with the Docker engine running and the CPU engine imported as an image.
compose-share: $(STAMP)
	LLAMAFLEET_FLEET_MODEL=tiny VENV=$(CURDIR)/$(VENV) scripts/compose_artifacts.sh $(CURDIR)/.cache/fleet-share \
	  >/dev/null

# One after the other: they share the tools venv (scripts/fetch_model.sh), which the first one creates.
downloads:
	scripts/fetch_model.sh
	scripts/tiny_model.sh
	scripts/wheels.sh

engine-old:
	scripts/build_engine.sh old

tiny-model:
	scripts/tiny_model.sh

rootfs-bookworm:
	LLAMAFLEET_SUITE=bookworm scripts/fleet.sh rootfs

rootfs-trixie:
	LLAMAFLEET_SUITE=trixie scripts/fleet.sh rootfs

## The GPU check (tests/gpu/README.md): gather what a GPU machine without network needs, or run it on CPU here.
gpu-prepare:
	tests/gpu/run.sh --prepare

gpu-dry-run:
	tests/gpu/run.sh --dry-run

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

## The checkout as collection llamafleet.llamacpp (symlink tree, as conftest.py makes it).
collections: $(STAMP)
	@$(PY) -c 'import conftest'

## Molecule on the local fleet (create/destroy: molecule/shared), one scenario at a time with its time;
## SCENARIOS="default rollback" for some, MOLECULE_EXCLUDE="default" to leave some out.
SCENARIOS ?=
MOLECULE_EXCLUDE ?=
molecule: $(STAMP) collections
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" MOLECULE=$(VENV)/bin/molecule scripts/molecule_scenarios.sh \
	  $(foreach name,$(MOLECULE_EXCLUDE),--exclude $(name)) $(SCENARIOS)

## The supported ansible-core range, each end in its own venv: the unit tests, ansible-test sanity and molecule's
## default scenario. Oldest: 2.16 (Automation Platform 2.5) on Python 3.11, bookworm hosts. Newest: 2.21 on
## Python 3.12 (it needs 3.12 on the controller), on Debian trixie hosts (Python 3.13 targets).
## The unit tests there leave out tests/unit/plugins/module_utils: that code imports nothing of ansible-core
## (test_layout_purity checks it), so its tests say the same under every release; the dev venv runs them.
matrix-oldest: checks-oldest molecule-oldest

matrix-newest: checks-newest molecule-newest

# Each end in two parts: its checks (CPU) and its molecule run (the fleet), which make test runs in separate lanes.
checks-oldest:
	$(MAKE) --no-print-directory unit-matrix sanity VENV=.venv-2.16 REQUIREMENTS=requirements-2.16.txt

checks-newest:
	$(MAKE) --no-print-directory unit-matrix sanity VENV=.venv-2.21 REQUIREMENTS=requirements-2.21.txt \
	  VENV_PYTHON="$$(scripts/find_python.sh 3.12)"

molecule-oldest:
	$(MAKE) --no-print-directory molecule VENV=.venv-2.16 REQUIREMENTS=requirements-2.16.txt SCENARIOS=default

molecule-newest:
	LLAMAFLEET_SUITE=trixie $(MAKE) --no-print-directory molecule VENV=.venv-2.21 REQUIREMENTS=requirements-2.21.txt \
	  VENV_PYTHON="$$(scripts/find_python.sh 3.12)" SCENARIOS=default

unit-matrix: $(STAMP)
	$(VENV)/bin/pytest tests/unit --ignore=tests/unit/plugins/module_utils -p no:cacheprovider

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

# The gateway's proxy (Debian's HAProxy with Lua, and lua-cjson for its body check) for test_gateway_real.py, and
# Debian's Prometheus (prometheus, promtool) for test_metrics_real.py.
integration: $(STAMP)
	scripts/apt_install.sh --no-recommends haproxy lua-cjson prometheus
	LLAMAFLEET_ENGINE_DIR="$$(scripts/build_engine.sh current)" \
	LLAMAFLEET_OLD_ENGINE_DIR="$$(scripts/build_engine.sh old)" \
	LLAMAFLEET_MODEL="$$(scripts/fetch_model.sh)" \
	LLAMAFLEET_DOCKER_JSON="$$(VENV=$(CURDIR)/$(VENV) scripts/compose_artifacts.sh \
	    $(CURDIR)/.cache/fleet-share-integration)" \
	  $(VENV)/bin/pytest tests/integration -p no:cacheprovider --durations=15

bench: $(STAMP)
	$(PY) bench/gguf_read.py "$$(scripts/fetch_model.sh)"
	$(PY) bench/gguf_hostile.py
	$(PY) bench/fuzz_plan.py
	$(PY) bench/fleet_ledger.py
	$(PY) bench/fuzz_engine.py "$$(scripts/build_engine.sh current)" "$$(scripts/fetch_model.sh)"
	$(PY) bench/module_plan.py "$$(scripts/build_engine.sh current)" "$$(scripts/fetch_model.sh)" \
	  --docker-json "$$(VENV=$(CURDIR)/$(VENV) scripts/compose_artifacts.sh $(CURDIR)/.cache/fleet-share)"

## Each bench of bench/ once at its smallest size, the fleet benches on two hosts of their own (scripts/bench_smoke.sh).
bench-smoke: $(STAMP) collections
	VENV=$(CURDIR)/$(VENV) PATH="$(CURDIR)/$(VENV)/bin:$$PATH" scripts/bench_smoke.sh

## Every test and linter, each target one step of scripts/steps.sh: a line when it starts and one when it ends
## (with pytest's, ansible-lint's results and each molecule scenario's time), its output in a log file under
## $(LLAMAFLEET_CACHE)/logs, the log's end and path printed when it fails. VERBOSE=1 streams everything.
## After the artifacts, two lanes side by side ('&'): the CPU-bound checks, and the molecule scenarios, whose hosts
## mostly wait (starting, loading, health waits) and leave a core to the checks.
test:
	@MAKE='$(MAKE)' scripts/steps.sh make 'make test' \
	  'artifacts=CPU engines (two generations), models, rootfs, venvs, Docker engine and image: built once, cached' \
	  ';' \
	  'lint=ruff, ansible-lint, changelog, EE metadata' \
	  'unit=pytest tests/unit, coverage >= 95%' \
	  'integration=pytest tests/integration, real engines and models' \
	  'checks-oldest=ansible-core 2.16: unit tests, ansible-test sanity' \
	  'checks-newest=ansible-core 2.21 on Python 3.12: unit tests, ansible-test sanity' \
	  'bench-smoke=every bench once at its smallest size (it runs; its figures are not judged), own 2-host fleet' \
	  'molecule-side=molecule: $(MOLECULE_SIDE), ansible-core 2.19, on a second fleet of its own' \
	  '&' \
	  'molecule-dev=molecule: every other scenario but default, ansible-core 2.19' \
	  'molecule-oldest=molecule default under ansible-core 2.16, bookworm hosts' \
	  'molecule-newest=molecule default under ansible-core 2.21, trixie hosts (Python 3.13)'

## The dev venv's molecule share of `make test`: the default scenario runs under both ends of the range instead,
## and MOLECULE_SIDE in the checks' lane once its checks are done (molecule-side), on a second fleet (another name
## prefix, network and state directory: scripts/fleet.sh), so that both lanes end near the same time (measured:
## 49 and 52 min with router in the molecule lane; router takes about 2 min).
MOLECULE_SIDE = partial router
molecule-dev:
	$(MAKE) --no-print-directory molecule MOLECULE_EXCLUDE="default $(MOLECULE_SIDE)"

molecule-side:
	LLAMAFLEET_FLEET_PREFIX=llf-side LLAMAFLEET_FLEET_NET=10.213.49 \
	  LLAMAFLEET_FLEET_STATE=$(LLAMAFLEET_CACHE)/fleet-side \
	  $(MAKE) --no-print-directory molecule SCENARIOS="$(MOLECULE_SIDE)"

clean:
	rm -rf $(VENV) .collections .pytest_cache .ruff_cache .cache
