"""ONNX's model format, the subset the aggregator writes (onnx.proto; generated code beside it)."""
