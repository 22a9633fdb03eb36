"""Running the preparators for one document: by priority until one succeeds, each failure kept as
"name: reason". A preparator of a container (a mail's attachments, an archive's entries) prepares its
parts with the same configured preparators through :func:`prepare_nested`, to a bounded depth."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from beamtrawl.transforms.preparators.base import PreparationError, PreparatorSpec, Prepared

MAX_NESTING = 3  # a mail in a ZIP in a ZIP in a mail is prepared (Tika's test_recursive_embedded: a DOCX holding a ZIP holding a
# ZIP holding a ZIP of text); deeper parts are listed by name only


def chain_for(preparators, mimetype: str, url: str) -> list[PreparatorSpec]:
    """The preparators accepting a document, highest priority first (ties keep configuration order).
    A catch-all joins only when nothing else accepts: a corrupt PDF must become a substitute document
    with its error in the report, not quietly a metadata-only one."""
    accepting = [p for p in preparators if p.accepts(mimetype, url)]
    specific = [p for p in accepting if not p.catch_all]
    return sorted(specific or accepting, key=lambda p: -p.priority)


class Chooser:
    """:func:`chain_for` over fixed ``preparators``, remembered: it runs for every document in the worker
    (routing, hand-over) and in the preparing child, and its 33 ``accepts`` calls were 8 % of their time.
    A preparator accepts by the MIME type and, where it has one, by whether its URL pattern matches, so
    those are the key; at most ``LIMIT`` keys are kept (a web server names any type it likes)."""

    LIMIT = 512

    def __init__(self, preparators):
        self.preparators = preparators
        self.patterns = tuple({p.url_pattern for p in preparators if p.url_pattern is not None})
        # a preparator class of its own may accept by anything: not remembered
        self.plain = all(type(p).accepts is PreparatorSpec.accepts for p in preparators)
        self.known: dict[tuple, tuple[PreparatorSpec, ...]] = {}

    def __call__(self, mimetype: str, url: str) -> Sequence[PreparatorSpec]:
        if not self.plain:
            return chain_for(self.preparators, mimetype, url)
        key = (mimetype, *[pattern.search(url) is not None for pattern in self.patterns])
        chain = self.known.get(key)
        if chain is None:
            chain = tuple(chain_for(self.preparators, mimetype, url))
            if len(self.known) < self.LIMIT:
                self.known[key] = chain
        return chain


def describe(err: BaseException) -> str:
    if isinstance(err, PreparationError):
        return str(err)
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


@dataclass(frozen=True)
class Chain:
    """The preparators one preparation may run and how it sniffs a part's type; ``depth``: how deep in a
    container the document being prepared lies (0: the document itself)."""

    preparators: tuple
    sniff: Callable[[bytes, str], str]
    depth: int = 0
    choose: Chooser = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "choose", Chooser(self.preparators))

    def run(self, data: bytes, url: str, mimetype: str, start: int = 0,
            on_try: Callable[[int, list[str]], None] | None = None) -> tuple[Prepared | None, list[str]]:
        """(the first accepting preparator's result, or None; the failures before it as "name: reason").
        ``start`` skips the preparators a killed preparing process already tried; ``on_try`` learns the chain
        position of each preparator before it runs and the failures so far, which the process killing it
        reports."""
        errors: list[str] = []
        for position, spec in enumerate(self.choose(mimetype, url)[start:], start):
            if on_try is not None:
                on_try(position, errors)
            token = _CONTEXT.set(self)
            shared = _SHARED.set({"started": time.monotonic()}) if self.depth == 0 else None  # each try afresh
            try:
                prepared = spec(data, url, mimetype)
                if shared is not None:
                    _finish(prepared)
                return prepared, errors
            except Exception as err:  # noqa: BLE001 - a preparator's failure is the document's, not the crawl's
                errors.append(f"{spec.name}: {describe(err)}")
            finally:
                if shared is not None:
                    _SHARED.reset(shared)
                _CONTEXT.reset(token)
        return None, errors


_CONTEXT: contextvars.ContextVar[Chain | None] = contextvars.ContextVar("beamtrawl_prepare", default=None)
_SHARED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("beamtrawl_document", default=None)


def document_shared() -> dict:
    """What one document's preparation shares with the preparation of its parts (a bound spent across a
    container and its members, e.g. OCR's time and pages): one dict per document prepared by a chain, from
    its own preparator down to its deepest part; a new one outside a chain (a preparator called on its own).
    ``started``: when the document's preparation began (``time.monotonic``)."""
    shared = _SHARED.get()
    return shared if shared is not None else {"started": time.monotonic()}


def when_prepared(finish: Callable[[Prepared], None]) -> None:
    """Have ``finish`` complete the document being prepared once its own preparator returned it (a part's
    OCR marks the container's document). Outside a chain it does nothing: the preparator's result is final."""
    if _SHARED.get() is not None:
        _SHARED.get().setdefault("finish", []).append(finish)


def _finish(prepared: Prepared) -> None:
    for finish in document_shared().get("finish", ()):
        finish(prepared)


def nesting_depth() -> int:
    """How deep in a container the document being prepared lies (0: a document itself, or outside a crawl)."""
    context = _CONTEXT.get()
    return context.depth if context is not None else 0


def prepare_part(data: bytes, url: str, text_only: bool = False,
                 declared: str = "") -> tuple[Prepared | None, list[str], str]:
    """Prepare a part of the document being prepared (``url`` names the part, e.g. ``…/a.zip!/b.pdf``)
    with the configured preparators: (the result or None, the preparators' failures, the part's MIME type).
    None without failures when no preparator reads its type, nesting is too deep, or ``text_only`` and it
    is not text. Called outside a preparation (a preparator tested on its own), it prepares nothing and
    knows no type. ``declared``: the type the container states for the part, which is taken instead of
    sniffing (a web archive's HTTP Content-Type: a web page's type is not sniffed when crawled either)."""
    context = _CONTEXT.get()
    if context is None:
        return None, [], declared
    mimetype = declared or context.sniff(data, url)
    if not data or context.depth >= MAX_NESTING or (text_only and not mimetype.startswith("text/")):
        return None, [], mimetype
    prepared, errors = replace(context, depth=context.depth + 1).run(data, url, mimetype)
    return prepared, errors, mimetype


def prepare_nested(data: bytes, url: str) -> Prepared | None:
    """The part prepared as by :func:`prepare_part`, or None."""
    return prepare_part(data, url)[0]
