"""A project's agent preset brings the hosts its model API needs into the egress allowlist; a custom agent none."""

from __future__ import annotations

from typing import cast

from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.egress import Egress
from jarvis.runtime.domain.ports import EgressServer
from jarvis.runtime.domain.presets import CUSTOM, PRESETS
from jarvis.runtime.storage.models import ProjectRow


def _allowlist(agent: str, allowed: list[str]) -> tuple[str, ...]:
    egress = Egress(cast(Deps, None), cast(EgressServer, None))
    return egress.allowlist(ProjectRow(id="p1", agent=agent, egress_allow=allowed)).entries


def test_a_preset_reaches_its_model_api_and_what_the_project_allows() -> None:
    assert _allowlist("claude", ["pypi.org"]) == ("api.anthropic.com", "pypi.org")
    assert _allowlist("codex", []) == PRESETS["codex"].hosts


def test_a_custom_agent_reaches_only_what_the_project_allows() -> None:
    assert _allowlist(CUSTOM, ["pypi.org"]) == ("pypi.org",)
    assert _allowlist(CUSTOM, []) == ()
