#!/usr/bin/env bash
# Install Chromium for the browser tests from the system's package manager.
# (The tests never download a browser of their own.)
set -euo pipefail
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
elif command -v brew >/dev/null 2>&1; then
  brew install --cask chromium
else
  echo "Chromium is needed for the browser tests: install it with your package manager" >&2
  echo "(the tests look for 'chromium' or 'chromium-browser' on PATH, or CHROMIUM=/path/to/binary)." >&2
  exit 1
fi
