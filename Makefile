# The verbs a newcomer types. Every target installs what it needs first (idempotent).
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER ?= clusters/example.yaml
CHECKOV_VENV := .venv-checkov
export CDK_DISABLE_CLI_TELEMETRY := true
# The venv, then the Node LTS that package.json pins (npm ci links it here): npx cdk, the CDK app's
# jsii runtime and the in-process synths of the test suite all run on it, so no end-of-life banner.
export PATH := $(CURDIR)/$(BIN):$(CURDIR)/node_modules/.bin:$(PATH)

# lua5.4: tests/routing compiles and runs the rendered job_submit.lua (luac -p, lua).
RACK_DEBS := mmdebstrap systemd-container apt-cacher-ng socat iproute2 openssh-client lua5.4
# promtool checks the rendered prometheus.yml and tests the alert rules (tests/render/test_monitoring.py).
# Debian ships it only inside the `prometheus` package, whose install would start a Prometheus daemon (and
# its recommended node exporter) on the test machine: the package is downloaded and promtool, a static
# binary, unpacked under build/ instead.
PROMTOOL := build/debs/prometheus/usr/bin/promtool
N ?= 4

.PHONY: help install rack-deps demo test lint unit synth render bench golden role-docs docs clean rack-up rack-down

help:  ## list the verbs
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# checkov pins an old boto3, so it lives in its own venv.
$(CHECKOV_VENV)/.installed:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install -q checkov==3.3.30
	touch $@

rack-deps:  ## Debian packages the test rack needs (as root; skipped when present)
	@if dpkg -s $(RACK_DEBS) >/dev/null 2>&1; then echo "rack packages present"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(RACK_DEBS); \
	else echo "the test rack needs root to install: $(RACK_DEBS)"; fi
	@$(MAKE) -s --no-print-directory $(PROMTOOL)

$(PROMTOOL):
	@mkdir -p build/debs && cd build/debs && rm -f prometheus_*.deb && \
	  { apt-get download -q prometheus 2>/dev/null || { apt-get update -q && apt-get download -q prometheus; }; } && \
	  dpkg-deb -x prometheus_*.deb prometheus && rm -f prometheus_*.deb && test -x prometheus/usr/bin/promtool \
	  || echo "promtool not unpacked: tests/render/test_monitoring.py's promtool tests will skip"

install: $(VENV)/.installed node_modules/.installed $(CHECKOV_VENV)/.installed  ## create the venvs and install the pinned CDK CLI

# The burst boots its own rack ("demoburst") and mostly waits on Slurm's timers, so it starts first and runs
# beside the other steps; its log (build/demo-burst.log) is printed after them. It always runs to its end
# (it tears its rack down itself), and either part failing fails the target.
demo: install rack-deps  ## validate, show, render, cdk synth; a local rack converged, accepted, running a job; the burst beside them
	@mkdir -p build
	@$(BIN)/python -u -m gpucluster_rack.demo_burst > build/demo-burst.log 2>&1 & burst=$$!; status=0; \
	echo "==> burst, on its own rack beside the steps below (log printed after them): the rack's slurmctld launches emulated cloud nodes for a 2-node job and powers them down; a spot job checkpoints on its two-minute notice and resumes"; \
	{ echo "==> gpucluster validate $(CLUSTER)" && $(BIN)/gpucluster validate $(CLUSTER) && \
	  echo "==> gpucluster show $(CLUSTER)" && $(BIN)/gpucluster show $(CLUSTER) && \
	  echo "==> gpucluster render $(CLUSTER) --out build/" && \
	  $(BIN)/gpucluster render $(CLUSTER) --out build/$$(basename $(CLUSTER) .yaml) && \
	  echo "==> npx cdk synth -c cluster=$(CLUSTER)" && npx cdk synth -q -c cluster=$(CLUSTER) && \
	  $(BIN)/python -m stacks.summary cdk.out && \
	  echo "==> a local test rack: boot 3 nodes, converge with ansible/site.yml, admit them by acceptance, run a 2-node job" && \
	  $(BIN)/python -m gpucluster_rack.demo; } || status=1; \
	echo "==> burst (build/demo-burst.log):"; wait $$burst || status=1; cat build/demo-burst.log; \
	if [ $$status -eq 0 ]; then echo "demo done: node files in build/, CloudFormation in cdk.out/"; else echo "demo failed"; fi; \
	exit $$status

lint: install  ## ruff and mypy --strict (ansible-lint runs in tests/ansible)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check gpucluster stacks tests bench app.py ansible/plugins tools gpucluster_rack
	$(BIN)/mypy gpucluster stacks app.py tools gpucluster_rack

# Four pytest processes side by side, each a chain of modules that boot their own racks: the burst rack
# mostly waits (cloud nodes booting, Slurm's idle and resume timers), so the other racks and the offline suite
# run beside it. Racks have their own names, networks, apt proxies and ssh control sockets, and the node image
# is built once under a lock. The whole run is CPU-bound on two cores (issue 31): the pins rack, the longest
# single module (about 18 minutes alone), has a chain of its own so it does not run alone at the end.
# Each process's report ends with its slowest tests and its CPU seconds by module (tests/conftest.py): the
# burst chain's as it runs, the others' after it; any failing fails the target.
# The ansible-core matrix: everything runs on the venv's ansible-core (the oldest the collection claims) except
# tests/rack/test_ansible_newest.py, which runs the collection's tests and a 2-node rack converge on the newest,
# from a Debian 13 controller root it builds once (requirements-ansible-newest.txt).
BURST_CHAIN := tests/rack/test_burst.py
RACK_CHAIN := tests/rack/test_e2e.py tests/rack/test_gpu_stack.py tests/rack/test_harness.py
PINS_CHAIN := tests/rack/test_nvidia_pins.py
PYTEST_CHAIN := $(BIN)/pytest -q -p no:cacheprovider --durations=15
unit: install rack-deps  ## the Python test suite, including the end-to-end rack tests
	@mkdir -p build
	@$(PYTEST_CHAIN) $(PINS_CHAIN) > build/unit-pins.log 2>&1 & pins=$$!; \
	$(PYTEST_CHAIN) $(RACK_CHAIN) > build/unit-racks.log 2>&1 & racks=$$!; \
	$(PYTEST_CHAIN) $(addprefix --ignore=,$(BURST_CHAIN) $(RACK_CHAIN) $(PINS_CHAIN)) > build/unit-rest.log 2>&1 & rest=$$!; \
	$(PYTEST_CHAIN) $(BURST_CHAIN); status=$$?; echo "==> $(BURST_CHAIN): exit $$status"; \
	for chain in racks:$$racks pins:$$pins rest:$$rest; do \
	  wait $${chain#*:}; rc=$$?; echo "==> build/unit-$${chain%:*}.log, run beside: exit $$rc"; cat build/unit-$${chain%:*}.log; \
	  test $$rc -eq 0 || status=1; \
	done; exit $$status

# lint beside unit: the racks' first minute waits on the node image build (one core), and lint needs the other.
test: install rack-deps  ## everything CI runs: lint beside the unit chains; either failing fails it
	@mkdir -p build
	@$(MAKE) --no-print-directory lint > build/lint.log 2>&1 & lint=$$!; status=0; \
	$(MAKE) --no-print-directory unit || status=1; \
	wait $$lint; rc=$$?; echo "==> make lint (build/lint.log), run beside: exit $$rc"; cat build/lint.log; \
	test $$rc -eq 0 || status=1; exit $$status

synth: install  ## cdk synth the cluster file in CLUSTER
	npx cdk synth -q -c cluster=$(CLUSTER)

render: install  ## render every node file of CLUSTER into build/
	$(BIN)/gpucluster render $(CLUSTER) --out build/$$(basename $(CLUSTER) .yaml)

golden: install  ## regenerate render golden files (review the diff!)
	$(BIN)/python -m tools.render_golden

role-docs: install  ## regenerate the role READMEs from each role's meta/argument_specs.yml
	$(BIN)/python -m tools.role_readmes

docs: install  ## regenerate docs/cluster-file.md from the cluster-file model
	$(BIN)/python -m tools.cluster_file_reference

bench: install  ## benchmarks: figures and ratios, no pass/fail
	$(BIN)/python bench/validate.py
	$(BIN)/python bench/synth.py
	$(BIN)/python bench/review.py
	$(BIN)/python bench/routing.py
	$(BIN)/python bench/rack.py
	$(BIN)/python bench/burst.py --rack

rack-up: install rack-deps  ## boot a test rack of N nodes (default 4) on this machine
	$(BIN)/python -m gpucluster_rack up $(N)

rack-down:  ## tear the test rack down (processes, mounts, namespaces, cgroups)
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m gpucluster_rack down; else echo "no .venv: no rack was started"; fi

clean:  ## remove build outputs (keeps .venv and node_modules)
	rm -rf build cdk.out .pytest_cache .mypy_cache .ruff_cache
