"""The crawl's embedding stage: prepared documents get their passages' vectors before they are written.

::

    documents (per branch) ─► BatchElements ─► Embed ─► documents with ``passages`` and ``vectors``
                                                    └─► events (embedded; not_embedded with a reason)

Only documents that were prepared reach it, so only new and changed documents are embedded (the model belongs
to the preparation fingerprint: another model re-prepares, and so re-embeds, every document). A batch's
passages go to the model in one call; a batch the model fails on is embedded again document by document, and a
document it still fails on is written without vectors (found by its words only) with one report line. The
model is loaded in ``setup``, once per DoFn instance; a retried bundle embeds its passages again, which gives
the same vectors.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from beamtrawl.transforms.embed import EmbeddingSettings, load_model
from beamtrawl.transforms.embed.passages import passages
from beamtrawl.transforms.guard import describe
from beamtrawl.transforms.progress import timed
from beamtrawl.transforms.records import Event, IndexDoc, event

EVENTS = "events"
BATCH = 64  # documents per call into the model (their passages together)


def encode(vectors) -> bytes:
    """A document's passage vectors as the index stores them: float16, row after row."""
    import numpy as np

    return np.asarray(vectors, dtype=np.float16).tobytes()


class _Embed(beam.DoFn):
    def __init__(self, settings: EmbeddingSettings):
        self.settings = settings
        self.us = Metrics.counter("stage_us", "embed")

    def setup(self):
        self.model = load_model(self.settings)

    def process(self, batch):
        return timed(self.us, self._embed(batch))

    def _embed(self, batch):
        docs = [IndexDoc(*doc) for doc in batch]
        cut = [passages(d.title, d.headlines, d.content, self.settings.passage_words, self.settings.max_passages)
               for d in docs]
        try:
            vectors = self.model.embed([text for _, texts in cut for text in texts])
        except Exception:  # noqa: BLE001 - which document the model fails on is found one by one below
            vectors = None
        at = 0
        for doc, (spans, texts) in zip(docs, cut, strict=True):
            try:
                mine = vectors[at:at + len(texts)] if vectors is not None else self.model.embed(texts)
            except Exception as err:  # noqa: BLE001 - a model's failure on one document is that document's line
                yield beam.pvalue.TaggedOutput(EVENTS, event("not_embedded", doc.url, "embed", describe(err)))
                yield doc
                continue
            at += len(texts)
            yield doc._replace(passages=[n for span in spans for n in span], vectors=encode(mine))
        yield beam.pvalue.TaggedOutput(EVENTS, event("embedded", count=len(docs)))


class Embed(beam.PTransform):
    """Branches of documents → (the same branches, embedded; their events)."""

    def __init__(self, settings: EmbeddingSettings):
        super().__init__()
        self.settings = settings

    def expand(self, branches):
        embedded, events = [], []
        for n, docs in enumerate(branches):
            done = (docs
                    | f"Batch{n}" >> beam.BatchElements(min_batch_size=1, max_batch_size=BATCH)
                    | f"Embed{n}" >> beam.ParDo(_Embed(self.settings)).with_output_types(IndexDoc).with_outputs(
                        EVENTS, main="docs"))
            embedded.append(done.docs)
            events.append(done[EVENTS])
        return tuple(embedded), tuple(events) | "EmbedEvents" >> beam.Flatten().with_output_types(Event)
