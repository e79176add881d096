"""all-MiniLM-L6-v2's encoder written as an int8 ONNX graph, from its safetensors weights.

The graph is what ONNX Runtime's dynamic quantisation (`quantize_dynamic`, int8 weights per output
channel) makes of the float BERT encoder, written directly: every weight matrix is stored as int8 with
one scale per output column (symmetric, -127..127), each activation entering it is quantised to uint8
at run time (DynamicQuantizeLinear), multiplied in integers (MatMulInteger) and scaled back; the word
and position tables are stored as uint8 with one scale each and dequantised after the lookup. Written
with the vendored subset of ONNX's protobuf schema (`jarvis.onnx.onnx_pb2`), so neither the `onnx`
package nor the quantisation tool is needed at run time or install time.

Where ONNX Runtime has a fused CPU kernel that computes the same thing to the bit, the graph uses it
(`LAYOUT`): each layer's attention is one `QAttention` (the int8 query/key/value product, its scales
and bias, and the 12 heads' softmax attention; 13 nodes before) and GELU is one `Gelu` (5 before).
Texts are never padded (one text per call), so there is no mask. ONNX Runtime's own optimiser fuses
the rest (DynamicQuantizeMatMul, SkipLayerNormalization) as it did before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from jarvis.onnx import onnx_pb2 as pb

_TYPES = {
    np.dtype(np.float32): pb.TensorProto.FLOAT,
    np.dtype(np.uint8): pb.TensorProto.UINT8,
    np.dtype(np.int8): pb.TensorProto.INT8,
    np.dtype(np.int64): pb.TensorProto.INT64,
}
IR_VERSION = 8
OPSET = 17
CONTRIB = "com.microsoft"  # ONNX Runtime's own operators (QAttention, Gelu), version 1
# Names how the graph is laid out (which nodes compute the function), not the function: a layout that
# computes the same vectors keeps the vectors' id (embedding.FUNCTION) and only writes a new graph file.
LAYOUT = "qattn1"


class _Graph:
    def __init__(self) -> None:
        self.proto = pb.GraphProto(name="minilm")

    def const(self, name: str, value: Any) -> str:
        array = np.asarray(value)  # (not ascontiguousarray: it makes scalars 1-d; tobytes is C order anyway)
        self.proto.initializer.append(
            pb.TensorProto(name=name, dims=array.shape, data_type=_TYPES[array.dtype], raw_data=array.tobytes())
        )
        return name

    def op(self, kind: str, inputs: list[str], out: str | list[str], domain: str = "", **attrs: Any) -> str:
        outputs = [out] if isinstance(out, str) else out
        node = self.proto.node.add(op_type=kind, input=inputs, output=outputs, name=outputs[0], domain=domain)
        for key, value in attrs.items():
            if isinstance(value, float):
                node.attribute.add(name=key, type=pb.AttributeProto.FLOAT, f=value)
            elif isinstance(value, int):
                node.attribute.add(name=key, type=pb.AttributeProto.INT, i=value)
            else:
                node.attribute.add(name=key, type=pb.AttributeProto.INTS, ints=list(value))
        return outputs[0]

    def value(self, name: str, elem: int, shape: list[str | int]) -> pb.ValueInfoProto:
        info = pb.ValueInfoProto(name=name)
        info.type.tensor_type.elem_type = elem
        for dim in shape:
            if isinstance(dim, str):
                info.type.tensor_type.shape.dim.add(dim_param=dim)
            else:
                info.type.tensor_type.shape.dim.add(dim_value=dim)
        return info


def _int8_columns(weight: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """`weight` (in, out) as int8 with one symmetric scale per output column."""
    absmax = np.abs(weight).max(axis=0).astype(np.float64)
    scale = np.where(absmax > 0, absmax / 127.0, 1.0).astype(np.float32)
    quantised = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    return quantised, scale


def _uint8_table(table: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.uint8], np.float32, np.uint8]:
    """A lookup table as uint8 with one scale and zero point (asymmetric, 0 always representable)."""
    low, high = min(float(table.min()), 0.0), max(float(table.max()), 0.0)
    scale = np.float32((high - low) / 255.0 or 1.0)
    zero = np.uint8(round(-low / float(scale)))
    quantised = np.clip(np.round(table / scale) + int(zero), 0, 255).astype(np.uint8)
    return quantised, scale, zero


def build(weights_file: Path, config: dict[str, Any]) -> bytes:
    """The serialised int8 ONNX model: ids and positions of one unpadded text in, last hidden states out."""
    from safetensors.numpy import load_file

    w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(str(weights_file)).items()}
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    g = _Graph()
    const, op = g.const, g.op
    no_zero = const("wz", np.int8(0))  # the weights are symmetric

    def quantised(x: str) -> tuple[str, str, str]:
        """`x` as uint8 with the scale and zero point of this call's values."""
        q, x_scale, x_zero = x + ".q", x + ".qs", x + ".qz"
        op("DynamicQuantizeLinear", [x], [q, x_scale, x_zero])
        return q, x_scale, x_zero

    def int8_weights(prefix: str, out: str) -> tuple[str, str, str]:
        # Stored (out, in) as torch's Linear; transposed so the graph computes x @ W + b.
        weight, scale = _int8_columns(w[prefix + ".weight"].T)
        return const(out + ".w", weight), const(out + ".ws", scale), const(out + ".b", w[prefix + ".bias"])

    def linear(x: str, prefix: str, out: str) -> str:
        q, x_scale, x_zero = quantised(x)
        weight, scale, bias = int8_weights(prefix, out)
        product = op("MatMulInteger", [q, weight, x_zero, no_zero], out + ".i32")
        scaled = op(
            "Mul",
            [
                op("Cast", [product], out + ".f", to=pb.TensorProto.FLOAT),
                op("Mul", [x_scale, scale], out + ".s"),
            ],
            out + ".mm",
        )
        # ONNX Runtime fuses these five nodes into one DynamicQuantizeMatMul.
        return op("Add", [scaled, bias], out)

    def attention(x: str, prefix: str, out: str) -> str:
        """The int8 query/key/value product (as `linear` computes it) and softmax attention over all tokens."""
        q, x_scale, x_zero = quantised(x)
        weight, scale, bias = int8_weights(prefix, out)
        inputs = [q, weight, bias, x_scale, scale, "", x_zero, no_zero]  # "": no mask
        return op("QAttention", inputs, out, domain=CONTRIB, num_heads=heads)

    def lookup(table: str, ids: str, out: str) -> str:
        rows, scale, zero = _uint8_table(w[table])
        found = op("Gather", [const(out + ".t", rows), ids], out + ".q")
        return op("DequantizeLinear", [found, const(out + ".s", scale), const(out + ".z", zero)], out)

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
            lookup(e + "word_embeddings.weight", "input_ids", "we"),
            lookup(e + "position_embeddings.weight", "positions", "pe"),
        ],
        "e1",
    )
    x = norm(op("Add", [x, const("type0", w[e + "token_type_embeddings.weight"][0])], "e2"), e + "LayerNorm", "emb")
    for i in range(int(config["num_hidden_layers"])):
        p, a, n = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention.", f"l{i}."
        w[a + "qkv.weight"] = np.concatenate([w[f"{a}self.{k}.weight"] for k in ("query", "key", "value")])
        w[a + "qkv.bias"] = np.concatenate([w[f"{a}self.{k}.bias"] for k in ("query", "key", "value")])
        context = attention(x, a + "qkv", n + "qkv")
        x = norm(
            op("Add", [linear(context, a + "output.dense", n + "o"), x], n + "r1"), a + "output.LayerNorm", n + "x1"
        )
        # BERT's exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)).
        gelu = op("Gelu", [linear(x, p + "intermediate.dense", n + "up")], n + "gelu", domain=CONTRIB)
        x = norm(
            op("Add", [linear(gelu, p + "output.dense", n + "down"), x], n + "r2"), p + "output.LayerNorm", n + "x2"
        )
    op("Identity", [x], "hidden")
    g.proto.input.extend(
        [
            g.value("input_ids", pb.TensorProto.INT64, ["batch", "tokens"]),
            g.value("positions", pb.TensorProto.INT64, ["tokens"]),
        ]
    )
    g.proto.output.append(g.value("hidden", pb.TensorProto.FLOAT, ["batch", "tokens", hidden]))
    model = pb.ModelProto(ir_version=IR_VERSION, producer_name="jarvis", graph=g.proto)
    model.opset_import.add(domain="", version=OPSET)
    model.opset_import.add(domain=CONTRIB, version=1)
    return model.SerializeToString()
