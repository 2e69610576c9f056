# The headless browser the unit tests open validate's HTML report in
# (tests/unit/validate/test_validate_report.py). Included by the Makefile (-include mk/*.mk).
# Installed here, once, before any test runs: apt holds one lock, and a test that installed it
# itself would race every other apt-get of a parallel `make test`. Debian's package chromium.

TOOL_TARGETS += browser

.PHONY: browser
browser:
	@set -eu; \
	if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
	    echo "[browser.mk] installing chromium (Debian package; about a minute)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq; \
	    apt-get install -y -qq -o DPkg::Lock::Timeout=300 chromium >/dev/null; \
	fi
