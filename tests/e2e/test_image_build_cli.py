"""`jarvis image build` as a person runs it, on the real engine: progress streamed, the image tagged, bad input."""

from __future__ import annotations

import secrets
from pathlib import Path

import docker

from jarvis.cli.image import _base_hint
from tests.support.docker_env import docker_host
from tests.support.stack import jarvis_cli


def test_build_streams_progress_and_tags_the_image(tmp_path: Path, engine: docker.DockerClient, image: str) -> None:
    context = tmp_path / "deploy"
    (context / "agent").mkdir(parents=True)
    marker = secrets.token_hex(4)
    (context / "agent" / "Dockerfile").write_text(
        f'FROM {image}\nARG GREETING=unset\nRUN echo "greeting=$GREETING {marker}"\n'
    )
    tag = f"jarvis-test-built:{marker}"
    try:
        done = jarvis_cli(
            "image",
            "build",
            "--context",
            str(context),
            "--tag",
            tag,
            "--network",
            "none",
            "--build-arg",
            "GREETING=hello",
            data_dir=tmp_path / "data",
            env={"DOCKER_HOST": docker_host()},
            timeout=300,
        )
        assert "Step 1/3" in done.stdout
        assert f"greeting=hello {marker}" in done.stdout  # the RUN step's own output, as it ran
        assert f"built {tag}" in done.stderr
        assert engine.images.get(tag).tags == [tag]
    finally:
        engine.images.remove(tag, force=True)


def test_build_errors_say_what_to_do(tmp_path: Path) -> None:
    context = tmp_path / "deploy"
    (context / "agent").mkdir(parents=True)
    env = {"DOCKER_HOST": docker_host()}
    missing = jarvis_cli("image", "build", "--context", str(context), data_dir=tmp_path, env=env, check=False)
    assert missing.returncode == 1
    assert "no agent/Dockerfile in" in missing.stderr
    assert "pass --context and --file" in missing.stderr
    (context / "agent" / "Dockerfile").write_text("FROM scratch\n")
    bad_arg = jarvis_cli(
        "image", "build", "--context", str(context), "--build-arg", "no equals", data_dir=tmp_path, env=env, check=False
    )
    assert bad_arg.returncode == 1
    assert "must be NAME=VALUE" in bad_arg.stderr


def test_a_missing_base_names_the_script_that_makes_it(tmp_path: Path) -> None:
    # Not run through a build: the engine would try to pull the missing base from a registry.
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("# comment\nFROM debian:bookworm-slim\nRUN true\n")
    hint = _base_hint(dockerfile, "pull access denied for debian:bookworm-slim, repository does not exist")
    assert f"scripts/base-image {dockerfile}" in hint
    assert _base_hint(dockerfile, "RUN failed with exit code 1") == ""
