"""AssignGroups: the access-control step between Discover and Freshness.

::

    entries ─► AssignGroups ─┬─► entries with groups ─► Freshness (a change of groups re-indexes)
                             ├─► events (a controller failed: a "failed" problem of stage "access")
                             ├─► URLs to keep as indexed (failed ones: neither re-indexed nor deleted)
                             └─► arrivals of those at the freshness join, for their listings' evidence

The controllers (transforms/enrich/access.py) are pickled with the DoFn; a custom controller class
is built in ``setup`` on each worker.
"""

from __future__ import annotations

import apache_beam as beam
from beamtrawl.transforms.batches import Batch, pack, unpack
from beamtrawl.transforms.enrich.access import CustomController, access_of
from beamtrawl.transforms.guard import Guard, isolated
from beamtrawl.transforms.records import Entry, arrival

EVENTS, KEEP, ARRIVED = "events", "keep", "arrived"
_GUARD = Guard("access", EVENTS)


class _AssignGroups(beam.DoFn):
    def __init__(self, controllers):
        self.controllers = controllers

    def setup(self):
        for controller in self.controllers:
            if isinstance(controller, CustomController):
                controller.build()

    def process(self, batch):
        """A folder batch (transforms/batches.py): its entries with their groups, as a batch again."""
        key, assigned, outputs = batch[0], [], []
        for entry in unpack(batch, Entry):
            # A controller that fails for one document keeps that document as indexed (neither re-indexed nor deleted).
            for output in isolated(self._assign(entry), entry.url, _GUARD, substitute=lambda _reason, entry=entry: [
                    beam.pvalue.TaggedOutput(KEEP, entry.url),
                    *([beam.pvalue.TaggedOutput(ARRIVED, arrival(entry.listing))] if entry.listing else [])]):
                if isinstance(output, beam.pvalue.TaggedOutput):
                    outputs.append(output)
                else:
                    assigned.append(tuple(output))
        if assigned:
            outputs.append((key, pack(assigned)))
        return outputs

    def _assign(self, entry):
        access = access_of(self.controllers, entry)
        yield entry._replace(groups=list(access.groups), denied=list(access.denied))


class AssignGroups(beam.PTransform):
    """entries in folder batches → (the same with groups, events, URLs whose indexed version must stay, their
    arrivals)."""

    def __init__(self, controllers):
        super().__init__()
        self.controllers = tuple(controllers)

    def expand(self, entries):
        out = entries | "Groups" >> beam.ParDo(_AssignGroups(self.controllers)).with_output_types(
            Batch).with_outputs(EVENTS, KEEP, ARRIVED, main="entries")
        return out["entries"], out[EVENTS], out[KEEP], out[ARRIVED]
