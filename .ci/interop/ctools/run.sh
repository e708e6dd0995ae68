#!/usr/bin/env bash
# The compressed-tensors leg of the interop suite: checkpoints written by
# compressed-tensors' own code (0.20.1, torch on the CPU) read by ckpt
# inspect / verify / extract / diff, see docs/interop.md. Creates
# (once, then reuses) a virtual environment with the pinned set of
# requirements.txt (torch from PyPI with its CUDA runtime packages, ~5.4 GB
# installed, no GPU used), builds ckpt, runs the tests and closes with
# "ctools: N passed, N failed". compressed-tensors 0.20.1 needs Python >=
# 3.11: where none is found the leg is skipped with a message and exits 0.
# Extra arguments go to pytest (e.g. -k fp8 -x).
#
#   CKPT_CTOOLS_PYTHON  interpreter to create the venv with (default: the
#                       first of python3, python3.13, python3.12, python3.11
#                       that is CPython >= 3.11)
#   CKPT_CTOOLS_VENV    where the venv lives (default: a cache directory
#                       keyed by requirements.txt and the Python version)
#   CKPT_BIN            a ckpt binary to test instead of building one
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=.ci/interop/ctools
export PYTHONDONTWRITEBYTECODE=1 # nothing written into the work tree
start=$SECONDS

. .ci/interop/pytest-run.sh
if ! python=$(find_python '(3, 11) <= v <= (3, 14)' ${CKPT_CTOOLS_PYTHON:-} python3 python3.13 python3.12 python3.11); then
	echo "ctools: skipped: no CPython 3.11 to 3.14 found (compressed-tensors 0.20.1 needs >= 3.11; set CKPT_CTOOLS_PYTHON)"
	echo "ctools: 0 passed, 0 failed, 1 skipped"
	exit 0
fi

venv=${CKPT_CTOOLS_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ckpt-interop/ctools-venv-$(venv_key "$python" "$here/requirements.txt")}
# --no-deps: the file pins the whole set (uv pip compile, see the file).
ensure_venv ctools "$python" "$venv" "$here/requirements.txt" --no-deps
echo "ctools: venv ready ($((SECONDS - start)) s): $("$venv/bin/python" -c \
	'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("compressed-tensors", "torch", "safetensors", "pytest")))')"

work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-ctools.XXXXXX")
trap 'rm -rf "$work"' EXIT
build_ckpt ctools "$work"
# No GPU is used or looked for; torch on the CPU, one thread per core of
# the shared CI machine is plenty for these small models.
export CUDA_VISIBLE_DEVICES= TOKENIZERS_PARALLELISM=false TQDM_DISABLE=1 HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

pytest_run ctools "$venv/bin/python" "$here" "$work" "$@"
