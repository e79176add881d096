"""The project-server template (spec 004): scaffolding it into a project and running it."""
