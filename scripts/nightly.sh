#!/usr/bin/env bash
# The nightly regression check, on any machine: run a profile, compare the run against a
# baseline, write the reports (and the GitHub job summary when $GITHUB_STEP_SUMMARY is set).
# .github/workflows/nightly-gpu.yml calls exactly these commands on a self-hosted GPU runner.
#
#   scripts/nightly.sh run PROFILE BASELINE OUTDIR [inproc run flags...]
#       inproc run -> OUTDIR/run.json; inproc compare BASELINE -> OUTDIR/compare.{txt,md,json}.
#       Exit code: compare's (0 every row judged and none regressed, 1 a regression, 3 no regression found but
#       rows could not be judged, named in the reports: disturbed, throttled, too few samples; 2 bad input or no
#       baseline). The reports are written for 0, 1 and 3.
#   scripts/nightly.sh baseline PROFILE RUNS BASELINE OUTDIR [inproc run flags...]
#       RUNS runs (each with its own prompt seed) -> OUTDIR/baseline-run-N.json, folded into BASELINE.
#   scripts/nightly.sh compare BASELINE NEW OUTDIR
#       Only the compare and the reports of "run", for a run made already.
#   scripts/nightly.sh history RUN STORE OUTDIR
#       Adds RUN's small summary to the folder STORE (one per night) and runs inproc history
#       over it -> OUTDIR/history.{txt,md,html}. Exit code: history's (1: the newest night
#       starts a regression; 3: it starts none, but a cell of it could not be judged, named in the
#       reports: disturbed or throttled; 0 also for the store's first night, which
#       has nothing to judge). The reports are written for 0, 1 and 3.
#   scripts/nightly.sh selftest OUTDIR [inproc selftest args...]
#       inproc selftest -> OUTDIR/selftest.json, before anything is measured: the adapter's
#       assumptions checked on tonight's engine build. A failure stops the job with its line
#       (also in the job summary). Exit 0 passed, 1 a check failed, 2 bad input.
#   scripts/nightly.sh cpu [OUTDIR]
#       The CPU variant (scripts/test_long.sh runs it, in CI): the selftest, a baseline of one tiny run of the default CPU
#       profile, a second run compared against it (each run is mostly the engine's 20-30 s start,
#       so two keep CI near a minute; the tests cover baselines of several runs). Passes when the
#       commands work and the reports are written: exit 0, 1 or 3 from compare pass (one run
#       against one run is judged against compare's --max-spread unless NIGHTLY_RUN_SPREAD is set; the tiny
#       1 s windows leave C = 1's TTFT with too few samples, exit 3), 2 fails.
#
# Environment: INPROC (the inproc command; default "python -m inproc" run from this checkout),
# NIGHTLY_THRESHOLD (default 5%), NIGHTLY_ALLOW_DIFFERENT (space-separated keys compare may
# accept as different; default engine.version: a nightly builds a new engine every night),
# NIGHTLY_RUN_SPREAD (compare's --run-spread, for a baseline of one run: without it such a
# compare calls only changes beyond what compare's --max-spread allows; a baseline of several
# runs learns the spread from its runs and needs none), NIGHTLY_RETRY_DISTURBED (inproc run's
# --retry-disturbed for every run; default 2: a cell measured while other work used the machine
# is measured again up to twice, and left out of the verdict if every try was disturbed).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
read -r -a inproc <<<"${INPROC:-python -m inproc}"
threshold="${NIGHTLY_THRESHOLD:-5%}"
retry=(--retry-disturbed "${NIGHTLY_RETRY_DISTURBED:-2}")
allow=()
for key in ${NIGHTLY_ALLOW_DIFFERENT-engine.version}; do allow+=(--allow-different "$key"); done

summary() {  # append Markdown to the job summary, if there is one
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat >>"$GITHUB_STEP_SUMMARY"; else cat >/dev/null; fi
}

compare_and_report() {  # BASELINE NEW OUTDIR -> compare's exit code
  local base="$1" new="$2" out="$3" rc=0
  local args=("$base" "$new" --threshold "$threshold" "${allow[@]}")
  [[ -z "${NIGHTLY_RUN_SPREAD:-}" ]] || args+=(--run-spread "$NIGHTLY_RUN_SPREAD")
  "${inproc[@]}" compare "${args[@]}" --format json -o "$out/compare.json" 2>"$out/compare.err" || rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 && $rc -ne 3 ]]; then
    cat "$out/compare.err" >&2
    printf '## inproc compare: could not compare\n\n```\n%s\n```\n' "$(cat "$out/compare.err")" | summary
    return "$rc"
  fi
  "${inproc[@]}" compare "${args[@]}" --format md -o "$out/compare.md" 2>/dev/null || true
  "${inproc[@]}" compare "${args[@]}" --format text -o "$out/compare.txt" 2>/dev/null || true
  cat "$out/compare.txt"
  summary <"$out/compare.md"
  return "$rc"
}

history_and_report() {  # RUN STORE OUTDIR -> history's exit code
  local run="$1" store="$2" out="$3" rc=0
  local args=("$store" "$run" --store "$store" --threshold "$threshold")
  compgen -G "$store/*.json" >/dev/null || args=("$run" --store "$store" --threshold "$threshold")  # the first night
  "${inproc[@]}" history "${args[@]}" --format md -o "$out/history.md" --html "$out/history.html" \
    2>"$out/history.err" >"$out/history.txt" || rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 && $rc -ne 3 ]]; then
    cat "$out/history.err" >&2
    printf '## inproc history: could not read the history\n\n```\n%s\n```\n' "$(cat "$out/history.err")" | summary
    return "$rc"
  fi
  [[ -s "$out/history.md" ]] || return "$rc"  # the first night: stored, nothing to judge yet
  "${inproc[@]}" history "$store" --threshold "$threshold" -o "$out/history.txt" 2>/dev/null || true
  cat "$out/history.txt"
  summary <"$out/history.md"
  return "$rc"
}

cmd_run() {  # PROFILE BASELINE OUTDIR [run flags...]
  local profile="$1" base="$2" out="$3"
  shift 3
  mkdir -p "$out"
  "${inproc[@]}" run "$profile" --out "$out/run.json" --force "${retry[@]}" "$@" || return $?
  if [[ ! -f "$base" ]]; then
    local msg="No baseline at $base: make one with 'scripts/nightly.sh baseline $profile 5 $base $out' (or inproc baseline RUN... -o $base)."
    echo "$msg" >&2
    printf '## inproc compare: no baseline\n\n%s\n' "$msg" | summary
    return 2
  fi
  compare_and_report "$base" "$out/run.json" "$out"
}

cmd_baseline() {  # PROFILE RUNS BASELINE OUTDIR [run flags...]
  local profile="$1" runs="$2" base="$3" out="$4"
  shift 4
  mkdir -p "$out"
  local files=()
  for ((i = 1; i <= runs; i++)); do
    "${inproc[@]}" run "$profile" --out "$out/baseline-run-$i.json" --force "${retry[@]}" "$@" || return $?
    files+=("$out/baseline-run-$i.json")
  done
  "${inproc[@]}" baseline "${files[@]}" -o "$base" --force
}

cmd_selftest() {  # OUTDIR [selftest args...]
  local out="$1" rc=0
  shift
  mkdir -p "$out"
  "${inproc[@]}" selftest "$@" --out "$out/selftest.json" >"$out/selftest.txt" 2>"$out/selftest.err" || rc=$?
  cat "$out/selftest.txt"
  if [[ $rc -ne 0 ]]; then
    local why
    why="$(grep -h -m1 -E '^(selftest failed|Error)' "$out/selftest.err" || grep -h -m1 'FAILED' "$out/selftest.txt" || tail -n 1 "$out/selftest.err")"
    echo "$why" >&2
    printf '## inproc selftest failed: nothing measured\n\n```\n%s\n```\n' "$why" | summary
    return "$rc"
  fi
  printf '## inproc selftest\n\n```\n%s\n```\n' "$(grep -m1 '^selftest ' "$out/selftest.txt")" | summary
}

cmd_cpu() {  # [OUTDIR]
  local out="${1:-$(mktemp -d /tmp/inproc-nightly-cpu.XXXXXX)}" rc=0
  cmd_selftest "$out" --engine vllm || return $?
  local tiny=(--contexts 256 --concurrency 1,4 --duration 1 --prefill-contexts 256 --prefill-samples 1)
  local profile=launch_profiles/cpu-vllm-tiny-llama.toml
  cmd_baseline "$profile" 1 "$out/baseline.json" "$out" "${tiny[@]}" || return $?
  cmd_run "$profile" "$out/baseline.json" "$out" "${tiny[@]}" || rc=$?
  if [[ $rc -ne 0 && $rc -ne 1 && $rc -ne 3 ]]; then
    echo "nightly cpu: compare failed (exit $rc)" >&2
    return 1
  fi
  for f in compare.json compare.md compare.txt; do
    [[ -s "$out/$f" ]] || { echo "nightly cpu: $out/$f was not written" >&2; return 1; }
  done
  grep -q '"kind": "inproc-compare"' "$out/compare.json" || { echo "nightly cpu: $out/compare.json is not a comparison" >&2; return 1; }
  local hrc=0  # two nights in a fresh store: the baseline's run, then the new one
  history_and_report "$out/baseline-run-1.json" "$out/history" "$out" >/dev/null || hrc=$?
  history_and_report "$out/run.json" "$out/history" "$out" || hrc=$?
  [[ ($hrc -le 1 || $hrc -eq 3) && -s "$out/history.md" && -s "$out/history.html" ]] || { echo "nightly cpu: inproc history failed (exit $hrc)" >&2; return 1; }
  echo "nightly cpu: the nightly's commands work (compare exit $rc); reports in $out"
}

case "${1:-}" in
  run) shift; [[ $# -ge 3 ]] || { echo "usage: $0 run PROFILE BASELINE OUTDIR [run flags...]" >&2; exit 2; }; cmd_run "$@" ;;
  baseline) shift; [[ $# -ge 4 ]] || { echo "usage: $0 baseline PROFILE RUNS BASELINE OUTDIR [run flags...]" >&2; exit 2; }; cmd_baseline "$@" ;;
  compare) shift; [[ $# -eq 3 ]] || { echo "usage: $0 compare BASELINE NEW OUTDIR" >&2; exit 2; }; mkdir -p "$3"; compare_and_report "$@" ;;
  history) shift; [[ $# -eq 3 ]] || { echo "usage: $0 history RUN STORE OUTDIR" >&2; exit 2; }; mkdir -p "$3"; history_and_report "$@" ;;
  selftest) shift; [[ $# -ge 1 ]] || { echo "usage: $0 selftest OUTDIR [selftest args...]" >&2; exit 2; }; cmd_selftest "$@" ;;
  cpu) shift; cmd_cpu "$@" ;;
  *) echo "usage: $0 run|baseline|compare|history|selftest|cpu ... (see the comment at the top of $0)" >&2; exit 2 ;;
esac
