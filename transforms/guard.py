"""One element never fails the pipeline: every DoFn hands its outputs for one element through
:func:`isolated`.

::

    element ─► the stage's own work ─► outputs ─► conform (types checked, surrogates escaped) ─► on
                        │ raises (anything but a fatal IndexUnavailable)
                        └─► one report line (URL, stage, reason) ─► a substitute, where the stage makes one

The outputs of one element are collected before any goes on, so a failure half-way sends none of
them (a listing keeps what it listed: its failure marks the folder incomplete, which keeps every
indexed document below it). A stage names the part of its work at fault with :func:`stage`
(``with stage("mime"): …``); the report line carries that name. Only what cannot be one element's
fault ends the crawl: configuration errors (raised before the pipeline runs), an index that cannot
be reached or written (``IndexUnavailable``) and the delete guards. The traceback goes to the log at
debug level (``--debug`` shows it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.utils.windowed_value import WindowedValue
from beamtrawl.transforms.index.base import IndexUnavailable
from beamtrawl.transforms.records import RECORDS, conform, event, lossless

log = logging.getLogger("beamtrawl")


class StageFailure(Exception):
    """An exception raised in the named part of a stage's work (see :func:`stage`)."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(name, error)
        self.name, self.error = name, error


class stage:  # lower case: read as a phrase, ``with stage("mime"):``
    """Names the part of the work at fault when the block raises."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _tb):
        if error is not None and isinstance(error, Exception) and not isinstance(
                error, StageFailure | IndexUnavailable):
            raise StageFailure(self.name, error) from error
        return False


def describe(error: BaseException) -> str:
    """One line: the exception's type and its first line, surrogates escaped."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return lossless(f"{type(error).__name__}: {text}" if text else type(error).__name__)


def _conformed(output):
    """An output whose record is one of ours, conformed (other values pass as they are)."""
    if isinstance(output, beam.pvalue.TaggedOutput):
        return beam.pvalue.TaggedOutput(output.tag, _conformed(output.value))
    if isinstance(output, WindowedValue):
        return output.with_value(_conformed(output.value))
    if RECORDS.get(type(output).__name__) is type(output):
        return conform(output)
    return output


@dataclass(frozen=True)
class Guard:
    """How a stage guards each of its elements, written once per stage: the stage a failure's report line
    names (unless a :func:`stage` block names a part of it), the output the line goes to (``events``; None:
    the main output), its ``kind``, and whether outputs stream on as they come (``keep_partial``: a
    listing's entries, a host's pages, those made before a failure stay) or are held until the element is
    done."""

    where: str
    events: str | None = None
    kind: str = "failed"
    keep_partial: bool = False


def isolated(outputs: Iterable, url: str, guard: Guard,
             substitute: Callable[[str], Iterable] | None = None) -> Iterator:
    """The outputs of one element, conformed; if producing them raises, instead one report line naming
    ``url``, as ``guard`` says, then what ``substitute(reason)`` yields."""
    held = []
    try:
        for output in outputs:
            output = _conformed(output)
            if guard.keep_partial:
                yield output
            else:
                held.append(output)
    except IndexUnavailable:
        raise
    except Exception as err:  # the rule of this module: one element's failure is its own
        name, cause = (err.name, err.error) if isinstance(err, StageFailure) else (guard.where, err)
        log.debug("%s failed at %s", url, name, exc_info=True)
        reason = f"{name} failed: {describe(cause)}"
        line = event(guard.kind, lossless(url), name, reason)
        yield beam.pvalue.TaggedOutput(guard.events, line) if guard.events else line
        if substitute is not None:
            try:
                replacement = [_conformed(output) for output in substitute(reason)]
            except Exception:
                log.debug("%s: no substitute document", url, exc_info=True)
                replacement = []
            yield from replacement
        return
    yield from held
