#!/usr/bin/env bash
# bench-extract.sh: time `ckpt extract` of everything in the ~1.2 GB FP8
# benchmark base — under keep (a streamed copy) and dequantised to bf16 — and
# of its MTP head to bf16, against `cat` of the same files (to /dev/null, and
# to a file with sync, the copy baseline) on a warm page cache. Reports
# medians, ratios and extract's peak RSS.
#   scripts/bench-extract.sh [DIR]  (default DIR: ${TMPDIR:-/tmp}/ckpt-bench; RUNS=3)
cd "$(dirname "$0")/.."
source scripts/lib.sh
DIR=${1:-${TMPDIR:-/tmp}/ckpt-bench}
RUNS=${RUNS:-3}
bench_setup "$DIR"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
files=("$DIR"/base/*.safetensors)
bytes=$(cat "${files[@]}" | wc -c)
cat "${files[@]}" >/dev/null # warm the page cache
catfile() { cat "${files[@]}" >"$out/cat.out" && sync "$out/cat.out" && rm -f "$out/cat.out"; }
ext() { rm -f "$out/out.safetensors"; "$DIR/ckpt" extract "$DIR/base" --progress none --out "$out/out.safetensors" "$@"; }
cats=(); catfs=(); keeps=(); bf16s=(); mtps=()
for _ in $(seq "$RUNS"); do
	cats+=("$(seconds cat "${files[@]}")")
	catfs+=("$(seconds catfile)")
	keeps+=("$(seconds ext --match '**' --dtype keep)")
	bf16s+=("$(seconds ext --match '**' --dtype bf16)")
	mtps+=("$(seconds ext --match 'mtp.**' --dtype bf16)")
done
cat_med=$(med "${cats[@]}"); catf_med=$(med "${catfs[@]}"); keep_med=$(med "${keeps[@]}"); bf16_med=$(med "${bf16s[@]}"); mtp_med=$(med "${mtps[@]}")
rm -f "$out/out.safetensors"
rss_bf16=$(peak_rss "$DIR/ckpt" extract "$DIR/base" --progress none --out "$out/out.safetensors" --match '**' --dtype bf16)
ext --match '**' --dtype bf16 --format text | tail -1
printf 'source: %d bytes in %d files, %d runs (medians; load %s)\n' "$bytes" "${#files[@]}" "$RUNS" "$(load)"
printf 'cat >/dev/null:                  %.3f s  %.2f GB/s\n' "$cat_med" "$(gbps "$bytes" "$cat_med")"
printf 'cat >file; sync:                 %.3f s  %.2f GB/s\n' "$catf_med" "$(gbps "$bytes" "$catf_med")"
printf 'extract ** keep:                 %.3f s  %.2f GB/s  (%.2f x cat>file)\n' "$keep_med" "$(gbps "$bytes" "$keep_med")" "$(ratio "$keep_med" "$catf_med")"
printf 'extract ** bf16 (dequantise):    %.3f s  %.2f GB/s of FP8 source  (%.2f x cat>file)\n' "$bf16_med" "$(gbps "$bytes" "$bf16_med")" "$(ratio "$bf16_med" "$catf_med")"
printf 'extract mtp.** bf16:             %.3f s\n' "$mtp_med"
printf 'extract ** bf16 peak RSS:        %.1f MiB\n' "$rss_bf16"
