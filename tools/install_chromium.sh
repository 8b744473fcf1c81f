#!/usr/bin/env bash
# Install Chromium for the browser tests from the system's package manager.
# (The tests never download a browser of their own.) apt-get needs root or sudo.
# To use a Chromium or Chrome that is already installed elsewhere instead, set
# CHROMIUM=/path/to/the/binary for make test and pytest.
set -euo pipefail
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "Installing Chromium with apt-get needs root or sudo. Install the package 'chromium'" >&2
      echo "as root, or set CHROMIUM=/path/to/chromium to use one you have." >&2
      exit 1
    fi
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
elif command -v brew >/dev/null 2>&1; then
  brew install --cask chromium
else
  echo "Chromium is needed for the browser tests: install it with your package manager" >&2
  echo "(the tests look for 'chromium' or 'chromium-browser' on PATH, or CHROMIUM=/path/to/binary)." >&2
  exit 1
fi
