#!/usr/bin/env bash
# The read-only audit (playbooks/audit.yml) on a real GPU server, as a user runs it there: a local
# connection, no inventory, then again with the example fabric intent (the plan's refusals and the
# unreadable package index become findings). The reports and logs go to OUTDIR.
# Usage (repo root, on the server): tests/hardware/h200_audit.sh OUTDIR WHEELS
#   WHEELS: ansible-core and its dependencies as wheels for the server's Python (it has no network).
set -euo pipefail
out="${1:?OUTDIR}"; wheels="${2:?WHEELS}"
export NCCL_NVLS_ENABLE=0 LC_ALL=C.UTF-8 LANG=C.UTF-8
mkdir -p "${out}/plain" "${out}/intent"
deps="$(mktemp -d)"
python3 -m pip install -q --no-index --no-deps --target "${deps}" "${wheels}"/*.whl
mkdir -p .collections/ansible_collections/gpufabric
ln -sfn ../../.. .collections/ansible_collections/gpufabric/rollout
export PYTHONPATH="${deps}" PATH="${deps}/bin:${PATH}"
py="$(command -v python3)"
python3 --version > "${out}/python.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' >> "${out}/python.txt" 2>&1 || true
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv > "${out}/nvidia-smi.csv" 2>&1 || true
start=${SECONDS}
rc=0
ansible-playbook -i 'localhost,' -c local -e "ansible_python_interpreter=${py}" \
    -e "audit_report_dir=${out}/plain" playbooks/audit.yml > "${out}/plain/run.log" 2>&1 || rc=$?
echo "plain: rc=${rc} in $((SECONDS - start)) s" | tee "${out}/summary.txt"
start=${SECONDS}
rc=0
ansible-playbook -i 'localhost,' -c local -e "ansible_python_interpreter=${py}" \
    -e @inventory/example/group_vars/all/fabric.yml \
    -e '{"doca_ofed_gpg_key_fingerprints": ["0123456789ABCDEF0123456789ABCDEF01234567"]}' \
    -e "audit_report_dir=${out}/intent" playbooks/audit.yml > "${out}/intent/run.log" 2>&1 || rc=$?
echo "intent: rc=${rc} in $((SECONDS - start)) s" | tee -a "${out}/summary.txt"
tail -25 "${out}/plain/run.log"
