#!/usr/bin/env bash
# Benchmark `ckpt diff` against `cat` of the same files, in one run.
#
#   scripts/bench-diff.sh [DIR]     (default DIR: ${TMPDIR:-/tmp}/ckpt-bench; RUNS=3)
#
# Generates (once) a ~1.2 GB block-FP8 base and its fine-tune with the fixture
# package, warms the page cache, then times RUNS times each: cat of both
# checkpoints' shards to /dev/null, ckpt diff --mode values, --mode bytes.
# Prints medians, ratios to cat, throughput (bytes of both checkpoints / time)
# and peak RSS. Targets (2-core machine): values <= 6x cat, bytes <= 2x cat,
# peak RSS <= 256 MiB.
cd "$(dirname "$0")/.."
source scripts/lib.sh
DIR=${1:-${TMPDIR:-/tmp}/ckpt-bench}
RUNS=${RUNS:-3}
bench_setup "$DIR"
FILES=("$DIR"/base/*.safetensors "$DIR"/ft/*.safetensors)
BYTES=$(cat "${FILES[@]}" | wc -c)
echo "pair: $DIR/base + $DIR/ft, ${#FILES[@]} shards, $BYTES bytes; $(nproc) CPUs; load: $(load)"
diffcmd() { "$DIR/ckpt" diff "$DIR/base" "$DIR/ft" --progress none --format json "$@"; }
cat "${FILES[@]}" >/dev/null # warm the cache
diffcmd >/dev/null || true
cats=(); values=(); bytes=()
for i in $(seq "$RUNS"); do
	cats+=("$(seconds cat "${FILES[@]}")")
	values+=("$(seconds diffcmd --mode values)")
	bytes+=("$(seconds diffcmd --mode bytes)")
	echo "run $i: cat ${cats[-1]} s, values ${values[-1]} s, bytes ${bytes[-1]} s" >&2
done
CAT=$(med "${cats[@]}")
rss_values=$(peak_rss "$DIR/ckpt" diff "$DIR/base" "$DIR/ft" --progress none --format json --mode values)
rss_bytes=$(peak_rss "$DIR/ckpt" diff "$DIR/base" "$DIR/ft" --progress none --format json --mode bytes)
printf '\n%-10s %10s %8s %10s %14s\n' "what" "median s" "x cat" "GB/s" "peak RSS MiB"
row() { printf '%-10s %10.3f %8.2f %10.2f %14s\n' "$1" "$2" "$(ratio "$2" "$CAT")" "$(gbps "$BYTES" "$2")" "$3"; }
row cat "$CAT" -
row values "$(med "${values[@]}")" "$(printf %.1f "$rss_values")"
row bytes "$(med "${bytes[@]}")" "$(printf %.1f "$rss_bytes")"
echo "targets: values <= 6x cat (>= ~1.5 GB/s), bytes <= 2x cat, peak RSS <= 256 MiB; load now: $(load)"
