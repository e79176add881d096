"""`jarvis image build`: build the agent image (deploy/agent/Dockerfile) on the runtime's Docker engine."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from jarvis.common.errors import JarvisError

# deploy/ of the checkout this package runs from (an editable install, as scripts/bootstrap makes).
CHECKOUT_DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
BUILD_TIMEOUT = 3 * 3600.0
_BUILD_ARG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=.*$", re.DOTALL)


@click.group()
def image() -> None:
    """Images of project containers."""


@image.command("build")
@click.option(
    "--tag", default=None, help="Image name [the runtime's default image, JARVIS_RUNTIME_IMAGE: jarvis-agent:latest]."
)
@click.option(
    "--context",
    "context",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Build context [deploy/ of this Jarvis checkout].",
)
@click.option(
    "--file", "dockerfile", default="agent/Dockerfile", show_default=True, help="Dockerfile, relative to the context."
)
@click.option(
    "--build-arg",
    "build_args",
    multiple=True,
    metavar="NAME=VALUE",
    help="Repeatable, e.g. NPM_REGISTRY=http://127.0.0.1:4873/ for a local package cache.",
)
@click.option(
    "--network",
    default="default",
    show_default=True,
    help="Network of the build steps: `default` (the engine's), `host` (a package cache on the host's "
    "loopback) or `none`.",
)
@click.option("--no-cache", is_flag=True, help="Rebuild every step.")
def image_build(
    tag: str | None, context: Path | None, dockerfile: str, build_args: tuple[str, ...], network: str, no_cache: bool
) -> None:
    """Build the agent image every project uses by default, showing the build's progress."""
    # Imported here: `jarvis --help` should not pay for the runtime's settings and Docker client.
    from jarvis.runtime.adapters.docker_engine import DockerEngine
    from jarvis.runtime.domain.agent_image import DOCKERFILE
    from jarvis.runtime.settings import RuntimeSettings

    settings = RuntimeSettings()
    tag = tag or settings.image
    context = context or CHECKOUT_DEPLOY
    if not (context / dockerfile).is_file():
        raise click.ClickException(
            f"no {dockerfile} in {context}: run this from a Jarvis checkout (the agent image "
            f"is {DOCKERFILE}) or pass --context and --file"
        )
    args = {}
    for item in build_args:
        if not _BUILD_ARG.match(item):
            raise click.ClickException(f"--build-arg '{item[:80]}' must be NAME=VALUE")
        name, _, value = item.partition("=")
        args[name] = value
    engine = DockerEngine(settings.docker_host)
    click.echo(f"building {tag} from {context / dockerfile} on {engine.host} (the first build takes minutes)", err=True)
    started = time.monotonic()
    try:
        engine.build(
            context, dockerfile, tag, BUILD_TIMEOUT, click.echo, network=network, build_args=args, no_cache=no_cache
        )
    except JarvisError as exc:
        raise click.ClickException(f"{exc.message}{_base_hint(context / dockerfile, exc.message)}") from None
    click.echo(
        f"built {tag} in {time.monotonic() - started:.0f} s; projects use it by default "
        f"(JARVIS_RUNTIME_IMAGE={settings.image})",
        err=True,
    )


def _base_hint(dockerfile: Path, message: str) -> str:
    """Where no registry is reachable, the base image must be made locally: say how."""
    base = next(
        (
            line.split()[1]
            for line in dockerfile.read_text().splitlines()
            if line.upper().startswith("FROM ") and len(line.split()) > 1
        ),
        "",
    )
    if base and base in message:
        return (
            f"\nthe base image {base} is not on the engine and could not be pulled; where no registry is "
            f"reachable, make it from Debian's packages with `scripts/base-image {dockerfile}`"
        )
    return ""
