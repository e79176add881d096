"""Shared plumbing for Jarvis services: errors, gRPC helpers, settings, logging, metrics."""
