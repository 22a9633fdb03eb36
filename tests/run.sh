#!/usr/bin/env bash
# Install beamtrawl with its test dependencies, then run the whole test suite.
# Usage: tests/run.sh [pytest arguments]      (CI runs exactly this: .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

# python-magic needs libmagic; setpriv (util-linux) lets root tests drop permission overrides.
if ! ldconfig -p | grep -q libmagic.so.1 || ! command -v setpriv >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 util-linux
fi
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
python3 -m ruff check pipeline transforms plugins runners tests bench
python3 -m pytest "$@"
