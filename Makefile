# claimwatch — every target sets up what it needs (venv in .venv, broker via compose/kafka.sh).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
POLICY ?= examples/policy.yaml
DEMO_POLICY ?= examples/demo-policy.yaml
PYTEST_ARGS ?=
# The 3.9 smoke run: a second local broker (compose/kafka.sh, Kafka 3.9.1) on its own port, and
# the few tests that prove the worker still runs on the 3.9 line (docs/brokers.md).
SMOKE_39_VERSION ?= 3.9
SMOKE_39_PORT ?= 29092
SMOKE_39_TESTS ?= tests/integration/test_broker_smoke.py \
  tests/integration/test_pipeline.py::test_nine_fixture_cases_match_offline_resolve \
  tests/integration/test_topics_kafka.py

.DEFAULT_GOAL := help
.PHONY: help install lock audit tools test-opa run demo-offline test test-unit test-smoke-39 fuzz lint typecheck docs check bench schemas kafka-up kafka-down kafka-status kafka-down-39 clean

help: ## list the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install claimwatch with its dev tools, at the versions of constraints.txt

lock: $(STAMP) ## write constraints.txt again from .venv (after changing a dependency in pyproject.toml)
	{ sed -n '/^#/p' constraints.txt; $(BIN)/pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

# OSV when it answers, else PyPI's JSON API. --strict: a package no service can tell about
# fails the audit, so an audit that could not ask anyone never passes.
AUDIT_SERVICE ?= $(shell $(PY) -c "import socket; socket.create_connection(('api.osv.dev', 443), 5)" >/dev/null 2>&1 && echo osv || echo pypi)

audit: $(STAMP) ## check constraints.txt for known vulnerabilities (OSV, else PyPI); fails when no service answers
	@echo "make audit: asking $(AUDIT_SERVICE) about constraints.txt"
	$(BIN)/pip-audit --strict --no-deps --disable-pip --progress-spinner off \
	  --vulnerability-service $(AUDIT_SERVICE) -r constraints.txt \
	  || { echo "make audit: FAILED: a known vulnerability, or $(AUDIT_SERVICE) could not tell about every package (see above)" >&2; exit 1; }

run: $(STAMP) kafka-up ## start the worker on the local broker with the live demo (Ctrl-C stops it all)
	$(BIN)/python -m claimwatch.sim.demo --policy $(DEMO_POLICY)

demo-offline: $(STAMP) ## resolve the bundled invoice example without Kafka
	$(BIN)/claimwatch resolve --policy $(POLICY) --now 2026-09-14T09:12:30Z examples/claims.jsonl

# The third-party MCP clients the tests run (docs/mcp-clients.md): the MCP Inspector and the
# conformance suite, at the exact versions of tools/npm/package-lock.json, into .cache/npm with a
# Node 22 binary from the npm registry (the Inspector 2.x needs Node >= 22.19). The stamp makes a
# later `make tools` a no-op, so it needs no network once installed; --ignore-scripts: the only
# install script in the lock (the Inspector's postinstall) does nothing outside its own checkout.
NPM_PREFIX := .cache/npm
NPM_STAMP := $(NPM_PREFIX)/.installed

$(NPM_STAMP): tools/npm/package.json tools/npm/package-lock.json
	mkdir -p $(NPM_PREFIX)
	cp tools/npm/package.json tools/npm/package-lock.json $(NPM_PREFIX)/
	cd $(NPM_PREFIX) && npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error
	touch $@

# OPA, the policy engine of the gateway's governance checks (docs/policy-packs.md): built from
# its Go module into .cache/go/bin (no download of a prebuilt binary). `go install pkg@version`
# builds outside any module (the repository has no go.mod) and keeps its module and build caches
# in $(go env GOMODCACHE) and GOCACHE, so a second build is fast. CGO_ENABLED=0: OPA's Wasm
# runtime is opt-in behind the opa_wasm build tag, and the packs do not need it. The stamp names
# the version, so changing OPA_VERSION builds again.
OPA_VERSION := v1.22.4
GO_BIN := .cache/go/bin
OPA := $(GO_BIN)/opa
OPA_STAMP := $(GO_BIN)/.opa-$(OPA_VERSION)
PACKS := examples/governance/packs

$(OPA_STAMP):
	@command -v go >/dev/null || { echo "make tools: OPA is built from its Go module and needs Go >= 1.26 on PATH (https://go.dev/dl/)" >&2; exit 2; }
	mkdir -p $(GO_BIN)
	GOBIN=$(CURDIR)/$(GO_BIN) CGO_ENABLED=0 go install github.com/open-policy-agent/opa@$(OPA_VERSION)
	$(OPA) version | grep -qx 'Version: $(OPA_VERSION:v%=%)'
	touch $@

tools: $(NPM_STAMP) $(OPA_STAMP) ## Prometheus, Alertmanager, docker-compose (Debian), the MCP Inspector and conformance suite (npm), and OPA (Go module, into .cache/go/bin)
	@command -v prometheus >/dev/null && command -v prometheus-alertmanager >/dev/null \
	  && command -v promtool >/dev/null && command -v amtool >/dev/null \
	  && command -v docker-compose >/dev/null || { \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends prometheus prometheus-alertmanager docker-compose >/dev/null; }

test-opa: $(OPA_STAMP) ## OPA's own tests of the policy packs (opa check --strict, opa test)
	$(OPA) check --strict $(PACKS)
	$(OPA) test --verbose $(PACKS)

test: $(STAMP) tools kafka-up test-opa ## run the whole test suite (the packs' opa test, unit + real-broker integration)
	$(BIN)/pytest $(PYTEST_ARGS)

test-unit: $(STAMP) tools test-opa ## run the packs' opa test and the tests that need no broker
	$(BIN)/pytest -m "not kafka" $(PYTEST_ARGS)

test-smoke-39: $(STAMP) ## start a Kafka 3.9 broker (port SMOKE_39_PORT, 29092) and run the smoke set on it
	CLAIMWATCH_KAFKA_PORT=$(SMOKE_39_PORT) CLAIMWATCH_BOOTSTRAP=127.0.0.1:$(SMOKE_39_PORT) \
	  compose/kafka.sh up $(SMOKE_39_VERSION)
	CLAIMWATCH_BOOTSTRAP=127.0.0.1:$(SMOKE_39_PORT) $(BIN)/pytest -m kafka $(SMOKE_39_TESTS) $(PYTEST_ARGS)

fuzz: $(STAMP) ## the generated-input properties with a large example budget (CLAIMWATCH_FUZZ=1)
	CLAIMWATCH_FUZZ=1 $(BIN)/pytest tests/unit/core/test_fuzz_*.py --hypothesis-show-statistics \
	  $(PYTEST_ARGS)

lint: $(STAMP) ## ruff, and import-linter's layer contracts (pyproject.toml)
	$(BIN)/ruff check streams tests bench
	$(BIN)/ruff format --check streams tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP) ## mypy --strict on the claimwatch package (streams/claimwatch)
	$(BIN)/mypy

# mkdocs 1.x and Material print a banner about their successors on every build; the versions
# are pinned (constraints.txt), so the banner says nothing about this build.
docs: $(STAMP) ## build the documentation site into site/, strict: a broken link or reference fails
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict

check: lint typecheck docs test ## what CI runs: lint, types, the docs site, tests

bench: $(STAMP) kafka-up $(OPA_STAMP) ## the speed figures of every issue, as ratios against in-run baselines
	$(BIN)/python -m bench

schemas: $(STAMP) ## regenerate the JSON Schemas in schemas/ from the pydantic models
	$(BIN)/python -m claimwatch.models.generate

kafka-up: ## provision and start the local Apache Kafka 4.x broker (CLAIMWATCH_KAFKA_VERSION, _PORT choose; no-op with CLAIMWATCH_BOOTSTRAP)
	compose/kafka.sh up

kafka-down: ## stop the local broker
	compose/kafka.sh down

kafka-down-39: ## stop the 3.9 broker of test-smoke-39
	CLAIMWATCH_KAFKA_PORT=$(SMOKE_39_PORT) CLAIMWATCH_BOOTSTRAP=127.0.0.1:$(SMOKE_39_PORT) \
	  compose/kafka.sh down $(SMOKE_39_VERSION)

kafka-status: ## is the local broker running?
	compose/kafka.sh status

clean: ## remove the venv, caches and the brokers' data (not their jar caches)
	-compose/kafka.sh down
	-$(MAKE) --no-print-directory kafka-down-39
	rm -rf $(VENV) site .mypy_cache .ruff_cache .pytest_cache .hypothesis .cache/kafka-*/data
