#!/usr/bin/env bash
# Node-local acceptance probes on a real GPU machine, parsed with the project's own parsers.
#
#   bash bench/device_accept.sh            # on the device tool's machine, from the repository root
#
# Runs the probes of ansible/playbooks/accept.yml (listed in ansible/roles/node_acceptance/vars/main.yml;
# plus the GPUs' own lspci entries and versions), each under its own timeout so the whole script stays
# under 6 minutes, keeps every raw output and exit status under $OUT/raw/, writes $OUT/observations.json
# in the acceptance playbook's contract and prints what gpucluster.accept's parsers read from each output
# (bench/device_accept_report.py, standard library only: the device has no project venv). Commit the raw
# outputs as parser samples with their provenance (tests/accept/samples/PROVENANCE.md).
#
# Environment: OUT (default build/device-accept), DCGM_LEVEL (default 2), NCCL_TESTS (directory
# holding a built all_reduce_perf; the probe is recorded as not installed without one).
set -uo pipefail

OUT=${OUT:-build/device-accept}
DCGM_LEVEL=${DCGM_LEVEL:-2}
NCCL_TESTS=${NCCL_TESTS:-/opt/nccl-tests/build}
RAW="$OUT/raw"
mkdir -p "$RAW"
started=$SECONDS

probe() {  # probe NAME SECONDS COMMAND...: run under a timeout, keep stdout, stderr and rc
  local name=$1 limit=$2
  shift 2
  timeout --kill-after=5 "$limit" bash -c "$*" >"$RAW/$name.stdout" 2>"$RAW/$name.stderr"
  echo $? >"$RAW/$name.rc"
  printf '%-18s rc %-3s %4ss  %s\n' "$name" "$(cat "$RAW/$name.rc")" "$((SECONDS - started))" "$*"
}

probe nvidia_smi_xml 60 "nvidia-smi -q -x"
probe nvidia_smi_nvlink 30 "nvidia-smi nvlink -s"
probe fabricmanager 10 "systemctl is-active nvidia-fabricmanager"
probe ibstat 20 "ibstat"
probe lsmod 10 "lsmod"
probe lspci_hca 20 "lspci -vv -d 15b3:"
probe lspci_gpu 20 "lspci -vv -d 10de:"
probe versions 20 "nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv; uname -r; grep -E '^(ID|VERSION_ID)=' /etc/os-release; dcgmi --version 2>/dev/null | head -3"
probe dcgm_diag 150 "dcgmi diag -r $DCGM_LEVEL -j"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "${gpus:-0}" -ge 1 ] || gpus=1
probe nccl_single 90 "$NCCL_TESTS/all_reduce_perf -b 1G -e 1G -f 2 -g $gpus"

echo "probes took $((SECONDS - started)) s; raw outputs in $RAW"
python3 "$(dirname "$0")/device_accept_report.py" "$OUT"
