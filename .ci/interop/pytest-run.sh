# Sourced by the interop suites' run.sh (.ci/interop, its ttnn, ctools and
# transformers legs).
#
# find_python CONDITION CANDIDATE... prints the first candidate interpreter
# whose version v (sys.version_info[:2]) meets the Python expression
# CONDITION, e.g. 'v in ((3, 10), (3, 12))'; it fails when none does.
# Candidates are tried by running them: pyenv shims exist for versions
# that are not selected, and then fail.
find_python() {
	local cond=$1 c
	shift
	for c in "$@"; do
		if "$c" -c "import sys; v = sys.version_info[:2]; sys.exit(not ($cond))" >/dev/null 2>&1; then
			echo "$c"
			return 0
		fi
	done
	return 1
}
#
# ensure_venv LABEL PYTHON VENV REQUIREMENTS [uv pip install args...]
# makes VENV (once: a .installed marker) with PYTHON: pip brings the pinned
# uv, uv the pinned set of REQUIREMENTS (binary wheels only). pip alone
# takes a minute or more here (one large index page per package, fetched
# one after the other).
uv_version=0.13.9
ensure_venv() {
	local label=$1 python=$2 venv=$3 reqs=$4
	shift 4
	[ -f "$venv/.installed" ] && return 0
	echo "$label: creating $venv with $("$python" --version 2>&1)"
	rm -rf "$venv"
	local pip
	if "$python" -m pip --version >/dev/null 2>&1; then
		"$python" -m venv --without-pip "$venv"
		pip=("$python" -m pip --python "$venv/bin/python")
	else
		"$python" -m venv "$venv"
		pip=("$venv/bin/python" -m pip)
	fi
	"${pip[@]}" install --quiet --disable-pip-version-check --no-input --only-binary=:all: "uv==$uv_version"
	"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --only-binary :all: "$@" -r "$reqs"
	touch "$venv/.installed"
}

# build_ckpt LABEL WORK exports CKPT_BIN: the binary $CKPT_BIN names (made
# absolute; nothing is built, no Go needed), else ckpt built into WORK/bin.
build_ckpt() {
	local label=$1 work=$2
	if [ -n "${CKPT_BIN:-}" ]; then
		CKPT_BIN=$(realpath "$CKPT_BIN")
		echo "$label: using CKPT_BIN=$CKPT_BIN, nothing built"
	else
		mkdir -p "$work/bin"
		go build -o "$work/bin/" ./cmd/ckpt
		echo "$label: built ckpt ($((SECONDS - start)) s)"
		CKPT_BIN=$work/bin/ckpt
	fi
	export CKPT_BIN
}

# venv_key PYTHON REQUIREMENTS: a short hash of the pinned set, the uv
# version and the interpreter, naming the venv (a change makes a new one).
venv_key() {
	{ cat "$2"; echo "uv $uv_version"; "$1" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16
}

# pytest_run LABEL PYTHON HERE WORK [pytest args...] runs the suite in HERE
# with the venv's PYTHON, then closes with "LABEL: N passed, N failed"
# (", N skipped", ", N xfailed (known bugs)" when there are any) from its
# JUnit report and exits with pytest's status; a run that ran no test, or
# whose pytest failed without a failing test, is a failure.
pytest_run() {
	local label=$1 python=$2 here=$3 work=$4
	shift 4
	set +e
	"$python" -m pytest -c "$here/pytest.ini" --rootdir "$here" --basetemp "$work/tmp" \
		--junitxml "$work/junit.xml" -q "$@" "$here"
	local rc=$?
	set -e
	local counts passed failed skipped xfailed
	counts=$("$python" - "$work/junit.xml" <<'PY' || echo "0 0 0 0"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
s = root if root.tag == "testsuite" else root.find("testsuite")
t, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
x = sum(1 for c in s.iter("skipped") if c.get("type") == "pytest.xfail")  # known bugs (xfail)
print(t - f - e - k, f + e, k - x, x)
PY
	)
	read -r passed failed skipped xfailed <<<"$counts"
	if [ "$rc" -eq 0 ] && [ "$passed" -eq 0 ]; then
		rc=1 # a run that ran no test is a failure
	fi
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
		failed=1 # pytest itself failed (collection, usage): count it
	fi
	echo "$label: $((SECONDS - start)) s"
	local line="$label: $passed passed, $failed failed"
	[ "$skipped" -eq 0 ] || line+=", $skipped skipped"
	[ "$xfailed" -eq 0 ] || line+=", $xfailed xfailed (known bugs)"
	echo "$line"
	exit "$rc"
}
