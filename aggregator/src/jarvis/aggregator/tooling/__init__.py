"""The bottom of the aggregator: tools, actions, their schemas, the caller and its scopes, results.

Everything else in the aggregator may import this package; it imports nothing of the aggregator.
"""
