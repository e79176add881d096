"""The backends of the debug gateway, one per category (`jarvis.debug.app` builds them)."""
