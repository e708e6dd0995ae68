#!/usr/bin/env bash
# bench-verify.sh: time `ckpt verify --read-data` against `cat` of the same
# files on a warm page cache, on the ~1.2 GB FP8 benchmark base, and report
# throughput, the ratio and verify's peak RSS.
#   scripts/bench-verify.sh [DIR]   (default DIR: ${TMPDIR:-/tmp}/ckpt-bench; RUNS=5)
# Targets: >= 1 GB/s, peak RSS <= 256 MiB.
cd "$(dirname "$0")/.."
source scripts/lib.sh
DIR=${1:-${TMPDIR:-/tmp}/ckpt-bench}
RUNS=${RUNS:-5}
bench_setup "$DIR"
files=("$DIR"/base/*.safetensors)
bytes=$(cat "${files[@]}" | wc -c)
cat "${files[@]}" >/dev/null # warm the page cache
ver() { "$DIR/ckpt" verify "$DIR/base" --read-data --progress none "$@"; }
cats=(); vers=()
for _ in $(seq "$RUNS"); do
	cats+=("$(seconds cat "${files[@]}")")
	vers+=("$(seconds ver)")
done
cat_med=$(med "${cats[@]}"); ver_med=$(med "${vers[@]}")
ver --format text | tail -1
printf 'data: %d bytes in %d files, %d runs (medians; load %s)\n' "$bytes" "${#files[@]}" "$RUNS" "$(load)"
printf 'cat:                 %.3f s  %.2f GB/s\n' "$cat_med" "$(gbps "$bytes" "$cat_med")"
printf 'verify --read-data:  %.3f s  %.2f GB/s  (%.2f x cat; target >= 1 GB/s)\n' "$ver_med" "$(gbps "$bytes" "$ver_med")" "$(ratio "$ver_med" "$cat_med")"
printf 'peak RSS:            %.1f MiB  (target <= 256)\n' "$(peak_rss "$DIR/ckpt" verify "$DIR/base" --read-data --progress none)"
