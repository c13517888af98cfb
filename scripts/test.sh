#!/usr/bin/env bash
# Sets up both engine environments if needed and runs every test once: the fast tier and the
# vLLM engine tier in .venv-vllm (then the nightly job's CPU variant), then in .venv-sglang the
# SGLang-named tests and the engine tier less the tests marked engine_free (their children build
# no engine, so the vLLM venv's run of them is the one that counts; a test for the other engine
# skips; the SGLang-only tests live in tests/engines/sglang). Each engine tier sets INPROC_REQUIRE_ENGINE, so a venv that lost
# its engine fails the tier at once instead of skipping every test; the fast tier needs no engine.
# INPROC_TEST_SLOWDOWN=burn runs both engine tiers as on a slower machine: bound to one CPU shared
# with two CPU burners (python -m tests.slowed), each step takes about three times as long.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
status=0
case "${INPROC_TEST_SLOWDOWN:-}" in
  ""|burn) ;;
  *) echo "INPROC_TEST_SLOWDOWN=${INPROC_TEST_SLOWDOWN}: give burn, or leave it unset" >&2; exit 2 ;;
esac
# An engine tier's interpreter (first argument) with the rest, slowed where INPROC_TEST_SLOWDOWN=burn.
engine_tier() {
  local py="$1"; shift
  if [[ "${INPROC_TEST_SLOWDOWN:-}" == burn ]]; then "$py" -m tests.slowed -- "$py" "$@"; else "$py" "$@"; fi
}
bash scripts/setup_vllm.sh || exit 1
# The fast tier (no engine built, no inproc started: pytest -m "not engine") runs once, here;
# then the engine tier in each engine's venv (the SGLang venv also runs the tests named for SGLang).
"${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python" -m pytest tests -q -p no:cacheprovider --ignore=tests/engines/sglang -m "not engine" "$@" || status=1
INPROC_REQUIRE_ENGINE=vllm engine_tier "${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python" -m pytest tests -q -p no:cacheprovider --ignore=tests/engines/sglang -m engine "$@" || status=1
# The nightly job's commands (run, baseline, compare, the reports) on a tiny CPU matrix, so the
# GPU workflow's commands cannot rot: two tiny runs, about a minute on 2 cores (mostly engine start).
INPROC="${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python -m inproc" bash scripts/nightly.sh cpu || status=1
# The oldest vLLM the adapter is measured on (0.30.0), in its own venv: one tiny cell must run and
# count tokens. Its setup takes a few minutes once (INPROC_VLLM_OLD_VENV, default .venv-vllm-0.30).
old="${INPROC_VLLM_OLD_VENV:-$repo/.venv-vllm-0.30}"
INPROC_VLLM_OLD_VENV="$old" bash scripts/setup_vllm_old.sh || exit 1
smoke="$(mktemp -d /tmp/inproc-old-vllm.XXXXXX)"
if PYTHONPATH="$repo" "$old/bin/python" -m inproc cell launch_profiles/cpu-vllm-tiny-llama.toml --context 256 \
     --concurrency 2 --duration 1 --max-output 32 --out "$smoke/cell.json" >"$smoke/log" 2>&1 \
   && "$old/bin/python" -c "import json, sys; (c,) = json.load(open(sys.argv[1]))['decode']; sys.exit(c['output_tokens'] <= 0)" \
        "$smoke/cell.json"; then
  echo "oldest vLLM ($("$old/bin/python" -c 'import vllm; print(vllm.__version__)' 2>/dev/null)): a tiny cell ran and counted tokens"
else
  tail -n 20 "$smoke/log" >&2; echo "oldest vLLM: the smoke cell failed (log: $smoke/log)" >&2; status=1
fi
if [[ -f scripts/setup_sglang.sh && -d tests/engines/sglang ]]; then
  bash scripts/setup_sglang.sh || exit 1
  INPROC_REQUIRE_ENGINE=sglang engine_tier "${INPROC_SGLANG_VENV:-$repo/.venv-sglang}/bin/python" -m pytest tests -q -p no:cacheprovider -m "sglang or (engine and not engine_free)" "$@" || status=1
fi
exit $status
