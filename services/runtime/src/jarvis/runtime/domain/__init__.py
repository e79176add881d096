"""The runtime's use cases. No gRPC, Docker or subprocess imports: adapters implement the ports."""
