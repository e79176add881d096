"""Jarvis's own surfaces against the official MCP conformance suite (0.2.0-alpha.12), check by check, for both
requirement sets (issue 13 item 4).

The surfaces serve tools only: no resources, prompts, completions or logging, no task extension, and none of the
suite's `test_*` fixture tools. So every scenario the suite runs is classified here: APPLICABLE ones (the protocol:
lifecycle, sessions, the stateless core, headers, caching hints, DNS rebinding, resource-not-found) must pass on every
surface; NOT_APPLICABLE ones are listed with the reason and their results not asserted. Inside an applicable
scenario, checks that need a fixture or a capability the surfaces lack are in EXCLUDED_CHECKS; like OWN_GAPS (an
applicable scenario that fails, with why), they must still fail, so the lists only shrink and a suite upgrade that
adds or renames a scenario or check fails here until it is classified.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.conformance import Check, run_suite
from tests.support.stack import RunningJarvis, start_jarvis

pytestmark = [pytest.mark.node]

SURFACES = ("/mcp", "/mcp/jarvis", "/mcp/orchestrator", "/mcp/debug")

APPLICABLE: dict[str, set[str]] = {
    "2025-11-25": {
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
        "server-session-lifecycle",
    },
    "2026-07-28": {
        "server-stateless",
        "tools-list",
        "server-sse-multiple-streams",
        "sep-2164-resource-not-found",
        "dns-rebinding-protection",
        "caching",
        "http-header-validation",
        "input-required-result-unsupported-methods",
    },
}

_FIXTURE = "needs the suite's fixture tool {}; the surfaces serve Jarvis's own tools only"
_NO_RESOURCES = "the surfaces have no resources (no resources capability, so the method answers -32601)"
_NO_PROMPTS = "the surfaces have no prompts (no prompts capability, so the method answers -32601)"
_NO_INPUT = "needs the suite's fixture tool {}; no Jarvis tool asks the client for input (MRTR)"
_TASKS = "tasks extension (SEP-2663): the surfaces do not offer it, and it needs the fixture tools greet/slow_compute"
NOT_APPLICABLE: dict[str, str] = {
    "logging-set-level": "the surfaces declare no logging capability; nothing of theirs logs to the client",
    "completion-complete": "no prompts or resource templates, so no completions capability",
    "tools-call-simple-text": _FIXTURE.format("test_simple_text"),
    "tools-call-image": _FIXTURE.format("test_image_content"),
    "tools-call-audio": _FIXTURE.format("test_audio_content"),
    "tools-call-embedded-resource": _FIXTURE.format("test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE.format("test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE.format("test_tool_with_logging") + " and a logging capability",
    "tools-call-error": _FIXTURE.format("test_error_handling"),
    "tools-call-with-progress": _FIXTURE.format("test_tool_with_progress"),
    "tools-call-sampling": _FIXTURE.format("test_sampling") + "; no Jarvis tool samples",
    "tools-call-elicitation": _FIXTURE.format("test_elicitation") + "; no Jarvis tool elicits",
    "elicitation-sep1034-defaults": _FIXTURE.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _FIXTURE.format("test_elicitation_sep1330_enums"),
    "json-schema-2020-12": _FIXTURE.format("json_schema_2020_12_tool") + " (pending upstream)",
    "server-sse-polling": "pending upstream (SEP-1699): needs a fixture tool and an event store; the surfaces answer "
    "POSTs with plain JSON, so no stream is ever closed mid-call",
    "resources-list": _NO_RESOURCES,
    "resources-read-text": _NO_RESOURCES,
    "resources-read-binary": _NO_RESOURCES,
    "resources-templates-read": _NO_RESOURCES,
    "resources-subscribe": _NO_RESOURCES,
    "resources-unsubscribe": _NO_RESOURCES,
    "prompts-list": _NO_PROMPTS,
    "prompts-get-simple": _NO_PROMPTS,
    "prompts-get-with-args": _NO_PROMPTS,
    "prompts-get-embedded-resource": _NO_PROMPTS,
    "prompts-get-with-image": _NO_PROMPTS,
    "http-custom-header-server-validation": "pending upstream (SEP-2243): needs a tool whose inputSchema declares "
    "x-mcp-header parameters; no Jarvis tool has one",
    "input-required-result-basic-elicitation": _NO_INPUT.format("test_input_required_result_elicitation"),
    "input-required-result-basic-sampling": _NO_INPUT.format("test_input_required_result_sampling"),
    "input-required-result-basic-list-roots": _NO_INPUT.format("test_input_required_result_list_roots"),
    "input-required-result-request-state": _NO_INPUT.format("test_input_required_result_request_state"),
    "input-required-result-multiple-input-requests": _NO_INPUT.format("test_input_required_result_multiple_inputs"),
    "input-required-result-multi-round": _NO_INPUT.format("test_input_required_result_multi_round"),
    "input-required-result-missing-input-response": _NO_INPUT.format("test_input_required_result_elicitation"),
    "input-required-result-non-tool-request": "needs the fixture prompt test_input_required_result_prompt; "
    + _NO_PROMPTS,
    "input-required-result-result-type": _NO_INPUT.format("test_input_required_result_elicitation"),
    "input-required-result-tampered-state": _NO_INPUT.format("test_input_required_result_tampered_state"),
    "input-required-result-capability-check": _NO_INPUT.format("test_input_required_result_capabilities"),
    "input-required-result-ignore-extra-params": _NO_INPUT.format("test_input_required_result_elicitation"),
    "input-required-result-validate-input": _NO_INPUT.format("test_input_required_result_elicitation"),
    **{
        f"tasks-{name}": _TASKS
        for name in (
            "lifecycle",
            "capability-negotiation",
            "wire-fields",
            "request-state-removal",
            "mrtr-input",
            "request-headers",
            "dispatch-and-envelope",
            "status-notifications",
            "required-task-error",
            "mrtr-composition",
        )
    },
}

# Checks of applicable scenarios that cannot pass on a surface without the fixture or capability they probe.
EXCLUDED_CHECKS: dict[str, dict[str, str]] = {
    "server-stateless": {
        "sep-2575-server-rejects-undeclared-capability": _FIXTURE.format("test_missing_capability"),
        "sep-2575-missing-capability-http-400": _FIXTURE.format("test_missing_capability"),
        "sep-2575-http-server-no-independent-requests-on-stream": _FIXTURE.format("test_streaming_elicitation"),
        "sep-2575-server-no-log-without-loglevel": _FIXTURE.format("test_logging_tool"),
    },
    "caching": {
        "sep-2549-prompts-list-caching-hints": _NO_PROMPTS,
        "sep-2549-resources-list-caching-hints": _NO_RESOURCES,
        "sep-2549-resources-templates-list-caching-hints": _NO_RESOURCES,
    },
}

# Applicable scenarios a surface fails, with why; the test fails when one passes, so this list only shrinks.
OWN_GAPS: dict[str, dict[str, str]] = {"2025-11-25": {}, "2026-07-28": {}}


# Both ways `jarvis up` serves: MCP sessions, and stateless replicas (no sessions; 2025-era session lifecycle checks are
# skipped by the suite, and /mcp hands out its own session ids that DELETE cannot end: 405).
@pytest.fixture(scope="module", params=["sessions", "stateless"])
def jarvis(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, RunningJarvis]]:
    """(the mode, a running Jarvis serving in it)."""
    home = tmp_path_factory.mktemp("home")
    args = ("--stateless",) if request.param == "stateless" else ()
    running = start_jarvis(tmp_path_factory.mktemp("own-surfaces"), *args, env={"HOME": str(home)}, timeout=180)
    yield request.param, running
    running.stop()


def _failed(scenario: str, checks: list[Check]) -> list[Check]:
    """The failed checks of an applicable scenario, excluded ones aside."""
    excluded = EXCLUDED_CHECKS.get(scenario, {})
    return [c for c in checks if c.status == "FAILURE" and c.id not in excluded]


def _stale_exclusions(scenario: str, checks: list[Check]) -> set[str]:
    """Excluded checks of `scenario` that no longer fail (or no longer exist): the list needs review."""
    failing = {c.id for c in checks if c.status == "FAILURE"}
    return set(EXCLUDED_CHECKS.get(scenario, {})) - failing


@pytest.mark.parametrize("requirements", sorted(APPLICABLE))
def test_own_surfaces_pass_the_protocol_scenarios_that_apply(
    jarvis: tuple[str, RunningJarvis], requirements: str, tmp_path: Path
) -> None:
    assert not APPLICABLE[requirements] & set(NOT_APPLICABLE)
    mode, running = jarvis
    problems: dict[str, object] = {}
    # One run of the set per surface, the four at once: a run mostly waits on its scenarios' timeouts.
    with ThreadPoolExecutor(len(SURFACES)) as pool:
        runs = pool.map(lambda surface: run_suite(running.url(surface), requirements, tmp_path), SURFACES)
    for surface, results in zip(SURFACES, runs, strict=True):
        unclassified = set(results) - APPLICABLE[requirements] - set(NOT_APPLICABLE)
        missing = APPLICABLE[requirements] - set(results)
        failed = {name: _failed(name, results[name]) for name in APPLICABLE[requirements] & set(results)}
        regressions = {name: checks for name, checks in failed.items() if checks and name not in OWN_GAPS[requirements]}
        fixed = {name for name in OWN_GAPS[requirements] if name in failed and not failed[name]}
        stale = {name: _stale_exclusions(name, results[name]) for name in failed}
        warnings = [f"{name}/{c.id}" for name in failed for c in results[name] if c.status == "WARNING"]
        passing = sum(not checks for checks in failed.values())
        print(
            f"{requirements} {mode} {surface}: {passing}/{len(failed)} applicable scenarios pass, "
            f"{len(set(results) & set(NOT_APPLICABLE))} not applicable; warnings {warnings}"
        )
        for label, value in (
            ("unclassified scenarios", unclassified),
            ("applicable scenarios the suite did not run", missing),
            ("failing", {name: [f"{c.id}: {c.message}" for c in checks] for name, checks in regressions.items()}),
            ("pass now: drop them from OWN_GAPS", fixed),
            ("excluded checks that do not fail: review EXCLUDED_CHECKS", {n: s for n, s in stale.items() if s}),
        ):
            if value:
                problems[f"{surface} {label}"] = value
    assert not problems, problems
