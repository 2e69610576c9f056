#!/usr/bin/env bash
# Build the collection tarball, install it into a scratch path outside the checkout, and check
# that ansible-doc serves every module and filter from the installed copy (not the checkout).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpufabric-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT

cd "${repo}"
ansible-galaxy collection build --force --output-path "${work}/dist" >/dev/null
tarball="$(ls "${work}"/dist/gpufabric-rollout-*.tar.gz)"
echo "built $(basename "${tarball}") ($(du -k "${tarball}" | cut -f1) KiB)"

# Nothing a user must not receive.
if tar -tzf "${tarball}" | grep -E '^(\.collections|\.venv|\.lab|\.tools|molecule|lab|tests/output|\.git)(/|$)'; then
    echo "the tarball carries development-only paths (see build_ignore in galaxy.yml)" >&2
    exit 1
fi

cd "${work}"   # outside the checkout, so its ansible.cfg is not in play
env -u ANSIBLE_CONFIG ansible-galaxy collection install --no-deps --force -p "${work}/installed" "${tarball}" >/dev/null
listing="$(env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="${work}/installed" ansible-doc -l gpufabric.rollout 2>&1)"
filters="$(env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="${work}/installed" ansible-doc -t filter -l gpufabric.rollout 2>&1 || true)"
status=0
for m in "${repo}"/plugins/modules/*.py; do
    [[ -e "$m" ]] || continue
    name="gpufabric.rollout.$(basename "$m" .py)"
    if ! grep -q "^${name} " <<<"${listing}"; then
        echo "ansible-doc does not list ${name} from the installed collection" >&2
        status=1
    fi
done

# The snapshot playbook runs from the installed collection (its capture script ships with it):
# re-capture an unpacked lab snapshot through it and discover the result with the installed
# topology_facts. An 8-GPU, 10-NIC node must come back as such.
installed=(env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="${work}/installed")
python3 "${repo}/lab/snapshots/build.py" dgx-h200-8x8 "${work}/source.tar.gz" >/dev/null
local_python=(-i "localhost," -c local -e "ansible_python_interpreter=$(command -v python3)")
mkdir "${work}/source" "${work}/captured"
tar -xzf "${work}/source.tar.gz" -C "${work}/source"
if ! "${installed[@]}" ansible-playbook gpufabric.rollout.snapshot "${local_python[@]}" \
    -e snapshot_hosts=localhost -e "snapshot_root=${work}/source" -e snapshot_nvidia_smi=false \
    -e "snapshot_dest=${work}/snapshots" -e "snapshot_python=$(command -v python3)" >"${work}/snapshot.log" 2>&1; then
    cat "${work}/snapshot.log" >&2
    echo "the installed gpufabric.rollout.snapshot playbook failed" >&2
    exit 1
fi
tar -xzf "${work}/snapshots/localhost.tar.gz" -C "${work}/captured"
found="$("${installed[@]}" ansible localhost "${local_python[@]}" -m gpufabric.rollout.topology_facts \
    -a "sysroot=${work}/captured" 2>/dev/null | sed '1s/^localhost | SUCCESS => //' \
    | python3 -c 'import json,sys; t=json.load(sys.stdin)["ansible_facts"]["gpufabric_topology"]; print(len(t["gpus"]), len(t["nics"]))' || true)"
if [[ "${found}" != "8 10" ]]; then
    echo "discovery on the snapshot captured by the installed playbook found '${found}' GPUs/NICs, expected '8 10'" >&2
    status=1
else
    echo "the installed snapshot playbook captured a node that discovery reads back (8 GPUs, 10 NICs)"
fi

# The main job runs by its collection name from the installed copy: every playbook it imports and
# every role it names resolve there (list-tasks expands the imports and the static role tasks).
if ! "${installed[@]}" ansible-playbook gpufabric.rollout.site -i "${repo}/inventory/example" --list-tasks \
    >"${work}/site-tasks.log" 2>&1; then
    cat "${work}/site-tasks.log" >&2
    echo "ansible-playbook gpufabric.rollout.site does not load from the installed collection" >&2
    status=1
else
    echo "gpufabric.rollout.site loads from the installed collection ($(grep -c 'TAGS:' "${work}/site-tasks.log") tasks listed)"
fi

count="$(grep -c '^gpufabric\.rollout\.' <<<"${listing}" || true)"
echo "ansible-doc lists ${count} module(s) and $(grep -c '^gpufabric\.rollout\.' <<<"${filters}" || true) filter(s) from the installed collection"
exit "${status}"
