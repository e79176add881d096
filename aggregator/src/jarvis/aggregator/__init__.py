"""aggregator."""
