"""The console (issue 49): Jarvis's web pages under /console, for each person and the admin.

A door like the MCP surfaces: a person signs in (the team's provider through oauth/server/browser.py, or the local
admin's one-time link), and every action a page offers is a tool call through the same call pipeline the MCP doors
use (decision 0065), so a page shows and allows exactly what the person's scopes do. See docs/console.md.
"""
