"""Faults made on purpose, for the tests that show that what is lost in transit deletes nothing
(tests/test_listings.py).

In the crawl's environment, ``BEAMTRAWL_FAULT_DROP_ENTRIES=REGEX`` drops every entry whose URL the expression
finds, and ``BEAMTRAWL_FAULT_DROP_LISTINGS=REGEX`` every listing's evidence whose container it finds, between
discovery and the freshness join, as a runner losing data would, and ``BEAMTRAWL_FAULT_DROP_CLAIMS=REGEX`` every claim
of a folder compared in place (transforms/compare.py) whose folder it finds — in a crawl's first pass only, as a runner
loses entries now and then; with ``BEAMTRAWL_FAULT_PASSES=all`` in the second pass too (pipeline/crawl.py lists
again what the first lost). Unset (always, outside those tests) the graph is what it is without this module.
"""

from __future__ import annotations

import os
import re

import apache_beam as beam
from beamtrawl.transforms.batches import Batch, keep

DROP_ENTRIES, DROP_LISTINGS = "BEAMTRAWL_FAULT_DROP_ENTRIES", "BEAMTRAWL_FAULT_DROP_LISTINGS"
DROP_CLAIMS = "BEAMTRAWL_FAULT_DROP_CLAIMS"
PASSES = "BEAMTRAWL_FAULT_PASSES"


def fault(variable: str, second_pass: bool = False) -> str | None:
    """The regular expression of the fault ``variable`` asks for in this pass, or None."""
    pattern = os.environ.get(variable)
    if not pattern or (second_pass and os.environ.get(PASSES) != "all"):
        return None
    return pattern


def in_transit(records, variable: str, second_pass: bool = False):
    """``records`` (entries, listings or claims) as they reach the freshness join: all, unless ``variable``
    asks for a fault in this pass."""
    pattern = fault(variable, second_pass)
    if pattern is None:
        return records
    expression = re.compile(pattern)
    if variable == DROP_ENTRIES:  # entries travel in folder batches (transforms/batches.py)
        return records | f"Fault{variable.title()}" >> beam.FlatMap(
            keep, lambda url: not expression.search(url)).with_output_types(Batch)
    if variable == DROP_CLAIMS:  # (folder, claim)
        return records | f"Fault{variable.title()}" >> beam.Filter(
            lambda claim: not expression.search(claim[0])).with_output_types(Batch)
    return records | f"Fault{variable.title()}" >> beam.Filter(lambda r: not expression.search(r.url))
