"""WordLlama (``wordllama`` 0.4.0.post1, pinned): a 256-dimension model of token embeddings averaged, bundled in
its wheel with its tokenizer. Its default ``load()`` looks for the tokenizer in the wrong folder and then tries
the network; loading from the package's own folder with downloads disabled works offline (tests check it in a
network namespace without a route)."""

from __future__ import annotations

from pathlib import Path

from beamtrawl.transforms.embed import WordLlamaSettings

CONFIG, DIMENSIONS = "l2_supercat", 256
BATCH = 256  # texts per call into the model: its own default (64) spends more time per text in Python


class WordLlamaModel:
    Settings = WordLlamaSettings

    @classmethod
    def from_config(cls, settings: WordLlamaSettings) -> WordLlamaModel:
        return cls()

    def __init__(self):
        import wordllama  # here: numpy, tokenizers and safetensors cost a search that needs no vectors 0.3 s

        self._model = wordllama.WordLlama.load(CONFIG, cache_dir=Path(wordllama.__file__).parent,
                                               disable_download=True, dim=DIMENSIONS)

    @classmethod
    def identity(cls) -> str:
        """Without loading the model: the driver puts it in the preparation fingerprint."""
        return f"wordllama {_version()} {CONFIG} {DIMENSIONS}"

    def embed(self, texts):
        """Unit-length float32 rows, one per text (an empty text: a row of zeros, which matches nothing)."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.nan_to_num(self._model.embed(list(texts), norm=True, batch_size=BATCH).astype(np.float32))


def _version() -> str:
    from importlib.metadata import version

    return version("wordllama")
