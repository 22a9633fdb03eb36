"""What a command loads: Beam (0.7 s) only once a pipeline is built, and a source's client only for
its scheme, so searching and a crawl that needs no pipeline (pipeline/unchanged.py) start fast."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from beamtrawl.transforms.sources import schemes, source_for


def test_the_driver_reads_a_config_and_searches_an_index_without_beam(tmp_path):
    """``beamtrawl search``'s own steps (load the configuration, open the index, search it), in a process
    that also imports the crawl's driver and the IMAP source: Beam is never loaded."""
    from tests.test_query_and_search import build_index

    build_index(tmp_path / "index.sqlite").close()
    config = tmp_path / "crawl.yaml"
    config.write_text(f"start: [{{url: {tmp_path}}}]\nindex: {{path: {tmp_path / 'index.sqlite'}}}\n")
    code = f"""import sys
import beamtrawl.pipeline.cli, beamtrawl.pipeline.crawl, beamtrawl.pipeline.unchanged
import beamtrawl.transforms.sources.imap, beamtrawl.transforms.records
from beamtrawl.pipeline.cli import _search
from beamtrawl.pipeline.config import load_config
assert _search(load_config({str(config)!r}, crawling=False), "spectrometer lamp", 10, True) == 0
sys.exit('apache_beam' in sys.modules)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [hit["url"].rsplit("/", 1)[-1] for hit in json.loads(done.stdout)] == ["notes.txt"]


@pytest.mark.parametrize("scheme", ["file", "http", "https", "smb", "imap", "imaps"])
def test_each_scheme_has_the_source_that_names_it(scheme):
    assert scheme in schemes()
    assert scheme in source_for(f"{scheme}://host/x").schemes


def test_beam_is_imported_without_mongodb_and_a_plugin_can_still_import_it():
    """runners/beam_import.py: Beam's MongoDB IO (pymongo, bson) is refused while Beam loads, quietly, and
    importable again afterwards; the workers' and the command's crawl path call it first."""
    code = """import sys
from beamtrawl.runners.beam_import import import_beam
import_beam()
assert "apache_beam" in sys.modules and "pymongo" not in sys.modules and "bson" not in sys.modules
import pymongo
print(pymongo.version)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "bson" not in done.stderr  # Beam's warning that it found no bson is not shown
    assert done.stdout.strip()


def test_a_view_of_the_pipeline_options_is_made_once_and_shares_their_values():
    from apache_beam.options.pipeline_options import DirectOptions, TypeOptions
    from beamtrawl.runners import pipeline_options
    from beamtrawl.runners.view_once import ViewOnceOptions

    options = pipeline_options(None, ["--direct_num_workers=3"], target=type("T", (), {"local_only": True}))
    assert isinstance(options, ViewOnceOptions)
    assert options.view_as(TypeOptions) is options.view_as(TypeOptions)
    options.view_as(DirectOptions).direct_running_mode = "in_memory"
    assert options.view_as(DirectOptions).direct_running_mode == "in_memory"
    assert options.get_all_options()["direct_running_mode"] == "in_memory"
    assert options.view_as(DirectOptions).direct_num_workers == 3
