"""What dense retrieval embeds with: MiniLM and WordLlama, one vector per text holding both.

A text's vector is MiniLM's scaled by sqrt(1 - STATIC_SHARE) followed by WordLlama's scaled by
sqrt(STATIC_SHARE), so the dot product of two such vectors is (1 - share) x MiniLM's cosine + share x
WordLlama's: the rest of dense retrieval (the tools' matrix, a request's summed sentence vectors, the
fusion with the words) works on it unchanged. Mixing the two cosines was worth more than either model
alone on every dev set (docs/decisions/0014-discovery-hybrid-retrieval.md, issue 14).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from jarvis.aggregator.discovery.embedding import MAX_TOKENS, Embedder, Vectors
from jarvis.aggregator.discovery.static import StaticEmbedder

# WordLlama's share of a dense cosine. Recall@5 on all 10,339 MetaTool dev queries / the 94 LiveMCPBench
# task questions (hybrid, dense weight 0.75): 0 (MiniLM alone) 0.8000 / 0.4496; 0.1 0.8062 / 0.4584; 0.2
# 0.8100 / 0.4771; 0.25 0.8118 / 0.4771; 0.3 0.8118 / 0.4708; 0.35 0.8125 / 0.4691; 1 (WordLlama alone)
# 0.7573 / 0.4088. 0.25 is the middle of the plateau both sets share.
STATIC_SHARE = 0.25


class TextEncoder(Protocol):
    """A model that turns texts into vectors whose dot products rank tools (the dense index's model)."""

    model_id: str  # names the function: vectors stored under another id are never reused
    dimension: int

    def embed(self, texts: list[str], max_tokens: int = MAX_TOKENS) -> Vectors: ...


class Ensemble:
    """MiniLM's and WordLlama's vectors of a text, side by side, weighted by STATIC_SHARE."""

    def __init__(self, contextual: Embedder | None = None, static: StaticEmbedder | None = None) -> None:
        self._contextual = contextual or Embedder()
        self._static = static or StaticEmbedder()
        self.dimension = self._contextual.dimension + self._static.dimension
        self.model_id = f"{self._contextual.model_id}+{self._static.model_id}*{STATIC_SHARE}"
        self._weights = np.float32(math.sqrt(1 - STATIC_SHARE)), np.float32(math.sqrt(STATIC_SHARE))

    def embed(self, texts: list[str], max_tokens: int = MAX_TOKENS) -> Vectors:
        """One vector per text; `max_tokens` caps what MiniLM reads (WordLlama reads every token: it costs a
        row read each)."""
        contextual, static = self._weights
        return np.hstack([contextual * self._contextual.embed(texts, max_tokens), static * self._static.embed(texts)])
