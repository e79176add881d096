"""Jarvis configuration: the JSON file <data_dir>/config.json, its known keys and its migrations."""
