#!/usr/bin/env bash
# bench-cache.sh: time `ckpt cache build` of ckpttest.Large() (~1.2 GB
# block-FP8, 1.27 G source elements) onto a 1x2 mesh — a full build and an
# unchanged rebuild — against `cat` of the same files, on a warm page cache.
# Reports medians of RUNS runs: source elements/s, peak RSS, the
# rebuild/build ratio and a projection for the 27B (its element count from
# shared/spec/qwen3_5-27b-inventory.json / the measured rate).
# Usage: scripts/bench-cache.sh [DIR]  (RUNS=3)     (targets: >= 150 M elements/s,
# peak RSS <= 512 MiB, rebuild <= 10% of the build)
cd "$(dirname "$0")/.."
source scripts/lib.sh
root=$(pwd)
DIR=${1:-${TMPDIR:-/tmp}/ckpt-bench}
runs=${RUNS:-3}
bench_setup "$DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$DIR/ckpt" "$tmp/ckpt"
ln -s "$DIR/base" "$tmp/large"
files=("$tmp"/large/*.safetensors)
bytes=$(cat "${files[@]}" | wc -c)
cat "${files[@]}" >/dev/null # warm the page cache
now() { date +%s.%N; }
build() { "$tmp/ckpt" cache build "$tmp/large" --out "$tmp/cache" --mesh 1x2 --progress none --format json "$@"; }
cats=(); fulls=(); rebuilds=(); elems=0
for _ in $(seq "$runs"); do
	s=$(now); cat "${files[@]}" >/dev/null; e=$(now); cats+=("$(echo "$e - $s" | bc -l)")
	rm -rf "$tmp/cache"
	s=$(now); build >"$tmp/full.json"; e=$(now); fulls+=("$(echo "$e - $s" | bc -l)")
	elems=$(jq .source_elements "$tmp/full.json")
	s=$(now); build >"$tmp/re.json"; e=$(now); rebuilds+=("$(echo "$e - $s" | bc -l)")
	[ "$(jq '.built | length' "$tmp/re.json")" = 0 ] || { echo "unchanged rebuild rebuilt files" >&2; exit 1; }
done
"$tmp/ckpt" cache verify "$tmp/cache" --source "$tmp/large" --progress none | tail -1
rm -rf "$tmp/cache"
rss=$(peak_rss "$tmp/ckpt" cache build "$tmp/large" --out "$tmp/cache" --progress none)
cat_med=$(med "${cats[@]}"); full_med=$(med "${fulls[@]}"); re_med=$(med "${rebuilds[@]}")
rate=$(echo "$elems / $full_med" | bc -l)
inv=""
d=$root
while [ "$d" != / ]; do [ -f "$d/shared/spec/qwen3_5-27b-inventory.json" ] && inv="$d/shared/spec/qwen3_5-27b-inventory.json" && break; d=$(dirname "$d"); done
big=27320697856 # text + MTP elements of the 27B (inventory), the fallback
if [ -n "$inv" ]; then
	big=$(jq '[.checkpoints.fp8.tensors[] | select((.name | startswith("model.visual.") | not) and (.name | endswith("_scale_inv") | not)) | (.shape | reduce .[] as $x (1; . * $x))] | add' "$inv")
fi
printf 'source: %d bytes in %d files, %d elements; %d runs, medians (shared, noisy 2-core machine: load %s)\n' "$bytes" "${#files[@]}" "$elems" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'cat >/dev/null:          %7.3f s\n' "$cat_med"
printf 'cache build (full):      %7.3f s  %6.1f M source elements/s  (target >= 150)  all: %s\n' "$full_med" "$(echo "$rate / 1000000" | bc -l)" "${fulls[*]}"
printf 'cache build (unchanged): %7.3f s  %6.1f%% of the full build  (target <= 10%%)\n' "$re_med" "$(echo "100 * $re_med / $full_med" | bc -l)"
printf 'peak RSS (full build):   %7.1f MiB  (target <= 512)\n' "$rss"
printf '27B projection:          %d elements / %.1f M/s = %.0f s (%.1f min)\n' "$big" "$(echo "$rate / 1000000" | bc -l)" "$(echo "$big / $rate" | bc -l)" "$(echo "$big / $rate / 60" | bc -l)"
