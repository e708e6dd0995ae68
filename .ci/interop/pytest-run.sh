# Sourced by the interop suites' run.sh (.ci/interop, its ttnn leg):
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
