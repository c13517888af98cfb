#!/usr/bin/env bash
# Every GPU-side check (the engine checks on transformers, which the GPU machine has), in at most 8 minutes, into one JSON file:
#   bash scripts/gpu_check.sh [OUT.json]        (default gpu_check.json)
# Needs CUDA torch and nvidia-ml-py; PYTHON picks the interpreter (default python3).
# Exit 0: every check passed; 1: one failed (the file says which); 2: it cannot run here (one line, no file).
# The checks are described in scripts/gpu/gpu_check.py.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# The script keeps to its own 8-minute budget; timeout only stops a hang past it.
exec env PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" timeout -k 10 500 "${PYTHON:-python3}" scripts/gpu/gpu_check.py "$@"
