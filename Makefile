# gpufabric.rollout — one command to run the main job on the lab, one to test everything.
#   make lab        build what is missing, start the lab, run site.yml, print the validation summary and the reports
#   make test       lint, unit tests, ansible-test sanity, build check, EE build, control-plane
#                   tests, the support matrix (sanity and units on each older ansible-core), the
#                   main job end to end on the lab on the newest core (its runs on the oldest), every molecule scenario
#   make test-fast  lint, unit tests and sanity only (no lab nodes), for iteration
#   make bench      benchmarks (print figures, never fail on timing)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

REPO := $(CURDIR)
VENV := $(REPO)/.venv
# The controller's Python (3.12 or newer for ansible-core 2.21): lab/python.sh finds one when unset.
PYTHON ?=
export PATH := $(VENV)/bin:$(REPO)/.tools/bin:$(PATH)
export CONTAINERS_CONF := $(REPO)/.lab/containers.conf
export ANSIBLE_CONFIG := $(REPO)/ansible.cfg
export ANSIBLE_FORCE_COLOR ?= 0
export ANSIBLE_NOCOLOR ?= 1
export NO_COLOR ?= 1
export PY_COLORS ?= 0

# Build steps that areas add in mk/*.mk (Helm, the local package repository, ...).
TOOL_TARGETS :=
-include mk/*.mk

COLLECTION_LINK := .collections/ansible_collections/gpufabric/rollout
COLLECTIONS_STAMP := .collections/.linked

.PHONY: help venv tools lab-image lint unit unit-early unit-late sanity build-check controlplane-test lab-test molecule molecule-test test test-fast \
	test-lab-lane test-cluster-lane lab site plan lab-down bench clean matrix matrix-sanity matrix-units lab-test-oldest lab-test-matrix fault-test \
	fault-test-lab fault-test-cluster

help:
	@echo "make lab       run site.yml against the lab (two GPU-like nodes + a real Kubernetes control plane)"
	@echo "make site      run site.yml again on the running lab (LAB_PLAYBOOK_ARGS=\"--check --diff\")"
	@echo "make plan      the dry run: check everything, print and write the plan, change nothing"
	@echo "make lab-down  remove the lab"
	@echo "make test      lint, unit, sanity, build check, EE build, control plane tests, lab-test, fault-test, molecule-test"
	@echo "make test-fast lint, unit and sanity (no lab nodes)"
	@echo "make ee-build  build the AWX execution environment image (execution-environment.yml)"
	@echo "make bench     benchmarks"
	@echo "make venv | tools | controlplane | lab-image | lint | unit | sanity | build-check | ee-build"
	@echo "     | controlplane-test | fault-test | molecule [SCENARIO=name] | molecule-test"

venv: $(VENV)/.stamp $(COLLECTION_LINK) $(COLLECTIONS_STAMP)

# Built from wheels cached once per machine (lab/venv.sh); each step shows its progress.
$(VENV)/.stamp: requirements.txt lab/venv.sh lab/python.sh
	lab/venv.sh $(PYTHON)
	touch $@

# The checkout is used in place as the collection (ansible.cfg: collections_path = ./.collections).
$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../.. $@

# The collections it uses, linked from the venv's `ansible` package (collections_scan_sys_path
# is false: Ansible sees .collections only).
$(COLLECTIONS_STAMP): $(VENV)/.stamp requirements.yml lab/link_collections.py
	$(VENV)/bin/python lab/link_collections.py
	touch $@

tools: venv $(TOOL_TARGETS)

lab-image:
	lab/heartbeat.sh lab-image lab/image/build.sh >/dev/null

lint: venv
	ansible-lint
	yamllint --strict .
	ruff check .
	ruff format --check .

# The unit tests build rendered kustomizations with `kubectl kustomize` (the control plane's kubectl).
unit: tools controlplane
	pytest

# make test-fast runs the unit tests in two parts: UNIT_LATE after lint, in lint's lane, UNIT_EARLY
# without what UNIT_LATE holds in a lane of its own, so that no lane runs alone at the end
# (docs/contributing.md has the times). Together they are pyproject.toml's testpaths
# (tests/unit/lab/test_unit_split.py). pytest ignores no path it is given itself, so UNIT_EARLY names
# none that UNIT_LATE holds. The plan tests come last: they import their conftest.py as `conftest`,
# and pytest loads the conftest files of the paths it is given in their order, so the last one's is
# the `conftest` module.
UNIT_EARLY := tests/unit
UNIT_LATE := tests/security tests/unit/validate tests/unit/plan
unit-early: tools controlplane
	pytest $(UNIT_EARLY) $(addprefix --ignore=,$(UNIT_LATE))

unit-late: tools controlplane
	pytest $(UNIT_LATE)

sanity: venv
	tests/sanity/run.sh

build-check: venv
	lab/heartbeat.sh build-check tests/build/check.sh

# Tests against a private lab cluster (tests/controlplane; needs the binaries). Not
# tests/integration: that is where ansible-test looks for its integration targets.
# The support matrix: sanity and the unit tests on every older ansible-core of tests/matrix/cores.txt,
# each in its own cached venv (lab/core_venv.sh). make test-fast runs the newest (requirements.txt).
matrix: venv
	tests/matrix/run.sh

# The two halves of the matrix: sanity (make test runs it among the fast checks, where it fills the
# CPU the unit tests leave) and the units (make matrix only; make test runs the units on the newest
# core, and the lab's main job reruns on the oldest).
matrix-sanity: venv
	MATRIX_STEPS=sanity tests/matrix/run.sh

matrix-units: venv
	MATRIX_STEPS=units tests/matrix/run.sh

# The oldest supported ansible-core (the first of tests/matrix/cores.txt, meta/runtime.yml's floor).
OLDEST_CORE = $(shell grep -vE '^[[:space:]]*(\#|$$)' tests/matrix/cores.txt | head -1)

# The upstream CRDs the tests validate against (tests/upstream_crds.py: LAB_CRDS_DIR, else the
# shared schemas beside the checkout; empty without them). The lab's own runs (make lab, site,
# plan) take LAB_CRDS_DIR alone and otherwise install the lab's permissive CRDs (lab/crds/).
TEST_CRDS = $(shell python3 tests/upstream_crds.py)

controlplane-test: tools controlplane
	LAB_CRDS_DIR="$(TEST_CRDS)" pytest tests/controlplane

# The fault-injection suite (tests/fault): faults injected into real runs on lab nodes and private
# control planes of its own; it prints a table of faults, runs, survivals, nodes left
# half-configured without being named and objects lost (both must be 0).
fault-test: tools controlplane lab-image
	LAB_CRDS_DIR="$(TEST_CRDS)" pytest tests/fault -p no:cacheprovider

# make test splits the suite between its lanes: the faults on lab nodes in the lab lane, the API
# faults (private control planes only) in the cluster lane; each part prints its own table.
FAULT_CLUSTER_TESTS := tests/fault/test_api_faults.py
fault-test-lab: tools controlplane lab-image
	LAB_CRDS_DIR="$(TEST_CRDS)" pytest tests/fault -p no:cacheprovider $(addprefix --ignore=,$(FAULT_CLUSTER_TESTS))

fault-test-cluster: tools controlplane
	LAB_CRDS_DIR="$(TEST_CRDS)" pytest $(FAULT_CLUSTER_TESTS) -p no:cacheprovider

molecule: tools controlplane lab-image
	LAB_CRDS_DIR="$(TEST_CRDS)" lab/molecule/run.sh $(SCENARIO)

# Every scenario; make test splits them between its two lanes (below).
LAB_LANE_SCENARIOS := host_layer storage
CLUSTER_LANE_SCENARIOS := cluster_layer upgrade
TEST_SCENARIOS := $(LAB_LANE_SCENARIOS) $(CLUSTER_LANE_SCENARIOS)
molecule-test: tools controlplane lab-image
	LAB_CRDS_DIR="$(TEST_CRDS)" lab/molecule/run.sh $(TEST_SCENARIOS)

# After the fast checks, two lanes run side by side: the lab lane (the main job on the lab, the
# fault tests, then molecule scenarios) and the cluster lane (the EE build, the control-plane tests
# on their session's cluster, then the other scenarios). The lanes are balanced by their measured
# times (docs/contributing.md). Neither lane fills the machine alone: much of their time is
# waiting on API servers, kwok's simulated Pods and node boots. They share no lab node, cluster or
# port (lab/nodes.sh takes a machine-wide lock to create or remove nodes). Each lane is one
# sequence, into its own log (lab/run_lanes.py prints each lane's state every 30 s, and the end of
# a failed lane's log with what failed in it).
# What both lanes need (the control-plane binaries, the node image) is built before they start.
# make test's test-fast runs the support matrix's sanity after sanity: the unit tests run longest,
# and the matrix uses the CPU lint and sanity leave them (its unit tests: make matrix).
test: TEST_FAST_MATRIX := matrix-sanity
test: TEST_FAST_IMAGE := image="$(MAKE) --no-print-directory -j1 build-check lab-image"
test: test-fast controlplane
	$(VENV)/bin/python lab/run_lanes.py --tag test \
		lab-lane="$(MAKE) --no-print-directory test-lab-lane" \
		cluster-lane="$(MAKE) --no-print-directory test-cluster-lane"
	@echo "make test: all checks passed"

# The lab's main job runs its first run (newest core) and its rerun (oldest core) over the lab's
# default transport (SSH, what users run), and its later steps over Mitogen (lab-test-matrix); the
# molecule scenarios run over Mitogen (TEST_FAST_CONNECTION), about twice as fast per task. Both
# transports are tested.
TEST_FAST_CONNECTION := mitogen

test-lab-lane: tools controlplane lab-image
	$(MAKE) --no-print-directory -j1 lab-test-matrix fault-test-lab fault-test-cluster
	GPUFABRIC_LAB_CONNECTION=$${GPUFABRIC_LAB_CONNECTION:-$(TEST_FAST_CONNECTION)} LAB_CRDS_DIR="$(TEST_CRDS)" lab/molecule/run.sh $(LAB_LANE_SCENARIOS)

# The older cores' unit tests run in `make matrix` only (make test proves the oldest core with its
# sanity and the lab's main job rerun on it, lab-test-matrix).
test-cluster-lane: tools controlplane lab-image
	$(MAKE) --no-print-directory -j1 ee-build controlplane-test
	GPUFABRIC_LAB_CONNECTION=$${GPUFABRIC_LAB_CONNECTION:-$(TEST_FAST_CONNECTION)} LAB_CRDS_DIR="$(TEST_CRDS)" lab/molecule/run.sh $(CLUSTER_LANE_SCENARIOS)

# The three run side by side (each is mostly one process), each into its log under .lab/logs/
# (make test adds a fourth: the collection's build check, then the lab's node image, which the
# lanes after need; debootstrap waits on the mirror more than it uses a CPU)
# (lab/run_lanes.py: a status line every 30 s, and a summary of what failed at the end).
# The control plane's kubectl is built (or found) before the lanes start, as both unit parts use it.
test-fast: tools controlplane
	$(VENV)/bin/python lab/run_lanes.py --tag test-fast \
		lint-unit-late="$(MAKE) --no-print-directory -j1 lint unit-late" \
		unit="$(MAKE) --no-print-directory unit-early" \
		sanity="$(MAKE) --no-print-directory -j1 sanity $(TEST_FAST_MATRIX)" $(TEST_FAST_IMAGE)
	@echo "make test-fast: lint, unit and sanity passed$(if $(TEST_FAST_MATRIX), (and the matrix's sanity))"

lab: tools controlplane lab-image
	lab/lab.sh up

# Rerun against the running lab (after `make lab`), with LAB_PLAYBOOK_ARGS, e.g. "--check --diff".
site: tools
	lab/lab.sh site

plan: tools
	lab/lab.sh plan

# The main job end to end as a test: make lab, a second run that changes nothing, --check on the
# converged lab that reports nothing to change; the lab is removed after (lab/check.sh).
lab-test: tools controlplane lab-image
	LAB_CRDS_DIR="$(TEST_CRDS)" lab/check.sh

# The same on the oldest supported ansible-core (LAB_VENV: the lab scripts put its bin first on PATH),
# and on the lab's permissive CRDs, as a clone with no upstream CRDs has them (the objects are still
# applied to the API server, without schema validation).
lab-test-oldest: tools controlplane lab-image
	lab/core_venv.sh $(OLDEST_CORE)
	LAB_CRDS_DIR= LAB_VENV="$(REPO)/.lab/cores/$(OLDEST_CORE)" LAB_CHECK_STEPS=$${LAB_CHECK_STEPS:-all} lab/check.sh

# make test's main job: one lab proves both ends of the support matrix. The first run, check mode,
# the bad intents and the degraded NIC on the newest core, the rerun (must change nothing) on the
# oldest (lab/check.sh's LAB_RERUN_VENV). The first run and the rerun go over the lab's transport
# (SSH by default), check mode, the bad intents and the degraded NIC over TEST_FAST_CONNECTION
# (LAB_LATER_CONNECTION); on the lab's permissive CRDs, as a clone without the
# upstream schemas has them (the cluster_layer and upgrade scenarios and the control-plane tests
# apply the same objects to the upstream schemas).
lab-test-matrix: tools controlplane lab-image
	lab/core_venv.sh $(OLDEST_CORE)
	LAB_CRDS_DIR= LAB_RERUN_VENV="$(REPO)/.lab/cores/$(OLDEST_CORE)" LAB_LATER_CONNECTION=$(TEST_FAST_CONNECTION) lab/check.sh

lab-down:
	lab/lab.sh down

# benchmarks/bench_lab.py replaces the running lab (make lab's nodes) and leaves it down.
bench: tools controlplane lab-image
	@set -e; for b in benchmarks/bench_*.py; do [[ -e "$$b" ]] || continue; echo "== $$b"; python "$$b"; done

clean: lab-down
	rm -rf dist context tests/output .lab
