# The verbs a newcomer types. Every target installs what it needs first (idempotent).
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER ?= clusters/example.yaml
CHECKOV_VENV := .venv-checkov
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help install demo test lint unit synth render bench golden clean

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

install: $(VENV)/.installed node_modules/.installed $(CHECKOV_VENV)/.installed  ## create the venvs and install the pinned CDK CLI

demo: install  ## the main job on the embedded default: validate, show, render, cdk synth
	@echo "==> gpucluster validate $(CLUSTER)"
	@$(BIN)/gpucluster validate $(CLUSTER)
	@echo "==> gpucluster show $(CLUSTER)"
	@$(BIN)/gpucluster show $(CLUSTER)
	@echo "==> gpucluster render $(CLUSTER) --out build/"
	@$(BIN)/gpucluster render $(CLUSTER) --out build/$$(basename $(CLUSTER) .yaml)
	@echo "==> npx cdk synth -c cluster=$(CLUSTER)"
	@npx cdk synth -q -c cluster=$(CLUSTER)
	@$(BIN)/python -m stacks.summary cdk.out
	@echo "demo done: node files in build/, CloudFormation in cdk.out/"

lint: install  ## ruff and mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check gpucluster stacks tests bench app.py ansible/plugins
	$(BIN)/mypy gpucluster stacks app.py

unit: install  ## the Python test suite
	$(BIN)/pytest -q

test: lint unit  ## everything CI runs

synth: install  ## cdk synth the cluster file in CLUSTER
	npx cdk synth -q -c cluster=$(CLUSTER)

render: install  ## render every node file of CLUSTER into build/
	$(BIN)/gpucluster render $(CLUSTER) --out build/$$(basename $(CLUSTER) .yaml)

golden: install  ## regenerate render golden files (review the diff!)
	$(BIN)/python -m tests.render.regenerate

bench: install  ## benchmarks: figures and ratios, no pass/fail
	$(BIN)/python bench/validate.py
	$(BIN)/python bench/synth.py

clean:  ## remove build outputs (keeps .venv and node_modules)
	rm -rf build cdk.out .pytest_cache .mypy_cache .ruff_cache
