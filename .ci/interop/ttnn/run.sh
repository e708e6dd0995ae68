#!/usr/bin/env bash
# The ttnn leg of the interop suite: the files of `ckpt cache build` against
# the real ttnn from PyPI (ttnn 0.81.1 on tt-metal's mock cluster, with the
# P300 and P150x4 descriptors beside this script), see
# docs/interop.md. Creates (once, then reuses) a virtual environment with the pinned
# set of requirements.txt, builds the Go programs the tests drive, installs
# the compiler stand-in that lets the mock cluster open a mesh device
# (sfpi_standin.py: a temporary TT_METAL_RUNTIME_ROOT of links to the ttnn
# package plus a script that answers riscv-tt-elf-g++ --version with the
# version the wheel's pre-compiled firmware was built with; on a mock
# cluster nothing is compiled, so no real compiler is needed and the venv is
# not modified), runs the tests from a temporary directory (opening a mesh
# writes generated/fabric/*.yaml into the current directory) and closes
# with "ttnn: N passed, N failed". ttnn ships wheels for CPython 3.10 and
# 3.12 only: where neither is found the leg is skipped with a message and
# exits 0. Extra arguments go to pytest (e.g. -k load -x).
#
#   CKPT_TTNN_PYTHON  interpreter to create the venv with (default: the
#                     first python3.12 / python3.10 that runs, on PATH or
#                     under pyenv)
#   CKPT_TTNN_VENV    where the venv lives (default: a cache directory keyed
#                     by requirements.txt and the Python version)
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=.ci/interop/ttnn
export PYTHONDONTWRITEBYTECODE=1 # nothing written into the work tree
start=$SECONDS

. .ci/interop/pytest-run.sh
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
if ! python=$(find_python 'v in ((3, 10), (3, 12))' ${CKPT_TTNN_PYTHON:-} python3.12 python3.10 "$pyenv_root"/versions/3.12*/bin/python3.12 "$pyenv_root"/versions/3.10*/bin/python3.10); then
	echo "ttnn: skipped: no CPython 3.10 or 3.12 found (ttnn 0.81.1 has wheels for those only; set CKPT_TTNN_PYTHON)"
	echo "ttnn: 0 passed, 0 failed, 1 skipped"
	exit 0
fi

venv=${CKPT_TTNN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ckpt-interop/ttnn-venv-$(venv_key "$python" "$here/requirements.txt")}
# --no-deps: the file pins the whole set, without ttnn's plotting and
# dataframe dependencies that nothing here imports (see the file).
ensure_venv ttnn "$python" "$venv" "$here/requirements.txt" --no-deps
echo "ttnn: venv ready ($((SECONDS - start)) s): $("$venv/bin/python" -c \
	'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("ttnn", "numpy", "pytest")))')"

work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-ttnn.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
go build -o "$work/bin/" ./cmd/ckpt ./cmd/internal/genfixture
echo "ttnn: built ckpt, genfixture ($((SECONDS - start)) s)"

export CKPT_BIN=$work/bin/ckpt GENFIXTURE_BIN=$work/bin/genfixture
export TT_METAL_MOCK_CLUSTER_DESC_PATH=$PWD/$here/p300-mock-cluster.yaml
export TT_LOGGER_LEVEL=error
export TT_METAL_RUNTIME_ROOT=$work/tt-runtime
echo "ttnn: compiler stand-in under $TT_METAL_RUNTIME_ROOT answers: $("$venv/bin/python" "$here/sfpi_standin.py" "$TT_METAL_RUNTIME_ROOT")"

here=$PWD/$here
mkdir "$work/cwd"
cd "$work/cwd"
pytest_run ttnn "$venv/bin/python" "$here" "$work" "$@"
