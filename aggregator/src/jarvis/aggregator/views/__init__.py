"""What tools answer, as explicit types: the gateways build them from protobuf field by field, so renaming a
protobuf field cannot change what agents read; `tests/unit/aggregator/test_views.py` pins their JSON shape."""
