# The AWX / Automation Controller execution environment (execution-environment.yml, ansible-builder
# v3). Included by the Makefile (-include mk/*.mk).
#   make ee         build the image for use: the collection tarball into dist/, then
#                   `ansible-builder build` (needs the base image's registry and Galaxy, or a
#                   base given with EE_BUILD_ARGS="--build-arg EE_BASE_IMAGE=...")
#   make ee-build   the test build (tests/ee/build.sh): a local base image, the dependency
#                   collections from the pinned `ansible` package, checks inside the image;
#                   ansible-builder's image is kept per machine, keyed by its inputs (this
#                   commit's collection goes on top); part of `make test`, skipped with a
#                   message only where podman cannot be had

EE_VERSION    := $(shell awk '/^version:/ {print $$2}' galaxy.yml)
EE_TAG        ?= gpufabric-rollout-ee:$(EE_VERSION)
EE_BUILD_ARGS ?=

.PHONY: ee ee-build
ee: venv
	ansible-galaxy collection build --force --output-path dist
	ansible-builder build -f execution-environment.yml -c context -t $(EE_TAG) --container-runtime podman $(EE_BUILD_ARGS)

ee-build: venv
	tests/ee/build.sh
