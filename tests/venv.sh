# Sourced by examples/demo.sh and tests/run.sh: create (once) and activate the project's virtual
# environment `.venv`, so both commands work with a system Python that refuses `pip install` (PEP 668,
# Debian's and Ubuntu's /usr/bin/python3) as well as with any other Python >= 3.11.
# PYTHON=/path/to/python3.12 picks the interpreter; an existing .venv is reused.
if [ ! -x .venv/bin/python ]; then
  py=${PYTHON:-python3}
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "beamtrawl needs Python 3.11 or newer; $py is $("$py" --version 2>&1)" >&2; exit 2; }
  if ! "$py" -m venv .venv 2>/dev/null; then  # Debian/Ubuntu ship venv's ensurepip separately
    rm -rf .venv
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      "python3-venv" "python$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv"
    "$py" -m venv .venv
  fi
fi
# shellcheck disable=SC1091
. .venv/bin/activate

# pip install, without the warning pip gives on every run about jusText's `lxml[html_clean]` (an extra
# lxml 6 dropped; beamtrawl depends on lxml_html_clean itself, which is what the extra installed).
pip_install() {
  python -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v "does not provide the extra 'html_clean'" >&2)
}
