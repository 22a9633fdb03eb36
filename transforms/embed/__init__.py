"""Embedding models: the passages of new and changed documents turned into vectors on the workers, so that a
search can find a document by what a question means, not only by the words it shares (docs/search.md,
"Questions").

Models are a registry (:mod:`beamtrawl.transforms.registry`) like sources and targets: the built-in
``wordllama`` and what other distributions declare under the entry-point group ``beamtrawl.embeddings``. A
model class declares its ``Settings`` (an :class:`EmbeddingSettings` with ``model: Literal[NAME] = NAME``), is
built by ``from_config(settings)`` and offers:

* ``identity() -> str`` (a classmethod: the driver calls it without loading the model) — the model and its
  version: part of the preparation fingerprint, so switching models
  (or upgrading one) embeds every document again;
* ``embed(texts) -> numpy.ndarray`` — one unit-length float32 row per text, in order.

A model runs on the workers (loaded in a DoFn's ``setup``, perhaps more than once per worker and, for a bundle
that is retried, on the same passages again) and in ``search``/``serve`` for the query; it must never download
anything at run time.
"""

from __future__ import annotations

from typing import Literal

from beamtrawl.transforms.fields import Count, Section
from beamtrawl.transforms.registry import Registry, RegistryError
from pydantic import Field

GROUP = "beamtrawl.embeddings"
REGISTRY = Registry("embedding model", GROUP, {"wordllama": f"{__name__}.wordllama_model:WordLlamaModel"})


class EmbeddingSettings(Section):
    """The ``embeddings`` section of one model: ``model`` (its registered name) and the model's own keys. The
    passage bounds are every model's."""

    model: str
    """the registered embedding model"""
    passage_words: Count = Field(80, ge=8, le=2000)
    """words per passage (a passage is embedded with its document's title and the heading above it)"""
    max_passages: Count = Field(200, ge=1, le=10_000)
    """passages embedded per document; the text after them is searched by its words only"""

    def identity(self) -> str:
        """What changes the vectors besides the model: the passage bounds (the fingerprint adds the model's)."""
        return f"{self.passage_words}/{self.max_passages}"


class WordLlamaSettings(EmbeddingSettings):
    """WordLlama 0.4.0.post1's bundled 256-dimension model (``l2_supercat``), read from the wheel: no download"""

    model: Literal["wordllama"] = "wordllama"
    """the embedding model bundled in the wordllama wheel"""


def settings_model(name: str) -> type[EmbeddingSettings]:
    """The model of an ``embeddings`` section naming ``name`` (its class's ``Settings``); raises RegistryError."""
    model = getattr(REGISTRY.load(name), "Settings", None)
    if not (isinstance(model, type) and issubclass(model, EmbeddingSettings)) or \
            model.model_fields["model"].default != name:
        raise RegistryError(f"{REGISTRY.where(name)} is not an embedding model named {name!r} (a model declares "
                            f"`Settings`, an EmbeddingSettings with `model: Literal[{name!r}] = {name!r}`)")
    return model


def load_model(settings: EmbeddingSettings):
    """The model an ``embeddings`` section names, ready to embed; raises RegistryError."""
    return REGISTRY.load(settings.model).from_config(settings)


def lazy_embedder(settings: EmbeddingSettings | None):
    """texts → vectors by the model ``settings`` names, loaded on first use (a search that needs no vector never
    loads it), once for all threads; None when embeddings are off."""
    if settings is None:
        return None
    import threading

    loaded, lock = [], threading.Lock()

    def embed(texts):
        with lock:
            if not loaded:
                loaded.append(load_model(settings))
        return loaded[0].embed(texts)
    return embed


__all__ = ["REGISTRY", "EmbeddingSettings", "WordLlamaSettings", "lazy_embedder", "load_model", "settings_model"]
