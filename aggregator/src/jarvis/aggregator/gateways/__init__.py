"""The aggregator's gateways to the backend services, one module per service.

Each owns its stubs, deadlines, retry choice, read cache and the converters from protobuf to the view types
tool handlers return; nothing above this package sees a protobuf.
"""
