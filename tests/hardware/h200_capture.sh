#!/usr/bin/env bash
# Step 1 on the real GPU server: capture the h200-real snapshot with playbooks/snapshot.yml and
# the references discovery is compared against (nvidia-smi, lspci, NCCL's topology dump).
# Usage (repo root, wheels for ansible-core in WHEELS): tests/hardware/h200_capture.sh OUTDIR WHEELS
set -euo pipefail
out="${1:?OUTDIR}"; wheels="${2:?WHEELS}"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8
mkdir -p "${out}"
deps="$(mktemp -d)"
python3 -m pip install -q --no-index --no-deps --target "${deps}" "${wheels}"/*.whl
export PYTHONPATH="${deps}" PATH="${deps}/bin:${PATH}"
ansible-playbook -i localhost, -c local -e snapshot_hosts=localhost -e "snapshot_dest=${out}" \
    -e "ansible_python_interpreter=$(command -v python3)" playbooks/snapshot.yml > "${out}/snapshot-play.log" 2>&1 \
    || { tail -30 "${out}/snapshot-play.log"; exit 1; }
mv "${out}/localhost.tar.gz" "${out}/h200-real.tar.gz"
nvidia-smi topo -m > "${out}/nvidia-smi-topo-m.txt" 2>&1 || true
nvidia-smi -q > "${out}/nvidia-smi-q.txt" 2>&1 || true
nvidia-smi --query-gpu=index,pci.bus_id,name,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv > "${out}/nvidia-smi-gpus.csv" 2>&1 || true
nvidia-smi nvlink -s > "${out}/nvidia-smi-nvlink-s.txt" 2>&1 || true
(lspci -tv; echo; lspci -vvv -nn) > "${out}/lspci.txt" 2>&1 || true
uname -a > "${out}/uname.txt"; cat /proc/driver/nvidia/version >> "${out}/uname.txt" 2>/dev/null || true
NCCL_TOPO_DUMP_FILE="${out}/nccl-topo.xml" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH \
    timeout 240 python3 tests/hardware/nccl_dump.py > "${out}/nccl-run.log" 2>&1 || echo "nccl run failed (see nccl-run.log)"
grep -E "busbw|error|Error" "${out}/nccl-run.log" | head -5 || true
ls -la "${out}"
