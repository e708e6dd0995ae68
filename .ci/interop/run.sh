#!/usr/bin/env bash
# The interop suite: ckpt against the reference implementations of its
# formats (safetensors, huggingface_hub, numpy, ml_dtypes), see
# docs/interop.md. Creates (once, then reuses) a virtual environment with the
# pinned versions of requirements.txt, builds the Go programs the tests drive,
# runs the tests and closes with "interop: N passed, N failed". Exits non-zero
# on any failure. Extra arguments go to pytest (e.g. -k hf_cache -x).
#
#   PYTHON              interpreter to create the venv with (default python3)
#   CKPT_INTEROP_VENV   where the venv lives (default: a cache directory keyed
#                       by requirements.txt and the Python version)
#   CKPT_BIN            a ckpt binary to test: then nothing is built and Go is
#                       not needed for tests that only run ckpt, e.g.
#                       CKPT_BIN=./ckpt bash .ci/interop/run.sh -k property
set -euo pipefail
cd "$(dirname "$0")/../.."
here=.ci/interop
export PYTHONDONTWRITEBYTECODE=1 # nothing written into the work tree
start=$SECONDS
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null; then
	echo "interop: $python not found: the interop suite needs Python 3 with venv" >&2
	exit 2
fi

. .ci/interop/pytest-run.sh
venv=${CKPT_INTEROP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ckpt-interop/venv-$(venv_key "$python" "$here/requirements.txt")}
ensure_venv interop "$python" "$venv" "$here/requirements.txt"
echo "interop: venv ready ($((SECONDS - start)) s): $(cd "$here" && "$venv/bin/python" -c \
	'from stlib import versions; print(", ".join(f"{k} {v}" for k, v in versions().items()))')"

work=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-interop.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
if [ -n "${CKPT_BIN:-}" ]; then
	# A ckpt binary built elsewhere: nothing is built, no Go is needed
	# (tests that need convdump, stdump or genfixture build them, or take
	# $CONVDUMP_BIN / $STDUMP_BIN / $GENFIXTURE_BIN).
	CKPT_BIN=$(realpath "$CKPT_BIN")
	echo "interop: using CKPT_BIN=$CKPT_BIN, nothing built"
else
	go build -o "$work/bin/" ./cmd/ckpt ./cmd/internal/convdump ./cmd/internal/stdump ./cmd/internal/genfixture
	echo "interop: built ckpt, convdump, stdump, genfixture ($((SECONDS - start)) s)"
	CKPT_BIN=$work/bin/ckpt CONVDUMP_BIN=$work/bin/convdump STDUMP_BIN=$work/bin/stdump GENFIXTURE_BIN=$work/bin/genfixture
fi

# The tests pass endpoints and cache directories explicitly; nothing of the
# caller's Hugging Face set-up may leak in.
for v in $(env | sed -n 's/^\(HF_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_PROGRESS_BARS=1
export CKPT_BIN
for v in CONVDUMP_BIN STDUMP_BIN GENFIXTURE_BIN; do
	[ -z "${!v:-}" ] || export "$v"
done

pytest_run interop "$venv/bin/python" "$here" "$work" "$@"
