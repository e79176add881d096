"""The call pipeline: every door's tool call, routed, run through one chain of policies, then its backend."""
