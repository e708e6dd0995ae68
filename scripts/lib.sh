#!/usr/bin/env bash
# Shared helpers of the benchmark scripts (sourced, not run).
#   bench_setup DIR   builds ckpt into DIR and generates the ~1.2 GB FP8 pair
#                     DIR/base, DIR/ft once (package ckpttest, Large options)
#   median            median of numbers on stdin
#   med A B ...       median of the arguments
#   seconds CMD...    wall seconds of CMD (exit 0 or 1 accepted)
#   peak_rss CMD...   peak RSS of CMD in MiB (/usr/bin/time, else VmHWM polling);
#                     CMD must be a program, not a shell function
#   ratio A B         A / B
#   gbps BYTES SECS   GB/s
set -euo pipefail

need_tools() {
	local missing=()
	command -v bc >/dev/null || missing+=(bc)
	command -v jq >/dev/null || missing+=(jq)
	if [ ${#missing[@]} -gt 0 ]; then
		echo "installing ${missing[*]} (needed by the benchmark scripts)" >&2
		apt-get install -y "${missing[@]}" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y "${missing[@]}" >/dev/null; }
	fi
}

bench_setup() {
	local dir=$1
	need_tools
	mkdir -p "$dir"
	go build -o "$dir/ckpt" ./cmd/ckpt
	if [ ! -f "$dir/ft/model.safetensors.index.json" ]; then
		echo "generating the benchmark pair in $dir (once)..." >&2
		go run ./internal/cmd/genfixture -size large -out "$dir" >/dev/null
	fi
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
med() { printf '%s\n' "$@" | median; }
ratio() { echo "$1 / $2" | bc -l; }
gbps() { echo "$1 / $2 / 1000000000" | bc -l; }

seconds() {
	local s e rc=0
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || rc=$?
	e=$(date +%s.%N)
	[ "$rc" -le 1 ] || { echo "command failed ($rc): $*" >&2; return 2; }
	echo "$e - $s" | bc -l
}

peak_rss() {
	local rc=0
	if [ -x /usr/bin/time ]; then
		local out
		out=$(mktemp)
		/usr/bin/time -f %M -o "$out" "$@" >/dev/null 2>&1 || rc=$?
		[ "$rc" -le 1 ] || { echo "command failed ($rc): $*" >&2; return 2; }
		echo "$(tail -1 "$out") / 1024" | bc -l
		rm -f "$out"
		return
	fi
	"$@" >/dev/null 2>&1 &
	local pid=$! hwm=0 v
	while kill -0 "$pid" 2>/dev/null; do
		v=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
		[ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
		sleep 0.02
	done
	wait "$pid" || rc=$?
	[ "$rc" -le 1 ] || { echo "command failed ($rc): $*" >&2; return 2; }
	echo "$hwm / 1024" | bc -l
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
