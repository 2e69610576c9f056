#!/usr/bin/env bash
# Point 6 of issue 6 on a real GPU server, read-only for the host: (1) the DMA-BUF/peermem
# decision on the host's real facts, (2) cufile_config on a copy of its /etc/cufile.json,
# (3) a file read into GPU memory through cuFile, with the shipped and with the edited config,
# and cuFile's own platform report (cufile.log) parsed by the gdscheck parser.
# Needs: python3, cuda.bindings (for 3), ansible.module_utils on PYTHONPATH (a copy of
# ansible-core's lib/ansible/module_utils is enough). Usage: gds_real_server.sh OUTDIR
set -uo pipefail
out="${1:?usage: gds_real_server.sh OUTDIR}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
coll="$(mktemp -d)"
mkdir -p "${coll}/ansible_collections/gpufabric" "${out}"
ln -s "${repo}" "${coll}/ansible_collections/gpufabric/rollout"
export PYTHONPATH="${coll}${PYTHONPATH:+:${PYTHONPATH}}" NCCL_NVLS_ENABLE=0
echo "### decision" && python3 "${repo}/tests/hardware/gds_decision.py" / >"${out}/decision.json" 2>&1; cat "${out}/decision.json" | head -c 3000
echo "### cufile_config" && bash "${repo}/tests/hardware/gds_cufile_config_check.sh" "${out}/config" 2>&1 | tee "${out}/cufile_config.txt"
# cuFile looks up the filesystem's udev properties (ID_FS_USAGE) before registering a file, even
# in compat mode. A VM without udevd has no udev database, and registration then fails with
# HANDLE_NOT_REGISTERED. GDS_SEED_UDEV=1 writes the one entry udevd would have written for the
# test directory's block device (only if none exists) and removes it afterwards.
seeded=""
if [[ "${GDS_SEED_UDEV:-0}" == 1 ]]; then
    mkdir -p "${out}/io"
    majmin="$(findmnt -no MAJ:MIN -T "${out}/io" | tr -d ' ')"
    fstype="$(findmnt -no FSTYPE -T "${out}/io")"
    entry="/run/udev/data/b${majmin}"
    if [[ -n "${majmin}" && ! -e "${entry}" ]]; then
        mkdir -p /run/udev/data
        printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "${fstype}" >"${entry}" && seeded="${entry}"
        echo "### seeded ${entry} (${fstype})"
    fi
fi
for cfg in shipped edited; do
    json=/etc/cufile.json; [[ "${cfg}" == edited ]] && json="${out}/config/cufile.json"
    for dir in "${out}/io" /dev/shm; do
        tag="${cfg}-$(basename "${dir}")"; mkdir -p "${out}/read-${tag}" "${dir}"
        sed 's/"level": "ERROR"/"level": "INFO"/' "${json}" >"${out}/read-${tag}/cufile.json"
        ( cd "${out}/read-${tag}" && CUFILE_ENV_PATH_JSON="${out}/read-${tag}/cufile.json" timeout 120 \
            python3 "${repo}/tests/hardware/gds_cufile_read.py" "${dir}" --size-mib 1024 >result.json 2>stderr.txt
          echo "### read ${tag}: rc=$?"; cat result.json; tail -n 1 stderr.txt
          python3 -c 'import json,sys
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as g
f = g.parse(open("cufile.log").read()); f.pop("other")
print(json.dumps({k: f[k] for k in ("gds_release", "libcufile_version", "nvidia_fs_loaded", "compat_mode", "open_driver", "iommu_enabled", "verification")}), "force_compat:", f["config"].get("properties.force_compat_mode"))' 2>&1 )
    done
done
[[ -n "${seeded}" ]] && rm -f "${seeded}"
rm -rf "${coll}"
