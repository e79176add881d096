"""gRPC ProjectService: translates requests to the project domain and its results back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jarvis.api.registry.v1 import project_pb2, project_pb2_grpc
from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain import project


def _project_path(raw: str) -> Path:
    # A relative path would be read against the server's working directory, which the caller
    # neither knows nor controls.
    if not raw:
        raise InvalidArgument("path is required: pass the absolute path of the project directory")
    path = Path(raw)
    if not path.is_absolute():
        raise InvalidArgument(f"path '{raw}' is relative; pass the absolute path of the project directory")
    return path


class ProjectServicer(project_pb2_grpc.ProjectServiceServicer):
    """Thin: validation of transport fields only; errors are domain errors mapped by the server."""

    def __init__(self, allowed_roots: Sequence[Path] | None = None) -> None:
        self._allowed_roots = list(allowed_roots) if allowed_roots is not None else None

    def Analyze(self, request: project_pb2.AnalyzeRequest, context: Any) -> project_pb2.AnalyzeResponse:
        report = project.analyze(_project_path(request.path), allowed_roots=self._allowed_roots)
        return project_pb2.AnalyzeResponse(
            path=str(report.path),
            languages=report.languages,
            frameworks=report.frameworks,
            package_managers=report.package_managers,
            configs=report.configs,
            test_frameworks=report.test_frameworks,
            is_git_repo=report.is_git_repo,
            git_branch=report.git_branch,
            file_counts=report.file_counts,
        )

    def Diff(self, request: project_pb2.DiffRequest, context: Any) -> project_pb2.DiffResponse:
        result = project.diff(
            _project_path(request.path),
            staged=request.staged,
            max_bytes=request.max_bytes,
            allowed_roots=self._allowed_roots,
        )
        return project_pb2.DiffResponse(
            branch=result.branch, status=result.status, diff=result.diff, truncated=result.truncated, files=result.files
        )

    def ApplyDevops(self, request: project_pb2.ApplyDevopsRequest, context: Any) -> project_pb2.ApplyDevopsResponse:
        result = project.apply_devops(
            _project_path(request.path),
            stack=request.stack or None,
            force=request.force,
            dry_run=request.dry_run,
            allowed_roots=self._allowed_roots,
        )
        return project_pb2.ApplyDevopsResponse(stack=result.stack, written=result.written, skipped=result.skipped)
