"""The debug service: the backends behind the `debug` gateway tool (spec 002)."""
