#!/usr/bin/env bash
# Install what `make pdf` needs from the system's package manager: XeLaTeX, the LaTeX
# packages Sphinx's LaTeX writer uses, latexmk, the GNU FreeFont faces (Greek, accents,
# the star of starred exercises), rsvg-convert for the SVG plots and poppler's pdfinfo/pdftotext for the PDF checks.
set -euo pipefail
PACKAGES="texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended
  latexmk fonts-freefont-otf librsvg2-bin poppler-utils"
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
else
  echo "The PDF needs XeLaTeX, latexmk, the FreeFont fonts and poppler's pdfinfo: install" >&2
  echo "them with your package manager (Debian: $PACKAGES)." >&2
  exit 1
fi
