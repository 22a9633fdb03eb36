#!/usr/bin/env bash
# Install beamtrawl, crawl the bundled example corpus into the embedded index, and search it.
set -euo pipefail
cd "$(dirname "$0")/.."
# libmagic types documents; mandoc, extract_chmLib (libchm-bin), mdbtools (Access databases), wpd2text
# (libwpd-tools: WordPerfect), vsd2text (libvisio-tools: Visio), 7z (p7zip-full: imploded ZIP entries) and bsdtar (libarchive-tools: RAR) are the helper programs built-in preparators use; tesseract with its English pack (the example's ocr.languages) reads text in images and scanned PDF pages
if ! /sbin/ldconfig -p | grep -q libmagic.so.1 || ! command -v mandoc >/dev/null || ! command -v extract_chmLib >/dev/null \
   || ! command -v mdb-export >/dev/null || ! command -v wpd2text >/dev/null || ! command -v vsd2text >/dev/null || ! command -v 7z >/dev/null || ! command -v bsdtar >/dev/null || ! command -v tesseract >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 mandoc libchm-bin mdbtools \
    libwpd-tools libvisio-tools p7zip-full libarchive-tools tesseract-ocr tesseract-ocr-eng
fi
. tests/venv.sh  # the project's virtual environment .venv (created once)
pip_install -e .
beamtrawl crawl examples/crawl.yaml || [ $? -eq 1 ]
beamtrawl search "spectrometer calibration" --config examples/crawl.yaml --limit 3
