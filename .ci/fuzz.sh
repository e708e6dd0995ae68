#!/usr/bin/env bash
# Runs every Go fuzz target of the repository (each `func FuzzX` in a
# *_test.go file) for a bounded time, one after the other: CKPT_FUZZTIME
# each (default 25s; .ci/run runs this after go test ./...). The fuzzing
# cache and the tests' temporary files go to a temporary directory (on
# /dev/shm where there is one: the unpack target makes many small files),
# removed at the end, so the work tree stays clean; an input that fails is
# written to the package's testdata/fuzz/FuzzX/ as go test does, to be
# rerun with `go test -run FuzzX/NAME ./pkg`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${CKPT_FUZZTIME:-25s}
base=${TMPDIR:-/tmp}
if [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; fi
work=$(mktemp -d "$base/ckpt-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mapfile -t targets < <(grep -rE --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]+\(' . |
	sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]+)\($|\1 \2|' | sort -u)
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
start=$SECONDS
for t in "${targets[@]}"; do
	pkg=${t% *} name=${t#* }
	echo "fuzz: $name in ./$pkg for $fuzztime"
	TMPDIR=$work go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 2 \
		"./$pkg" -test.fuzzcachedir="$work/cache" 2>&1 | grep -v '^fuzz: elapsed' || { echo "fuzz: $name FAILED" >&2; exit 1; }
done
echo "fuzz: ${#targets[@]} targets passed in $((SECONDS - start))s"
