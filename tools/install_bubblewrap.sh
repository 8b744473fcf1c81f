#!/usr/bin/env bash
# Install bubblewrap (bwrap), the sandbox the assignment grader runs each submission in
# (bookwork/grading/sandbox.py), from the system's package manager. apt-get and dnf need
# root or sudo. bubblewrap is Linux only; elsewhere the grader refuses to grade.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "Installing bubblewrap needs root or sudo. Install the package 'bubblewrap' as root." >&2
    exit 1
  fi
  SUDO="sudo"
fi
if command -v apt-get >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null
elif command -v dnf >/dev/null 2>&1; then
  $SUDO dnf install -y -q bubblewrap
else
  echo "bubblewrap is needed to grade assignments (and for their tests): install the package" >&2
  echo "'bubblewrap' with your package manager (it is Linux only)." >&2
  exit 1
fi
