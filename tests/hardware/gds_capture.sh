#!/usr/bin/env bash
# Capture what the gpudirect roles decide from on a real GPU server: driver flavour and
# version, kernel, CUDA, GPU model, peermem/nvidia-fs module state, IOMMU, the shipped
# cufile.json and `gdscheck -p`. Read-only. Usage: tests/hardware/gds_capture.sh OUTDIR
set -uo pipefail
out="${1:?usage: gds_capture.sh OUTDIR}"
mkdir -p "${out}"
run() { local name="$1"; shift; { echo "\$ $*"; timeout 60 "$@" 2>&1; echo "[rc=$?]"; } >"${out}/${name}.txt"; }
export LC_ALL=C
run uname uname -a
run proc_version cat /proc/driver/nvidia/version
run modinfo_nvidia modinfo nvidia
run modinfo_peermem modinfo nvidia-peermem
run modinfo_nvidia_fs modinfo nvidia-fs
run lsmod lsmod
run nvidia_smi nvidia-smi
run nvidia_smi_query nvidia-smi --query-gpu=name,pci.bus_id,driver_version,compute_cap --format=csv
run cmdline cat /proc/cmdline
run iommu_groups ls /sys/kernel/iommu_groups
run cuda_version cat /usr/local/cuda/version.json
run gds_dir ls -la /usr/local/cuda/gds /usr/local/cuda/gds/tools
run os_release cat /etc/os-release
run ulimit_l bash -c 'ulimit -l; cat /etc/security/limits.conf | grep -v "^#" ; ls /etc/security/limits.d'
run sys_module_peermem ls /sys/module/nvidia_peermem /sys/module/nvidia_fs /proc/driver/nvidia-fs
run dpkg_gds bash -c 'dpkg -l | grep -Ei "gds|cufile|nvidia-fs|nvidia-driver|cuda-toolkit|libnvidia-compute|peermem" | head -40'
for g in /usr/local/cuda/gds/tools/gdscheck /usr/local/cuda/gds/tools/gdscheck.py; do
    [[ -x "${g}" ]] && run "gdscheck_$(basename "${g}")" "${g}" -p
done
for f in /etc/cufile.json /usr/local/cuda/gds/cufile.json; do
    [[ -f "${f}" ]] && cp "${f}" "${out}/$(echo "${f#/}" | tr / _)"
done
python3 -c 'import cuda.bindings, cuda.bindings.cufile as c; print(cuda.bindings.__version__, c.get_version())' >"${out}/cuda_bindings.txt" 2>&1
exit 0
