# The lab's local package repositories (stand-in DOCA-OFED packages and friends), built into
# .lab/repo/ by lab/repo/build.py from lab/repo/packages.yml. Included by the Makefile
# (-include mk/*.mk). Built once per machine: build.py keeps each build in the lab cache
# (${LAB_CACHE}/repo, see lab/common.sh) under a digest of its inputs (build.py, packages.yml,
# lab/repo/files/, the running kernel, which names the linux-headers stand-in, and the signing
# key), and a checkout copies the cached build; running this target again is a no-op. Needs
# dpkg-deb and gpg; installs them with apt-get when missing.

REPO_PYTHON ?= $(firstword $(wildcard .venv/bin/python) python3)

TOOL_TARGETS += repo

.PHONY: repo
repo:
	@set -eu; \
	missing=""; \
	command -v dpkg-deb >/dev/null 2>&1 || missing="$$missing dpkg"; \
	command -v gpg >/dev/null 2>&1 || missing="$$missing gnupg"; \
	if [ -n "$$missing" ]; then \
	    echo "[repo.mk] installing$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi; \
	source lab/common.sh; \
	$(REPO_PYTHON) lab/repo/build.py --cache "$${LAB_CACHE}/repo"
