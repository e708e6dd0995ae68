#!/usr/bin/env bash
# bench-verify.sh: time `ckpt verify --read-data` against `cat` of the same
# files on a warm page cache, on ckpttest.Large() (~1.2 GB FP8), and report
# throughput, the ratio and verify's peak RSS. Usage: scripts/bench-verify.sh [RUNS]
set -euo pipefail
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/ckpt" ./cmd/ckpt
echo "generating ckpttest.Large() in $tmp/large ..."
go run ./internal/cmd/genfixture -size large -out "$tmp/pair"
ln -s "$tmp/pair/base" "$tmp/large"
files=("$tmp"/large/*.safetensors)
bytes=$(cat "${files[@]}" | wc -c)
cat "${files[@]}" >/dev/null # warm the page cache
cat "${files[@]}" >/dev/null
timeit() { # prints seconds
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || true
	e=$(date +%s.%N)
	echo "$e - $s" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cats=(); vers=()
for _ in $(seq "$runs"); do
	cats+=("$(timeit cat "${files[@]}")")
	vers+=("$(timeit "$tmp/ckpt" verify "$tmp/large" --read-data --progress none)")
done
cat_med=$(printf '%s\n' "${cats[@]}" | median)
ver_med=$(printf '%s\n' "${vers[@]}" | median)
rss_kb=""
if [ -x /usr/bin/time ]; then
	rss_kb=$(/usr/bin/time -v "$tmp/ckpt" verify "$tmp/large" --read-data --progress none 2>&1 >/dev/null | awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}')
fi
"$tmp/ckpt" verify "$tmp/large" --read-data --progress none --format text | tail -1
printf 'data: %d bytes in %d files, %d runs (median; shared noisy machine)\n' "$bytes" "${#files[@]}" "$runs"
printf 'cat:                 %.3f s  %.2f GB/s\n' "$cat_med" "$(echo "$bytes / $cat_med / 1000000000" | bc -l)"
printf 'verify --read-data:  %.3f s  %.2f GB/s\n' "$ver_med" "$(echo "$bytes / $ver_med / 1000000000" | bc -l)"
printf 'ratio verify/cat:    %.2f\n' "$(echo "$ver_med / $cat_med" | bc -l)"
[ -n "$rss_kb" ] && printf 'verify peak RSS:     %.1f MiB\n' "$(echo "$rss_kb / 1024" | bc -l)"
exit 0
