#!/usr/bin/env bash
# The long engine tests (marked `long`): each runs many `inproc` children or waits out a watchdog
# (a bisect over a plugin repository, killed, resumed under load and mapped; a bisect of a plant of
# about a sixth of a step; sweeps killed and resumed; two-node runs; a cell killed with SIGKILL and
# resumed), minutes apiece; the mutation scores of the verdict modules a change touched; then the nightly
# job's CPU variant and the oldest vLLM's smoke run.
# The README's test command leaves them out to stay within 20 minutes; CI (.ci/run) runs this after
# it, as should a developer changing bisect, sweeps, multi-node or resume. Extra arguments go to pytest; INPROC_TEST_SLOWDOWN as in
# scripts/test.sh.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/test_common.sh
status=0
bash scripts/setup_vllm.sh || exit 1
INPROC_REQUIRE_ENGINE=vllm engine_tier "$VLLM_PY" -m pytest tests -q -p no:cacheprovider --ignore=tests/engines/sglang \
  -m "long" "$@" || status=1
bash scripts/setup_sglang.sh || exit 1
INPROC_REQUIRE_ENGINE=sglang engine_tier "$SGLANG_PY" -m pytest tests -q -p no:cacheprovider \
  -m "long and (sglang or not engine_free)" "$@" || status=1
# The mutation scores (scripts/mutation.sh) of the verdict modules whose code or tests changed since
# docs/mutation-scores.tsv was last committed: each must keep >= 85 % of its mutants killed.
mutated="$(bash scripts/mutation.sh --changed --list | grep -E '^[a-z_]+/[a-z_]+$')" || true
if [[ -n "$mutated" ]]; then bash scripts/mutation.sh --min 85 $mutated || status=1
else echo "mutation: no verdict module or its tests changed since docs/mutation-scores.tsv; nothing to run"; fi
# The nightly job's commands (run, baseline, compare, the reports) on a tiny CPU matrix, so the
# GPU workflow's commands cannot rot: two tiny runs, about a minute on 2 cores (mostly engine start).
INPROC="$VLLM_PY -m inproc" bash scripts/nightly.sh cpu || status=1
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
exit $status
