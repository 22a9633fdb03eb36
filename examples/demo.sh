#!/usr/bin/env bash
# Install beamtrawl, crawl the bundled example corpus into the embedded index, and search it.
set -euo pipefail
cd "$(dirname "$0")/.."
# libmagic types documents; mandoc is the helper program the man-page preparator uses
if ! /sbin/ldconfig -p | grep -q libmagic.so.1 || ! command -v mandoc >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 mandoc
fi
. tests/venv.sh  # the project's virtual environment .venv (created once)
pip_install -e .
beamtrawl crawl examples/crawl.yaml || [ $? -eq 1 ]
beamtrawl search "spectrometer calibration" --config examples/crawl.yaml --limit 3
