#!/usr/bin/env bash
# The main job on the embedded CPU default: set up if needed, then run the matrix.
# Extra arguments go to 'inproc run' (e.g. --duration 2, --out results/x.json).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/setup_vllm.sh"
cd "$repo"
exec "${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/inproc" run launch_profiles/cpu-vllm-tiny-llama.toml "$@"
