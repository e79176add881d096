"""The agent image Jarvis ships (deploy/agent/Dockerfile) and what to tell someone whose image is missing."""

from __future__ import annotations

BUILD_COMMAND = "jarvis image build"
DOCKERFILE = "deploy/agent/Dockerfile"


def missing_image_hint(image: str = "") -> str:
    """How to get a project image onto the engine: every "image missing" error of a project says this."""
    tag = f" (`--tag {image}` for that name)" if image else ""
    return (
        f"build the agent image with `{BUILD_COMMAND}`{tag}, build the project's own with image_rebuild, "
        "or load one (`docker load`)"
    )
