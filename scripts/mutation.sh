#!/usr/bin/env bash
# Mutation scores of the modules that give a verdict: mutmut 3 mutates one module at a time and, for each
# mutant, runs the fast tests (not `engine`) that execute the mutated function; a mutant that no test fails
# on has survived. A score is killed ÷ mutants (a timeout counts as killed: the tests noticed). The scores
# and the survivors judged equivalent are in docs/measurements.md; docs/mutation-scores.tsv is the record
# that --changed reads.
#
#   scripts/mutation.sh [MODULE...]        the modules named (compare/stats, inproc/compare/stats.py), or all
#   scripts/mutation.sh --changed [BASE]   the modules whose file or tests changed since BASE (default: the
#                                          commit that last recorded docs/mutation-scores.tsv; all where the
#                                          clone has no such history)
#   --min PCT     exit 1 when a module run scores below PCT (default 85)
#   --record      write the scores into docs/mutation-scores.tsv
#   --list        print the modules it would run, and stop
#
# mutmut writes its mutants/ folder into the tree it runs in, so each module runs in a scratch copy of the
# checkout's files (INPROC_MUTATION_DIR, default a new folder under /tmp, kept: `mutmut browse` works there;
# each module's survivors and their diffs are in its survivors.txt). It is not part of the README's test
# command; scripts/test_long.sh runs `--changed`. mutmut is installed into the venv (INPROC_VLLM_VENV, default
# .venv-vllm) if missing. INPROC_MUTATION_JOBS: parallel mutants (default: the CPU count).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
py="${INPROC_VLLM_VENV:-$repo/.venv-vllm}/bin/python"
mutmut_pin="mutmut==3.8.1"
record_file="docs/mutation-scores.tsv"

# Each verdict module and the fast tests that cover it: the tests that import it and its own folder's tests.
# bisect/oracle's are its own tests and the sitting's retries, not the bisect simulations (tests/bisect/test_sim.py,
# test_search.py) that run it too: with them a run reached 72 of its 288 mutants in 18 minutes (a mutant that
# keeps a simulated bisect from calling a revision makes it measure to the end of its pairs); its decisions are
# tested on runs of exactly known tok/s instead (tests/bisect/test_oracle_rules.py).
declare -A TESTS=(
  [telemetry/disturbed]="tests/telemetry tests/bisect/test_disturbed_runs.py tests/compare/test_disturbed_left_out.py tests/run/test_disturbed_cells.py"
  [kernels/filing]="tests/kernels tests/engines/test_torchprof.py tests/cli/test_kernels_cmd.py"
  [compare/verdicts]="tests/compare tests/history tests/bisect/test_cells.py"
  [compare/stats]="tests/compare"
  [compare/spread]="tests/compare tests/history"
  [measure/judge]="tests/measure tests/run/test_outcome.py tests/run/test_contract.py tests/compare/test_verdicts.py"
  [measure/slow]="tests/measure tests/run/test_slow_steps.py tests/history/test_tail.py"
  [measure/slow_online]="tests/measure/test_slow.py tests/measure/test_slow_edges.py tests/run/test_slowwatch.py"
  [plan/capacity]="tests/plan tests/measure/test_kv.py tests/record/test_definitions.py tests/render/test_reference_matrices.py tests/cli/test_cli.py"
  [history/levels]="tests/history"
  [bisect/oracle]="tests/bisect/test_oracle.py tests/bisect/test_oracle_words.py tests/bisect/test_oracle_rules.py tests/bisect/test_disturbed_runs.py"
  [bisect/signature]="tests/bisect/test_signature.py tests/bisect/test_oracle_rules.py"
  [graphs/suggest]="tests/graphs"
)
ALL=(telemetry/disturbed kernels/filing compare/verdicts compare/stats compare/spread measure/judge measure/slow
     measure/slow_online plan/capacity history/levels bisect/oracle bisect/signature graphs/suggest)

usage_error() { echo "$1" >&2; exit 2; }

# A module as its key (compare/stats) from any of compare/stats, inproc/compare/stats.py.
module_key() {
  local m="${1#inproc/}"; m="${m%.py}"
  [[ -n "${TESTS[$m]+x}" ]] || usage_error "Unknown module '$1'. Verdict modules: ${ALL[*]}."
  echo "$m"
}

# The modules whose file or covering tests changed between BASE (or the last recording) and the work tree.
changed_modules() {
  local base="$1" changed key t
  if [[ -z "$base" ]]; then
    if [[ "$(git rev-parse --is-shallow-repository 2>/dev/null)" != false ]]; then
      echo "mutation: no full history here (a shallow clone or no git): every module is run" >&2
      printf '%s\n' "${ALL[@]}"; return
    fi
    base="$(git log -1 --format=%H -- "$record_file")"
    if [[ -z "$base" ]]; then
      echo "mutation: $record_file was never committed: every module is run" >&2
      printf '%s\n' "${ALL[@]}"; return
    fi
  fi
  git rev-parse --verify -q "$base^{commit}" >/dev/null || usage_error "Unknown base commit '$base'. Give a commit of this repository."
  echo "mutation: changes since ${base:0:12} ($(git log -1 --format=%s "$base" | cut -c1-60))" >&2
  changed="$( { git diff --name-only "$base" --; git ls-files --others --exclude-standard; } )"
  # A module is touched when its file changed, or a changed test among those that cover it imports it
  # (inproc.compare.stats, or "from inproc.compare import stats"): a test elsewhere changes no score of its.
  local mod file
  for key in "${ALL[@]}"; do
    if grep -q -x -F "inproc/$key.py" <<<"$changed"; then echo "$key"; continue; fi
    mod="inproc.${key//\//.}"
    for t in ${TESTS[$key]}; do
      while read -r file; do
        [[ -f "$file" ]] && grep -q -E "${mod//./\\.}\b|from ${mod%.*} import .*\b${key##*/}\b" "$file" && { echo "$key"; continue 3; }
      done < <(grep -E "^${t//./\\.}(/|$)" <<<"$changed")
    done
  done
}

min=85; record=0; list=0; changed=""; use_changed=0; modules=()
while (($#)); do
  case "$1" in
    --min) [[ "${2:-}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "--min needs a percentage such as 85, got '${2:-}'."
           min="$2"; shift 2 ;;
    --record) record=1; shift ;;
    --list) list=1; shift ;;
    --changed) use_changed=1; shift
               if [[ $# -gt 0 && "$1" != -* ]]; then changed="$1"; shift; fi ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage_error "Unknown option '$1'. Options: --changed [BASE], --min PCT, --record, --list." ;;
    *) modules+=("$(module_key "$1")") || exit 2; shift ;;
  esac
done
if ((use_changed)); then
  ((${#modules[@]} == 0)) || usage_error "Give modules or --changed, not both."
  found="$(changed_modules "$changed")" || exit 2
  mapfile -t modules <<<"$found"; [[ -n "$found" ]] || modules=()
  if ((${#modules[@]} == 0)); then echo "mutation: no verdict module or its tests changed; nothing to run"; exit 0; fi
elif ((${#modules[@]} == 0)); then
  modules=("${ALL[@]}")
fi
if ((list)); then printf '%s\n' "${modules[@]}"; exit 0; fi

[[ -x "$py" ]] || usage_error "No Python at $py: run scripts/setup_vllm.sh, or set INPROC_VLLM_VENV."
if ! "$py" -c "import mutmut" 2>/dev/null; then
  echo "mutation: installing $mutmut_pin into $("$py" -c 'import sys; print(sys.prefix)')" >&2
  "$py" -m pip install -q --disable-pip-version-check "$mutmut_pin" || { echo "mutation: could not install $mutmut_pin" >&2; exit 1; }
fi
mutmut="$(dirname "$py")/mutmut"

scratch="${INPROC_MUTATION_DIR:-$(mktemp -d /tmp/inproc-mutation.XXXXXX)}"
mkdir -p "$scratch"
jobs="${INPROC_MUTATION_JOBS:-$(nproc)}"
# Everything the tests read comes along (tests, docs, README.md, launch_profiles, scripts): every tracked or
# new file's top folder but the package, which mutmut copies itself.
also_copy="$(git ls-files -co --exclude-standard | cut -d/ -f1 | sort -u | grep -v -x -e inproc -e pyproject.toml | paste -sd, -)"

# One module in its own copy: prints its score line, writes survivors.txt, returns 1 below the minimum.
run_module() {
  local key="$1" dir="$scratch/${1//\//-}" start=$SECONDS
  rm -rf "$dir"; mkdir -p "$dir"
  git ls-files -z -co --exclude-standard | tar -cf - --null -T - | tar -xf - -C "$dir"
  # Without [tool.mutmut] in pyproject.toml mutmut reads setup.cfg, which exists only in the copy.
  {
    echo "[mutmut]"
    echo "source_paths = inproc"
    echo "only_mutate = inproc/$key.py"
    echo "also_copy ="; tr ',' '\n' <<<"$also_copy" | sed 's/^/    /'
    echo "pytest_add_cli_args ="; printf '    %s\n' -m "not engine" -p no:cacheprovider
    echo "pytest_add_cli_args_test_selection ="; printf '    %s\n' ${TESTS[$key]}
  } >"$dir/setup.cfg"
  # The copy is not a git repository, so mutmut's change detection has nothing to compare; PYTHONPATH would
  # put the unmutated package before the mutants.
  (cd "$dir" && env -u PYTHONPATH "$mutmut" run --max-children "$jobs") >"$dir/mutmut.log" 2>&1
  local rc=$?
  (cd "$dir" && env -u PYTHONPATH "$py" - "$key" "$min" $((SECONDS - start)) "$rc") <<'EOF'
import json, subprocess, sys
from pathlib import Path
key, minimum, seconds, rc = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
meta = Path("mutants/inproc") / f"{key}.py.meta"
if not meta.exists():
    print(f"inproc/{key}.py: mutmut did not finish (exit {rc}); see {Path('mutmut.log').resolve()}")
    sys.exit(1)
codes = json.loads(meta.read_text())["exit_code_by_key"]
status = {1: "killed", 3: "killed", 36: "killed", 24: "killed", -24: "killed", 152: "killed", 255: "killed",
          0: "survived", 5: "no tests", 33: "no tests", None: "not checked"}
by = {}
for name, code in codes.items():
    by.setdefault(status.get(code, "suspicious"), []).append(name)
total, killed = len(codes), len(by.get("killed", []))
pct = 100.0 * killed / total if total else 0.0
rest = ", ".join(f"{k} {len(v)}" for k, v in sorted(by.items()) if k != "killed") or "none left"
print(f"inproc/{key}.py: {killed} / {total} mutants killed, {pct:.1f} % ({rest}); {seconds} s")
try:  # mutmut's own diff, in this process (a `mutmut show` per survivor takes seconds)
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    show = lambda name: get_diff_for_mutant(name, path=f"inproc/{key}.py")
except ImportError:
    show = lambda name: subprocess.run([str(Path(sys.executable).parent / "mutmut"), "show", name],
                                       capture_output=True, text=True).stdout
with open("survivors.txt", "w") as out:
    for kind, names in sorted(by.items()):
        if kind == "killed":
            continue
        for name in sorted(names):
            try:
                diff = show(name)
            except Exception as e:  # a diff is a help, never the score
                diff = f"(no diff: {e})"
            out.write(f"## {kind}: {name}\n{diff}\n")
Path("score.tsv").write_text(f"inproc/{key}.py\t{total}\t{killed}\t{pct:.1f}\n")
sys.exit(0 if pct >= minimum else 1)
EOF
}

status=0
echo "mutation: ${#modules[@]} module(s), scratch copies in $scratch"
for key in "${modules[@]}"; do
  run_module "$key" || status=1
done
if ((record)); then
  {
    echo -e "# module\tmutants\tkilled\tpercent   (scripts/mutation.sh --record; --changed runs what changed since this file's last commit)"
    for key in "${ALL[@]}"; do
      new="$scratch/${key//\//-}/score.tsv"
      if [[ -f "$new" ]]; then cat "$new"; else grep -P "^inproc/$key\.py\t" "$record_file" 2>/dev/null; fi
    done
  } >"$record_file.tmp" && mv "$record_file.tmp" "$record_file"
  echo "mutation: scores written to $record_file"
fi
((status == 0)) || echo "mutation: a module scored below $min % or did not finish (survivors: $scratch/*/survivors.txt)" >&2
exit $status
