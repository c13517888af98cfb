#!/usr/bin/env bash
# The README's test command: sets up the engine environments if needed and runs the tests that
# fit in 20 minutes on a fresh clone of 2 cores: the fast tier and the vLLM engine tier in
# .venv-vllm, then in .venv-sglang the SGLang-named tests and the engine tier less the tests
# marked engine_free (their children build no engine, so the vLLM venv's run of them is the one
# that counts; a test for the other engine skips; the SGLang-only tests live in
# tests/engines/sglang). The tests marked `long` (bisects, sweeps, kills and multi-node runs of
# many children), the nightly job's CPU variant and the oldest vLLM's smoke run are
# scripts/test_long.sh's; CI (.ci/run) runs both scripts. Each engine tier sets
# INPROC_REQUIRE_ENGINE, so a venv that lost its engine fails the tier at once instead of
# skipping every test; the fast tier needs no engine.
# INPROC_TEST_SLOWDOWN=burn runs both engine tiers as on a slower machine: bound to one CPU shared
# with two CPU burners (python -m tests.slowed), each step takes about three times as long.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/test_common.sh
status=0
# The SGLang environment is made meanwhile, beside the vLLM one and the fast tier (a fresh clone's
# set-up is mostly unpacking wheels); its output is printed once it is done.
sglang_setup="$(mktemp /tmp/inproc-setup-sglang-bg.XXXXXX)"
bash scripts/setup_sglang.sh >"$sglang_setup" 2>&1 &
sglang_pid=$!
bash scripts/setup_vllm.sh || { wait "$sglang_pid"; exit 1; }
# The fast tier (no engine built, no inproc started: pytest -m "not engine") runs once, here.
"$VLLM_PY" -m pytest tests -q -p no:cacheprovider --ignore=tests/engines/sglang -m "not engine" "$@" || status=1
if ! wait "$sglang_pid"; then cat "$sglang_setup" >&2; echo "the SGLang environment's set-up failed" >&2; exit 1; fi
cat "$sglang_setup"
# Then the engine tier in each engine's venv (the SGLang venv also runs the tests named for SGLang).
INPROC_REQUIRE_ENGINE=vllm engine_tier "$VLLM_PY" -m pytest tests -q -p no:cacheprovider --ignore=tests/engines/sglang \
  -m "engine and not long" "$@" || status=1
INPROC_REQUIRE_ENGINE=sglang engine_tier "$SGLANG_PY" -m pytest tests -q -p no:cacheprovider \
  -m "(sglang or (engine and not engine_free)) and not long" "$@" || status=1
exit $status
