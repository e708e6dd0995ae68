#!/usr/bin/env bash
# bench-extract.sh: time `ckpt extract` of everything in ckpttest.Large()
# (~1.2 GB block-FP8) — under keep (a streamed copy) and dequantised to bf16 —
# and of its MTP head to bf16, against `cat` of the same files (to /dev/null,
# and to a file with sync, the copy baseline) on a warm page cache. Reports
# medians, ratios and extract's peak RSS.  Usage: scripts/bench-extract.sh [RUNS]
set -euo pipefail
runs=${1:-3}
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
timeit() { # prints seconds
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || true
	e=$(date +%s.%N)
	echo "$e - $s" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
catfile() { cat "${files[@]}" >"$tmp/cat.out" && sync "$tmp/cat.out" && rm -f "$tmp/cat.out"; }
ext() { rm -f "$tmp/out.safetensors"; "$tmp/ckpt" extract "$tmp/large" --progress none --out "$tmp/out.safetensors" "$@"; }
cats=(); catfs=(); keeps=(); bf16s=(); mtps=()
for _ in $(seq "$runs"); do
	cats+=("$(timeit cat "${files[@]}")")
	catfs+=("$(timeit catfile)")
	keeps+=("$(timeit ext --match '**' --dtype keep)")
	bf16s+=("$(timeit ext --match '**' --dtype bf16)")
	mtps+=("$(timeit ext --match 'mtp.**' --dtype bf16)")
done
med() { printf '%s\n' "$@" | median; }
cat_med=$(med "${cats[@]}"); catf_med=$(med "${catfs[@]}"); keep_med=$(med "${keeps[@]}"); bf16_med=$(med "${bf16s[@]}"); mtp_med=$(med "${mtps[@]}")
rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2/1024}'; }
rm -f "$tmp/out.safetensors"
rss_bf16=$(rss "$tmp/ckpt" extract "$tmp/large" --match '**' --dtype bf16 --progress none --out "$tmp/out.safetensors" || echo "?")
ext --match '**' --dtype bf16 --format text | tail -1
printf 'source: %d bytes in %d files, %d runs (median; shared noisy machine)\n' "$bytes" "${#files[@]}" "$runs"
printf 'cat >/dev/null:                  %.3f s  %.2f GB/s\n' "$cat_med" "$(echo "$bytes / $cat_med / 1000000000" | bc -l)"
printf 'cat >file; sync:                 %.3f s  %.2f GB/s\n' "$catf_med" "$(echo "$bytes / $catf_med / 1000000000" | bc -l)"
printf 'extract ** keep:                 %.3f s  %.2f GB/s  (%.2f x cat>file)\n' "$keep_med" "$(echo "$bytes / $keep_med / 1000000000" | bc -l)" "$(echo "$keep_med / $catf_med" | bc -l)"
printf 'extract ** bf16 (dequantise):    %.3f s  %.2f GB/s of FP8 source  (%.2f x cat>file)\n' "$bf16_med" "$(echo "$bytes / $bf16_med / 1000000000" | bc -l)" "$(echo "$bf16_med / $catf_med" | bc -l)"
printf 'extract mtp.** bf16:             %.3f s\n' "$mtp_med"
printf 'extract ** bf16 peak RSS:        %s MiB\n' "$rss_bf16"
