#!/usr/bin/env bash
# Prints the path of a headless-capable Chromium for the interop suite's
# browser test (test_report_browser.py): $CHROMIUM if set, else the first of
# chromium, chromium-browser, google-chrome on PATH. With --install, and none
# found, installs Debian's `chromium` package first (needs root and apt-get;
# about 75 s and 300 MB on Debian 12 with `apt-get update`). Exits 1, saying
# why on stderr, when there is none.
set -euo pipefail
find_chromium() {
	if [ -n "${CHROMIUM:-}" ]; then
		command -v "$CHROMIUM" && return 0
		echo "chromium.sh: \$CHROMIUM=$CHROMIUM is not an executable" >&2
		return 1
	fi
	for c in chromium chromium-browser google-chrome; do
		command -v "$c" && return 0
	done
	return 1
}
if find_chromium; then
	exit 0
fi
if [ "${1:-}" != "--install" ]; then
	echo "chromium.sh: no chromium on PATH (set \$CHROMIUM, or run .ci/interop/chromium.sh --install as root)" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
	echo "chromium.sh: cannot install chromium: needs root and apt-get" >&2
	exit 1
fi
start=$SECONDS
echo "chromium.sh: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends chromium; } >&2; then
	echo "chromium.sh: apt-get could not install chromium" >&2
	exit 1
fi
echo "chromium.sh: installed in $((SECONDS - start)) s" >&2
find_chromium
