#!/usr/bin/env bash
# Sets up both engine environments if needed and runs both test suites:
# the vLLM suite in .venv-vllm, the SGLang suite in .venv-sglang.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
status=0
bash scripts/setup_vllm.sh || exit 1
"${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python" -m pytest tests -q -p no:cacheprovider --ignore=tests/sglang "$@" || status=1
if [[ -f scripts/setup_sglang.sh && -d tests/sglang ]]; then
  bash scripts/setup_sglang.sh || exit 1
  "${INPROC_SGLANG_VENV:-$repo/.venv-sglang}/bin/python" -m pytest tests/sglang -q -p no:cacheprovider "$@" || status=1
fi
exit $status
