"""What a command loads: Beam (0.7 s) only once a pipeline is built, and a source's client only for
its scheme, so searching and a crawl that needs no pipeline (pipeline/unchanged.py) start fast."""

from __future__ import annotations

import subprocess
import sys

import pytest
from beamtrawl.transforms.sources import schemes, source_for


def test_the_driver_reads_config_index_and_mailboxes_without_beam():
    code = ("import sys, beamtrawl.pipeline.cli, beamtrawl.pipeline.crawl, beamtrawl.pipeline.unchanged, beamtrawl.transforms.sources.imap, "
            "beamtrawl.transforms.index, beamtrawl.transforms.records; sys.exit('apache_beam' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize("scheme", ["file", "http", "https", "smb", "imap", "imaps"])
def test_each_scheme_has_the_source_that_names_it(scheme):
    assert scheme in schemes()
    assert scheme in source_for(f"{scheme}://host/x").schemes
