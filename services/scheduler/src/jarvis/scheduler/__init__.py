"""Jarvis scheduler service: cron schedules of prompts, run as agent sessions through the runtime."""
