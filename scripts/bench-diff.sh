#!/usr/bin/env bash
# Benchmark `ckpt diff` against `cat` of the same files, in one run.
#
#   scripts/bench-diff.sh [DIR]     (default DIR: ${TMPDIR:-/tmp}/ckpt-bench-diff; RUNS=3)
#
# Generates (once) a ~1.2 GB block-FP8 base and its fine-tune with the fixture
# package (go run ./internal/cmd/genfixture -size large), warms the page cache,
# then times RUNS times each: cat of both checkpoints' shards to /dev/null,
# ckpt diff --mode values, ckpt diff --mode bytes. Prints medians, ratios to
# cat, throughput (bytes of both checkpoints / time) and peak RSS.
# Targets (2-core machine): values <= 6x cat, bytes <= 2x cat, peak RSS <= 256 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-${TMPDIR:-/tmp}/ckpt-bench-diff}
RUNS=${RUNS:-3}
mkdir -p "$DIR"
go build -o "$DIR/ckpt" ./cmd/ckpt
if [ ! -f "$DIR/ft/model.safetensors.index.json" ]; then
	echo "generating the benchmark pair in $DIR (once)..." >&2
	go run ./internal/cmd/genfixture -size large -out "$DIR"
fi
FILES=("$DIR"/base/*.safetensors "$DIR"/ft/*.safetensors)
BYTES=$(cat "${FILES[@]}" | wc -c)
echo "pair: $DIR/base + $DIR/ft, ${#FILES[@]} shards, $BYTES bytes; $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"

# run_measured CMD...: prints "seconds peak_rss_kib"; exit status 0 or 1 is fine.
run_measured() {
	local out start end rc=0
	if [ -x /usr/bin/time ]; then
		out=$(mktemp)
		start=$(date +%s.%N)
		/usr/bin/time -f %M -o "$out" "$@" >/dev/null 2>&1 || rc=$?
		end=$(date +%s.%N)
		[ "$rc" -le 1 ] || { echo "command failed ($rc): $*" >&2; exit 2; }
		echo "$(echo "$end - $start" | bc -l) $(tail -1 "$out")"
		rm -f "$out"
	else # poll VmHWM of the process
		start=$(date +%s.%N)
		"$@" >/dev/null 2>&1 &
		local pid=$! hwm=0 v
		while kill -0 "$pid" 2>/dev/null; do
			v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
			[ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
			sleep 0.02
		done
		wait "$pid" || rc=$?
		end=$(date +%s.%N)
		[ "$rc" -le 1 ] || { echo "command failed ($rc): $*" >&2; exit 2; }
		echo "$(echo "$end - $start" | bc -l) $hwm"
	fi
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

cat "${FILES[@]}" >/dev/null # warm the cache
"$DIR/ckpt" diff "$DIR/base" "$DIR/ft" --progress none >/dev/null || true

declare -A T R
for name in cat values bytes; do T[$name]=""; R[$name]=0; done
for i in $(seq "$RUNS"); do
	for name in cat values bytes; do
		case $name in
		cat) m=$(run_measured cat "${FILES[@]}") ;;
		values) m=$(run_measured "$DIR/ckpt" diff "$DIR/base" "$DIR/ft" --mode values --progress none --format json) ;;
		bytes) m=$(run_measured "$DIR/ckpt" diff "$DIR/base" "$DIR/ft" --mode bytes --progress none --format json) ;;
		esac
		T[$name]+="${m%% *}"$'\n'
		rss=${m##* }
		[ "$rss" -gt "${R[$name]}" ] && R[$name]=$rss
		echo "run $i $name: ${m%% *} s, peak RSS ${rss} KiB" >&2
	done
done
CAT=$(printf '%s' "${T[cat]}" | median)
printf '\n%-22s %10s %8s %10s %14s\n' "what" "median s" "x cat" "GB/s" "peak RSS MiB"
for name in cat values bytes; do
	med=$(printf '%s' "${T[$name]}" | median)
	printf '%-22s %10.3f %8.2f %10.2f %14.1f\n' "$name" "$med" "$(echo "$med / $CAT" | bc -l)" \
		"$(echo "$BYTES / $med / 1000000000" | bc -l)" "$(echo "${R[$name]} / 1024" | bc -l)"
done
echo "targets: values <= 6x cat (>= ~1.5 GB/s), bytes <= 2x cat, peak RSS <= 256 MiB; machine load now: $(cut -d' ' -f1-3 /proc/loadavg)"
