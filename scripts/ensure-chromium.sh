#!/usr/bin/env bash
# Installs Debian's Chromium for the playground's browser test when it is missing (never a browser download of
# Playwright's own). Prints the executable's path; exits non-zero, saying why, when it cannot be had.
set -euo pipefail

find_chromium() {
  for candidate in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if find_chromium; then exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is missing and apt-get is not available: install Chromium or set CHROMIUM_PATH." >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "Chromium is missing and installing it with apt-get needs root: run 'sudo apt-get install chromium' or set CHROMIUM_PATH." >&2
  exit 2
fi

echo "Installing Debian's chromium package (once)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
find_chromium
