"""Jarvis runtime service: projects, containers, workspaces and agent sessions on Docker."""
