"""The registry's domain: rules and use cases, free of transport (gRPC) concerns."""
