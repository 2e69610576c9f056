#!/usr/bin/env bash
# Build the execution environment image with ansible-builder and podman, then check inside it that
# the collection, its dependency collections, Python and system dependencies and Helm are there.
#
# No registry or Galaxy server is reachable here, so two inputs of execution-environment.yml are
# stood in for, and nothing else is changed:
# - the base image is lab/ee/base.sh's local Debian 12 image (--build-arg EE_BASE_IMAGE);
# - the collections of meta/ee-collections.yml are seeded from the pinned `ansible` package into
#   the galaxy stage, and its `ansible-galaxy collection install -r requirements.yml` (ansible-builder
#   names its copy of meta/ee-collections.yml so) runs --offline, so it still checks that the seeded
#   versions are the pinned ones.
# Python packages come from PyPI and Debian packages from the Debian mirror, as in a real build.
# Skips (saying so) only when podman cannot be had: no podman and no root/apt to install it.
#
# Built once per machine: ansible-builder's image is kept as localhost/gpufabric-rollout-ee:deps-KEY,
# KEY the hash of everything that goes into it but the collection's own code (this script, the EE
# definition, meta/ee-collections.yml, bindep.txt, the Python requirements, galaxy.yml, meta/runtime.yml,
# the seeded collections' manifests, the base image and ansible-builder's version). On a later run
# with the same KEY the checked image is that one with the current collection tarball installed on
# top by the same offline `ansible-galaxy collection install` as the EE's galaxy stage; a new KEY
# builds again (and the older deps-* images go). EE_REBUILD=1 builds again whatever the KEY.
#
# Usage: tests/ee/build.sh [--keep]   (--keep leaves the built image in podman)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=lab/common.sh
source "${repo}/lab/common.sh"
keep="${1:-}"

if ! command -v podman >/dev/null 2>&1 && { [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; }; then
    echo "SKIPPED: the execution environment build needs podman, which is not installed and cannot be (not root or no apt-get)"
    exit 0
fi
lab_require_tools
lab_containers_conf
python="${repo}/.venv/bin/python"
[[ -x "${python}" ]] || die "run 'make venv' first"
export PATH="${repo}/.venv/bin:${PATH}"

started=$(date +%s)
base="$("${repo}/lab/ee/base.sh")"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-ee.XXXXXX")"
image="localhost/gpufabric-rollout-ee:test-$$"
# ansible-builder's build stages (builder, galaxy) are left as untagged images, about 1.3 GB a build:
# those that appear during this build are removed with it (make test would fill the disk otherwise).
dangling() { podman images --quiet --no-trunc --filter dangling=true | sort; }
dangling_before="$(dangling)"
# shellcheck disable=SC2329  # run by the EXIT trap
cleanup() {
    rm -rf "${work}"
    [[ "${keep}" == "--keep" ]] || podman image rm -f "${image}" >/dev/null 2>&1 || true
    comm -13 <(printf '%s\n' "${dangling_before}") <(dangling) | xargs -r podman image rm -f >/dev/null 2>&1 || true
}
trap cleanup EXIT

cp "${repo}/execution-environment.yml" "${repo}/bindep.txt" "${work}/"
mkdir -p "${work}/meta" "${work}/seed/ansible_collections"
cp "${repo}/meta/ee-requirements.txt" "${repo}/meta/ee-requirements.lock" "${repo}/meta/ee-collections.yml" "${work}/meta/"
(cd "${repo}" && ansible-galaxy collection build --force --output-path "${work}/dist" >/dev/null)
site="$("${python}" -c 'import ansible_collections, os; print(os.path.dirname(ansible_collections.__file__))' 2>/dev/null ||
    "${python}" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"] + "/ansible_collections")')"
# The collections of meta/ee-collections.yml and, as Galaxy would fetch them, their own dependencies
# (MANIFEST.json; community.general 13 needs community.library_inventory_filtering_v1).
for collection in $("${python}" - "${work}/meta/ee-collections.yml" "${site}" <<'PY'
import json
import sys

import yaml

todo = [c["name"] for c in yaml.safe_load(open(sys.argv[1]))["collections"]]
seen = []
while todo:
    name = todo.pop(0)
    if name in seen:
        continue
    seen.append(name)
    with open("%s/%s/MANIFEST.json" % (sys.argv[2], name.replace(".", "/"))) as handle:
        todo.extend(json.load(handle)["collection_info"].get("dependencies") or {})
print(" ".join(seen))
PY
); do
    mkdir -p "${work}/seed/ansible_collections/${collection%%.*}"
    cp -a "${site}/${collection/.//}" "${work}/seed/ansible_collections/${collection/.//}"
done
"${python}" - "${work}/execution-environment.yml" <<'PY'
import sys
import yaml

path = sys.argv[1]
ee = yaml.safe_load(open(path))
# ansible-builder copies the directory's content into _build/seed
ee.setdefault("additional_build_files", []).append({"src": "seed/ansible_collections", "dest": "seed"})
steps = ee.setdefault("additional_build_steps", {})
steps["prepend_galaxy"] = ["COPY _build/seed /usr/share/ansible/collections/ansible_collections"] + list(
    steps.get("prepend_galaxy") or []
)
yaml.safe_dump(ee, open(path, "w"), sort_keys=False)
PY

key="$(
    {
        cat "${BASH_SOURCE[0]}" "${work}/execution-environment.yml" "${work}/meta/ee-collections.yml" "${work}/bindep.txt" \
            "${work}/meta/ee-requirements.txt" "${work}/meta/ee-requirements.lock" "${repo}/galaxy.yml" "${repo}/meta/runtime.yml"
        find "${work}/seed" -name MANIFEST.json -print0 | sort -z | xargs -0 cat
        podman image inspect --format '{{.Id}}' "${base}"
        ansible-builder --version
    } | sha256sum | cut -c1-12
)"
deps="localhost/gpufabric-rollout-ee:deps-${key}"
build_started=$(date +%s)
if [[ "${EE_REBUILD:-0}" != 1 ]] && podman image exists "${deps}"; then
    how="ansible-builder's image ${deps} (built before from the same inputs), the collection installed on top"
else
    log "ansible-builder build (base ${base})"
    if ! ansible-builder build -f "${work}/execution-environment.yml" -c "${work}/context" -t "${deps}" \
        --container-runtime podman --build-arg "EE_BASE_IMAGE=${base}" \
        --build-arg "ANSIBLE_GALAXY_CLI_COLLECTION_OPTS=--offline" \
        --extra-build-cli-args "--network host" -v 2 >"${work}/build.log" 2>&1; then
        tail -n 60 "${work}/build.log" >&2
        die "ansible-builder build failed"
    fi
    how="ansible-builder build"
    podman images --format '{{.Repository}}:{{.Tag}}' localhost/gpufabric-rollout-ee |
        grep -E ':deps-' | grep -vxF "${deps}" | xargs -r podman image rm -f >/dev/null 2>&1 || true
fi
# The current collection over the kept image, as root (the EE's own user is put back).
user="$(podman image inspect --format '{{.Config.User}}' "${deps}")"
mkdir -p "${work}/layer"
cp "${work}"/dist/gpufabric-rollout-*.tar.gz "${work}/layer/"
cat >"${work}/layer/Containerfile" <<EOF
FROM ${deps}
USER root
COPY gpufabric-rollout-*.tar.gz /tmp/collection/
RUN ansible-galaxy collection install --offline --no-deps --force \\
    --collections-path /usr/share/ansible/collections /tmp/collection/gpufabric-rollout-*.tar.gz \\
    && rm -rf /tmp/collection
USER ${user:-root}
EOF
if ! podman build --quiet --network none -t "${image}" "${work}/layer" >"${work}/layer.log" 2>&1; then
    cat "${work}/layer.log" >&2
    die "installing the collection into ${deps} failed"
fi
build_seconds=$(( $(date +%s) - build_started ))

status=0
check() {  # check NAME COMMAND...: run COMMAND in the image, keep its output in ${out}
    local name="$1"; shift
    if ! out="$(podman run --rm --network none "${image}" "$@" 2>&1)"; then
        echo "FAIL ${name}: ${out}" >&2
        status=1
        return 1
    fi
    echo "ok   ${name}"
}

check "ansible-doc lists the collection's modules" ansible-doc -l gpufabric.rollout && {
    for m in "${repo}"/plugins/modules/*.py; do
        name="gpufabric.rollout.$(basename "${m}" .py)"
        grep -q "^${name} " <<<"${out}" || { echo "FAIL ansible-doc does not list ${name} in the image" >&2; status=1; }
    done
}
check "ansible-doc lists the collection's filters" ansible-doc -t filter -l gpufabric.rollout &&
    { grep -q '^gpufabric.rollout.awx_survey ' <<<"${out}" || { echo "FAIL no awx_survey filter in the image" >&2; status=1; }; }
check "the dependency collections are installed" ansible-galaxy collection list --format yaml
if ! "${python}" -c '
import sys, yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements
installed = {}
for path in yaml.safe_load(sys.stdin).values():
    installed.update({name: info["version"] for name, info in path.items()})
for req in yaml.safe_load(open(sys.argv[1]))["collections"]:
    have = installed.get(req["name"])
    if have is None or not meets_requirements(have, req["version"]):
        sys.exit("{} {} does not meet {}".format(req["name"], have, req["version"]))
if "gpufabric.rollout" not in installed:
    sys.exit("gpufabric.rollout is not installed")
print("     " + ", ".join(f"{k} {v}" for k, v in sorted(installed.items())))
' "${repo}/meta/ee-collections.yml" <<<"${out}"; then
    status=1
fi
check "the Python dependencies import" python3 -c 'import ansible_runner, kubernetes, netaddr, jmespath, matplotlib, yaml; print(kubernetes.__version__, netaddr.__version__, matplotlib.__version__)' &&
    echo "     kubernetes, netaddr, matplotlib: ${out}"
# Every Python distribution in the image is one the lock pins, at the lock's version (pip, which the
# base image brings, excepted): nothing reached it without its hash checked.
if check "every Python package is the lock's, hash-checked" python3 -m pip list --format json --disable-pip-version-check; then
    if ! "${python}" -c '
import json, re, sys
pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", open(sys.argv[1]).read(), re.M))
pins = {re.sub(r"[-_.]+", "-", k).lower(): v for k, v in pins.items()}
found = {re.sub(r"[-_.]+", "-", d["name"]).lower(): d["version"] for d in json.loads(sys.stdin.read())}
odd = sorted(f"{n} {v} (lock: {pins.get(n)})" for n, v in found.items() if n != "pip" and pins.get(n) != v)
if odd:
    sys.exit("not from the lock: " + ", ".join(odd))
print("     %d packages, all pinned with hashes in meta/ee-requirements.lock" % (len(found) - ("pip" in found)))
' "${repo}/meta/ee-requirements.lock" <<<"${out}"; then
        status=1
    fi
fi
check "Helm 3.17 is on PATH" helm version --short && { grep -q '^v3\.17\.' <<<"${out}" || { echo "FAIL helm ${out}" >&2; status=1; }; }
check "ssh, sshpass and git are installed" sh -c 'ssh -V 2>&1 && command -v sshpass && git --version'
if check "ansible-core and ansible-runner at the pinned versions" sh -c 'ansible --version | head -1; ansible-runner --version'; then
    if ! grep -q 'core 2.21.5' <<<"${out}" || [[ "$(tail -n 1 <<<"${out}")" != "2.4.3" ]]; then
        echo "FAIL versions: ${out}" >&2
        status=1
    fi
fi
check "the collection's filter runs in the image" ansible localhost -m ansible.builtin.debug \
    -a "msg={{ [{'identifier': 'a', 'stage': 's'}] | gpufabric.rollout.awx_workflow_nodes({'s': 'T'}, 'O') | map(attribute='unified_job_template.name') }}" &&
    { grep -q '"T"' <<<"${out}" || { echo "FAIL filter output: ${out}" >&2; status=1; }; }

size="$(podman image inspect --format '{{.Size}}' "${image}")"
echo "execution environment: ${how}: ${build_seconds} s (all steps $(( $(date +%s) - started )) s), image $(( size / 1024 / 1024 )) MiB"
exit "${status}"
