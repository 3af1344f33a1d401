#!/usr/bin/env bash
# setup-chromium.sh: make sure headless Chromium is available for tests/report_test.go.
#
# Installs Debian's `chromium` package with apt-get when it is missing and this script runs
# as root; otherwise it says what to do and exits 1. Prints the browser's path on success.
# Usage: tests/setup-chromium.sh
set -euo pipefail

find_chromium() {
  for c in chromium chromium-browser google-chrome-stable google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

if path="$(find_chromium)"; then
  echo "$path"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-chromium: chromium is not installed and this is not root;" >&2
  echo "  install it with: sudo apt-get install -y --no-install-recommends chromium" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-chromium: chromium is not installed and there is no apt-get; install Chromium by hand" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# fonts-dejavu-core: the report's text needs at least one font to render in the screenshot.
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2

path="$(find_chromium)" || { echo "setup-chromium: installed, but no chromium binary found" >&2; exit 1; }
echo "$path"
