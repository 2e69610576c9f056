#!/usr/bin/env bash
# Step 2 on the real GPU server: run the topology role there (sysroot /, nvidia-smi live), let
# NCCL dump its own topology, and compare both with tests/hardware/compare_topology.py.
# Usage (repo root): tests/hardware/h200_compare.sh OUTDIR WHEELS
set -euo pipefail
out="${1:?OUTDIR}"; wheels="${2:?WHEELS}"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8
mkdir -p "${out}"
deps="$(mktemp -d)"; coll="$(mktemp -d)"
python3 -m pip install -q --no-index --no-deps --target "${deps}" "${wheels}"/*.whl
mkdir -p "${coll}/ansible_collections/gpufabric"
ln -s "$(pwd)" "${coll}/ansible_collections/gpufabric/rollout"
export PYTHONPATH="${deps}" PATH="${deps}/bin:${PATH}" ANSIBLE_COLLECTIONS_PATH="${coll}" GPUFABRIC_COLLECTIONS="${coll}"
ansible-playbook -i localhost, -e "ansible_python_interpreter=$(command -v python3)" \
    -e "topology_report_dir=${out}/role" tests/hardware/topology_play.yml > "${out}/role-play.log" 2>&1 \
    || { tail -40 "${out}/role-play.log"; exit 1; }
NCCL_TOPO_DUMP_FILE="${out}/nccl-topo-dump.xml" timeout 240 python3 tests/hardware/nccl_dump.py > "${out}/nccl-run.log" 2>&1 \
    || { tail -20 "${out}/nccl-run.log"; exit 1; }
python3 tests/hardware/compare_topology.py --facts "${out}/role/topology.json" --xml "${out}/role/nccl-topo.xml" \
    --nccl-dump "${out}/nccl-topo-dump.xml" --out "${out}/compare.json" | tee "${out}/compare.txt"
