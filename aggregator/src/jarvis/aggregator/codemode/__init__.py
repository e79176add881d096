"""Code mode (issue 35): an agent's program runs in a Deno sandbox and calls tools through Jarvis's pipe."""
