# Sourced by scripts/test.sh and scripts/test_long.sh: the venvs' interpreters and the engine tier's runner.
VLLM_PY="${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python"
SGLANG_PY="${INPROC_SGLANG_VENV:-$repo/.venv-sglang}/bin/python"
case "${INPROC_TEST_SLOWDOWN:-}" in
  ""|burn) ;;
  *) echo "INPROC_TEST_SLOWDOWN=${INPROC_TEST_SLOWDOWN}: give burn, or leave it unset" >&2; exit 2 ;;
esac
# An engine tier's interpreter (first argument) with the rest, slowed where INPROC_TEST_SLOWDOWN=burn.
engine_tier() {
  local py="$1"; shift
  if [[ "${INPROC_TEST_SLOWDOWN:-}" == burn ]]; then "$py" -m tests.slowed -- "$py" "$@"; else "$py" "$@"; fi
}
