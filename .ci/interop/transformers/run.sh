#!/usr/bin/env bash
# The transformers leg of the interop suite: checkpoints written by Hugging
# Face transformers' own code (5.23.0, torch on the CPU: save_pretrained of
# tiny random models of the real classes, its FineGrainedFP8 quantizer,
# torch optimizer steps) read by every ckpt command and held against what
# transformers, torch and safetensors say of the same files, see README
# "Interop suite". Creates (once, then reuses) a virtual environment with the
# pinned set of requirements.txt (torch from PyPI with its CUDA runtime
# packages, ~5.4 GB installed, no GPU used), builds ckpt, runs the tests and
# closes with "transformers: N passed, N failed". No network at test time
# (HF_HUB_OFFLINE=1: every model is made by code). Needs CPython 3.10 to
# 3.14: where none is found the leg is skipped with a message and exits 0.
# Extra arguments go to pytest (e.g. -k fp8 -x).
#
#   CKPT_TF_PYTHON  interpreter to create the venv with (default: the first
#                   of python3, python3.13, python3.12, python3.11, python3.10
#                   that is CPython 3.10 to 3.14)
#   CKPT_TF_VENV    where the venv lives (default: a cache directory keyed by
#                   requirements.txt and the Python version)
#   CKPT_BIN        a ckpt binary to test instead of building one
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=.ci/interop/transformers
export PYTHONDONTWRITEBYTECODE=1 # nothing written into the work tree
start=$SECONDS

. .ci/interop/pytest-run.sh
if ! python=$(find_python '(3, 10) <= v <= (3, 14)' ${CKPT_TF_PYTHON:-} python3 python3.13 python3.12 python3.11 python3.10); then
	echo "transformers: skipped: no CPython 3.10 to 3.14 found (set CKPT_TF_PYTHON)"
	echo "transformers: 0 passed, 0 failed, 1 skipped"
	exit 0
fi

venv=${CKPT_TF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ckpt-interop/transformers-venv-$(venv_key "$python" "$here/requirements.txt")}
# --no-deps: the file pins the whole set (uv pip compile, see the file).
ensure_venv transformers "$python" "$venv" "$here/requirements.txt" --no-deps
echo "transformers: venv ready ($((SECONDS - start)) s): $("$venv/bin/python" -c \
	'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("transformers", "torch", "safetensors", "huggingface-hub", "pytest")))')"

work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-transformers.XXXXXX")
trap 'rm -rf "$work"' EXIT
build_ckpt transformers "$work"
# No GPU is used or looked for, nothing is downloaded: every model is made
# by code from a config, and the hub is switched off. Nothing of the
# caller's Hugging Face set-up may leak in; HF_HOME points into the work
# directory so nothing is written to the user's cache.
for v in $(env | sed -n 's/^\(HF_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export CUDA_VISIBLE_DEVICES= TOKENIZERS_PARALLELISM=false TQDM_DISABLE=1 \
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 HF_HOME="$work/hf" \
	TRANSFORMERS_VERBOSITY=error

pytest_run transformers "$venv/bin/python" "$here" "$work" "$@"
