#!/usr/bin/env bash
# Sets up both engine environments if needed and runs both test suites:
# the vLLM suite in .venv-vllm (then the nightly job's CPU variant), then everything again
# in .venv-sglang (engine tests skip where their engine is missing; the SGLang-only tests
# live in tests/engines/sglang).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
status=0
bash scripts/setup_vllm.sh || exit 1
"${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python" -m pytest tests -q -p no:cacheprovider --ignore=tests/engines/sglang "$@" || status=1
# The nightly job's commands (run, baseline, compare, the reports) on a tiny CPU matrix, so the
# GPU workflow's commands cannot rot: two tiny runs, about a minute on 2 cores (mostly engine start).
INPROC="${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python -m inproc" bash scripts/nightly.sh cpu || status=1
if [[ -f scripts/setup_sglang.sh && -d tests/engines/sglang ]]; then
  bash scripts/setup_sglang.sh || exit 1
  "${INPROC_SGLANG_VENV:-$repo/.venv-sglang}/bin/python" -m pytest tests -q -p no:cacheprovider "$@" || status=1
fi
exit $status
