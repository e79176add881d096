"""A static word-embedding model beside MiniLM: WordLlama's l2_supercat, its first 128 dimensions.

WordLlama's vectors are one row per token of Llama 2's tokenizer, trained from the input embeddings of
several large language models (the `wordllama` PyPI package ships the weights, 16 MB of float16, and the
tokenizer in its wheel; nothing is downloaded). A text's vector is the mean of its tokens' rows, unit
length, as WordLlama computes it: no model call, tens of microseconds a text. WordLlama is trained so that
a vector's first 64, 128 or 256 dimensions are each a model of their own (Matryoshka); 128 ranked tools as
well as 256 in the mix (recall@5 MetaTool dev 0.8116 / LiveMCPBench tasks 0.4771, against 0.8118 / 0.4771; 64:
0.8071 / 0.4469) at half the memory and half the product with the tools' matrix. It knows words MiniLM's
128-token window and 30,000-word vocabulary see poorly (product and service names, file types), and its
mistakes are not MiniLM's, so tool_find mixes both models' cosines (`ensemble.py`).
"""

from __future__ import annotations

import numpy as np

from jarvis.aggregator.discovery.embedding import ModelUnavailable, Vectors, package_files, weights_hash

PACKAGE = "wordllama"
INSTALL = "wordllama (scripts/bootstrap installs it)"
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
DIMENSION = 128


class StaticEmbedder:
    """WordLlama l2_supercat sentence vectors (128 floats, unit length; zeros for a text with no token)."""

    dimension = DIMENSION

    def __init__(self) -> None:
        try:
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(f"{exc.name} is not installed (scripts/bootstrap installs it)") from None
        root = package_files(PACKAGE, (WEIGHTS, TOKENIZER), INSTALL)
        self.model_id = f"wordllama-l2-supercat-{DIMENSION}-{weights_hash(root / WEIGHTS, PACKAGE)}"
        # Only the columns used are read; float16, kept so (8 MB); averaged in float32.
        with safe_open(str(root / WEIGHTS), framework="np") as weights:
            self._rows = np.ascontiguousarray(weights.get_slice("embedding.weight")[:, :DIMENSION])
        tokenizer = Tokenizer.from_file(str(root / TOKENIZER))
        tokenizer.no_padding()
        tokenizer.no_truncation()  # a token costs a row read: the whole text is read
        self._tokenizer = tokenizer

    def embed(self, texts: list[str]) -> Vectors:
        """One vector per text, in order: the mean of its tokens' rows, normalised."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        last = len(self._rows) - 1
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts, add_special_tokens=False)):
            if encoding.ids:
                pooled = np.mean(self._rows[np.minimum(encoding.ids, last)], axis=0, dtype=np.float32)
                out[row] = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return out
