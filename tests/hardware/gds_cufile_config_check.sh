#!/usr/bin/env bash
# Run the cufile_config module (directly, as Ansible would, via an args file) on a COPY of this
# host's /etc/cufile.json: first with values equal to the file's (must be a byte-identical
# no-op), then with changes (only the requested keys may differ). Needs python3 with
# ansible.module_utils and the collection on PYTHONPATH.
# Usage: tests/hardware/gds_cufile_config_check.sh WORKDIR
set -euo pipefail
work="${1:?usage: gds_cufile_config_check.sh WORKDIR}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "${work}"
src="${CUFILE_SRC:-/etc/cufile.json}"
cp "${src}" "${work}/original.json"
cp "${src}" "${work}/cufile.json"
module="${here}/plugins/modules/cufile_config.py"

args() { printf '{"ANSIBLE_MODULE_ARGS": %s}\n' "$1" >"${work}/args.json"; }

echo "== no-op: compat on, p2pdma off, empty rdma_dev_addr_list (the shipped values)"
args "{\"path\": \"${work}/cufile.json\", \"compat_mode\": true, \"use_pci_p2pdma\": false, \"rdma_dev_addr_list\": []}"
python3 "${module}" "${work}/args.json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("changed:", r["changed"], "changed_keys:", r["changed_keys"])'
cmp "${work}/original.json" "${work}/cufile.json" && echo "byte-identical: yes"
sha256sum "${work}/original.json" "${work}/cufile.json"

echo "== change: force compat mode, rail addresses, NFS section, log level"
args "{\"path\": \"${work}/cufile.json\", \"compat_mode\": true, \"force_compat_mode\": true, \"rdma_dev_addr_list\": [\"10.0.0.11\", \"10.0.1.11\"], \"filesystems\": {\"nfs\": {\"rdma_dev_addr_list\": [\"10.0.0.11\"]}}, \"settings\": {\"logging\": {\"level\": \"INFO\"}}}"
python3 "${module}" "${work}/args.json" >"${work}/result.json"
python3 - "${work}" <<'PY'
import json, sys

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
work = sys.argv[1]
result = json.load(open(f"{work}/result.json"))
before = _cufile.parse(open(f"{work}/original.json").read())
after = _cufile.parse(open(f"{work}/cufile.json").read())
def flat(d, p=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, p + k + "."))
        else:
            out[p + k] = v
    return out
fb, fa = flat(before), flat(after)
differ = sorted(k for k in set(fb) | set(fa) if fb.get(k, "<absent>") != fa.get(k, "<absent>"))
print("changed:", result["changed"], "changed_keys:", result["changed_keys"])
print("keys that differ when parsed:", differ)
print("only requested keys changed:", differ == sorted(result["changed_keys"]))
PY
diff -u "${work}/original.json" "${work}/cufile.json" || true
echo "== again with the same arguments (idempotence)"
python3 "${module}" "${work}/args.json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("changed:", r["changed"])'
