"""Tool discovery: the catalog of every tool Jarvis knows, its search index, and per-session active sets."""
