"""The `schedule` tool against a real `jarvis up`: its scheduler, its runtime on the test Docker engine, and scopes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import anyio
import docker
import httpx2
import pytest

from tests.e2e.orchestrator.conftest import runtime_env
from tests.support.docker_env import remove_managed
from tests.support.stack import RunningJarvis, error_text, gate_refusal, mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio
URL = "/mcp/orchestrator"
RUN_WAIT_SECONDS = 30


@pytest.fixture(scope="module")
def scheduled(
    tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[RunningJarvis]:
    data = tmp_path_factory.mktemp("scheduled-orchestrator")
    running = start_jarvis(
        data,
        "--require-auth",
        env=runtime_env(image, tmp_path_factory.mktemp("home"), JARVIS_AGGREGATOR_TOKEN_CACHE_SECONDS="1"),
    )
    yield running
    running.stop()
    remove_managed(engine, data)


@pytest.fixture(scope="module")
def admin(scheduled: RunningJarvis) -> str:
    return scheduled.create_token("admin", name="scheduler-admin")


@pytest.fixture(scope="module")
async def projects(scheduled: RunningJarvis, admin: str) -> tuple[str, str]:
    """Two projects, alpha and beta, for the whole module."""
    async with mcp_client(scheduled.url(URL), admin) as client:
        ids = [
            result_json(await client.call_tool("project", {"action": "create", "name": n}))["created"]["id"]
            for n in ("alpha", "beta")
        ]
    return ids[0], ids[1]


def call_status(running: RunningJarvis, token: str, tool: str, arguments: dict[str, Any]) -> int:
    """The HTTP status of one tools/call, 403 standing for the gate's refusal (a tool error it answers
    itself, before the MCP layer)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    answer = httpx2.post(running.url(URL), json=body, headers=headers, timeout=30)
    return 403 if gate_refusal(answer) else answer.status_code


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def test_create_answers_with_next_fires_and_names_bad_input(
    scheduled: RunningJarvis, admin: str, projects: tuple[str, str]
) -> None:
    alpha, _ = projects
    async with mcp_client(scheduled.url(URL), admin) as client:

        async def create(**args: Any) -> Any:
            return await client.call_tool("schedule", {"action": "create", **args})

        created = result_json(await create(name="weekdays", cron="0 3 * * 1-5", prompt="nightly", targets=[alpha]))[
            "created"
        ]
        tokyo = result_json(
            await create(
                cron="0 3 * * *",
                timezone="Asia/Tokyo",
                prompt="hi",
                targets=[alpha],
                concurrency="queue",
                missed="record",
                enabled=False,
            )
        )["created"]
        bad_cron = await create(cron="61 * * * *", prompt="x", targets=[alpha])
        four_fields = await create(cron="0 3 * *", prompt="x", targets=[alpha])
        too_often = await create(cron="* * * * * *", prompt="x", targets=[alpha])
        bad_zone = await create(cron="0 3 * * *", timezone="Mars/Olympus", prompt="x", targets=[alpha])
        unknown = await create(cron="0 3 * * *", prompt="x", targets=["p0123456789ab"])
        blank = await create(cron="0 3 * * *", prompt="   ", targets=[alpha])
        missing = await create(cron="0 3 * * *", targets=[alpha])
        bad_enum = await create(cron="0 3 * * *", prompt="x", targets=[alpha], concurrency="parallel")
        listed = result_json(await client.call_tool("schedule", {"action": "list"}))

    schedule = created["schedule"]
    assert schedule["id"].startswith("sch_")
    assert (schedule["name"], schedule["cron"], schedule["timezone"]) == ("weekdays", "0 3 * * 1-5", "UTC")
    assert (schedule["targets"], schedule["enabled"]) == ([alpha], True)
    assert (schedule["concurrency"], schedule["missed"]) == ("skip", "run_once")
    assert "scheduler-admin" in schedule["created_by"]
    fires = [when(f) for f in created["next_fires"]]
    assert len(fires) == 5
    assert fires == sorted(fires)
    assert all((f.hour, f.minute) == (3, 0) and f.weekday() < 5 for f in fires)
    assert when(schedule["next_fire_at"]) == fires[0]
    assert fires[0] - datetime.now(fires[0].tzinfo) < timedelta(days=4)
    assert created["recent_runs"] == []

    assert tokyo["schedule"]["timezone"] == "Asia/Tokyo"
    assert (tokyo["schedule"]["concurrency"], tokyo["schedule"]["missed"]) == ("queue", "record")
    assert tokyo["schedule"]["enabled"] is False
    assert "next_fire_at" not in tokyo["schedule"]
    assert tokyo["next_fires"] == []

    assert "cron '61 * * * *' is not valid" in error_text(bad_cron)
    assert "has 4 fields; give five" in error_text(four_fields)
    assert "6 fields" in error_text(too_often)
    assert "time zone 'Mars/Olympus' is unknown" in error_text(bad_zone)
    assert "unknown target project(s): p0123456789ab" in error_text(unknown)
    assert "prompt is empty" in error_text(blank)
    assert error_text(missing) == "schedule action=create requires 'prompt'"
    assert "parallel" in error_text(bad_enum)
    assert {s["id"] for s in listed["schedules"]} >= {schedule["id"], tokyo["schedule"]["id"]}
    assert listed["count"] == len(listed["schedules"])


async def test_list_get_update_delete(scheduled: RunningJarvis, admin: str, projects: tuple[str, str]) -> None:
    alpha, beta = projects
    async with mcp_client(scheduled.url(URL), admin) as client:

        async def call(**args: Any) -> Any:
            return result_json(await client.call_tool("schedule", args))

        sid = (await call(action="create", cron="15 4 * * *", prompt="keep me", targets=[alpha]))["created"][
            "schedule"
        ]["id"]
        got = await call(action="get", schedule_id=sid)
        assert got["schedule"]["prompt"] == "keep me"
        assert len(got["next_fires"]) == 5
        assert got["recent_runs"] == []
        assert sid in [s["id"] for s in (await call(action="list", targets=[alpha]))["schedules"]]
        assert sid not in [s["id"] for s in (await call(action="list", targets=[beta]))["schedules"]]

        disabled = (await call(action="update", schedule_id=sid, enabled=False))["updated"]
        assert disabled["schedule"]["enabled"] is False
        assert "next_fire_at" not in disabled["schedule"]
        assert disabled["next_fires"] == []
        assert disabled["schedule"]["prompt"] == "keep me"  # only what was given changes

        moved = (
            await call(
                action="update", schedule_id=sid, enabled=True, cron="30 6 * * *", targets=[beta], name="renamed"
            )
        )["updated"]["schedule"]
        again = await call(action="get", schedule_id=sid)
        assert (moved["cron"], moved["targets"], moved["name"], moved["enabled"]) == (
            "30 6 * * *",
            [beta],
            "renamed",
            True,
        )
        assert (moved["prompt"], moved["timezone"]) == ("keep me", "UTC")
        fires = [when(f) for f in again["next_fires"]]
        assert len(fires) == 5
        assert all((f.hour, f.minute) == (6, 30) for f in fires)
        assert when(again["schedule"]["next_fire_at"]) == fires[0]

        nothing = await client.call_tool("schedule", {"action": "update", "schedule_id": sid})
        emptied = await client.call_tool("schedule", {"action": "update", "schedule_id": sid, "targets": []})
        bad_cron = await client.call_tool("schedule", {"action": "update", "schedule_id": sid, "cron": "nope"})
        assert "changes nothing" in error_text(nothing)
        assert "targets is empty" in error_text(emptied)
        assert "cron 'nope' has 1 fields" in error_text(bad_cron)
        assert (await call(action="get", schedule_id=sid))["schedule"]["cron"] == "30 6 * * *"  # all or nothing

        deleted = (await call(action="delete", schedule_id=sid))["deleted"]
        assert deleted == {"schedule_id": sid, "queued_runs_skipped": 0}
        gone = await client.call_tool("schedule", {"action": "get", "schedule_id": sid})
        assert f"schedule '{sid}' not found" in error_text(gone)
        assert sid not in [s["id"] for s in (await call(action="list"))["schedules"]]
        unknown = await client.call_tool("schedule", {"action": "trigger", "schedule_id": "sch_000000000000"})
        assert "schedule 'sch_000000000000' not found" in error_text(unknown)


async def test_trigger_runs_a_session_on_the_target(
    scheduled: RunningJarvis, admin: str, projects: tuple[str, str]
) -> None:
    alpha, _ = projects
    async with mcp_client(scheduled.url(URL), admin) as client:

        async def call(tool: str, **args: Any) -> Any:
            return result_json(await client.call_tool(tool, args))

        # Disabled and yearly: only the trigger runs it.
        sid = (
            await call(
                "schedule", action="create", cron="0 0 1 1 *", prompt="scheduled hello", targets=[alpha], enabled=False
            )
        )["created"]["schedule"]["id"]
        triggered = await call("schedule", action="trigger", schedule_id=sid)
        assert triggered["count"] == 1
        run = triggered["runs"][0]
        assert (run["schedule_id"], run["target"], run["trigger"], run["state"]) == (sid, alpha, "manual", "queued")

        deadline = time.monotonic() + RUN_WAIT_SECONDS
        seen: dict[str, Any] = {}
        while time.monotonic() < deadline:
            runs = {r["id"]: r for r in (await call("schedule", action="get", schedule_id=sid))["recent_runs"]}
            seen = runs.get(run["id"], {})
            if seen.get("state") in ("succeeded", "failed", "skipped", "missed"):
                break
            await anyio.sleep(0.5)
        assert seen.get("state") == "succeeded", seen
        assert seen["session_id"]
        assert seen["error"] == ""
        assert seen["finished_at"]

        sessions = (await call("session", action="list", project_id=alpha))["sessions"]
        assert seen["session_id"] in [s["id"] for s in sessions]
        events = await call("session", action="events", project_id=alpha, session_id=seen["session_id"])
        assert any("echo: scheduled hello" in str(e["payload"]) for e in events["events"])


async def test_project_bound_tokens_reach_only_their_projects(
    scheduled: RunningJarvis, admin: str, projects: tuple[str, str]
) -> None:
    alpha, beta = projects
    async with mcp_client(scheduled.url(URL), admin) as client:
        bound = result_json(
            await client.call_tool(
                "token", {"action": "create", "name": "alpha-scheduler", "scope": f"orchestrator@{alpha}"}
            )
        )["secret"]
        reader = result_json(await client.call_tool("token", {"action": "create", "scope": f"read@{alpha}"}))["secret"]
        theirs = result_json(
            await client.call_tool(
                "schedule", {"action": "create", "cron": "0 5 * * *", "prompt": "b", "targets": [beta]}
            )
        )
        both = result_json(
            await client.call_tool(
                "schedule", {"action": "create", "cron": "0 5 * * *", "prompt": "ab", "targets": [alpha, beta]}
            )
        )
    other, shared = theirs["created"]["schedule"]["id"], both["created"]["schedule"]["id"]

    def create(targets: list[str]) -> dict[str, Any]:
        return {"action": "create", "cron": "0 5 * * *", "prompt": "x", "targets": targets}

    # Refused at the gate (HTTP 403), before anything reaches the scheduler.
    assert call_status(scheduled, bound, "schedule", create([beta])) == 403
    assert call_status(scheduled, bound, "schedule", create([alpha, beta])) == 403
    assert call_status(scheduled, reader, "schedule", create([alpha])) == 403
    assert call_status(scheduled, bound, "schedule", create([alpha])) != 403

    async with mcp_client(scheduled.url(URL), bound) as client:
        mine = result_json(await client.call_tool("schedule", create([alpha])))["created"]["schedule"]
        assert "alpha-scheduler" in mine["created_by"]
        listed = {s["id"] for s in result_json(await client.call_tool("schedule", {"action": "list"}))["schedules"]}
        assert mine["id"] in listed
        assert not listed & {other, shared}
        for action in ("get", "trigger", "delete"):
            hidden = await client.call_tool("schedule", {"action": action, "schedule_id": other})
            assert f"schedule '{other}' not found" in error_text(hidden), action
        hidden = await client.call_tool("schedule", {"action": "update", "schedule_id": shared, "enabled": False})
        assert f"schedule '{shared}' not found" in error_text(hidden)
        assert result_json(await client.call_tool("schedule", {"action": "get", "schedule_id": mine["id"]}))
        updated = result_json(
            await client.call_tool("schedule", {"action": "update", "schedule_id": mine["id"], "prompt": "y"})
        )["updated"]["schedule"]
        assert updated["prompt"] == "y"
    assert (
        call_status(
            scheduled, bound, "schedule", {"action": "update", "schedule_id": mine["id"], "targets": [alpha, beta]}
        )
        == 403
    )

    async with mcp_client(scheduled.url(URL), reader) as client:
        seen = {s["id"] for s in result_json(await client.call_tool("schedule", {"action": "list"}))["schedules"]}
        assert mine["id"] in seen
        assert not seen & {other, shared}
        assert result_json(await client.call_tool("schedule", {"action": "get", "schedule_id": mine["id"]}))
    assert call_status(scheduled, reader, "schedule", {"action": "trigger", "schedule_id": mine["id"]}) == 403

    async with mcp_client(scheduled.url(URL), admin) as client:
        everything = result_json(await client.call_tool("schedule", {"action": "list"}))["schedules"]
        assert {mine["id"], other, shared} <= {s["id"] for s in everything}
        unchanged = result_json(await client.call_tool("schedule", {"action": "get", "schedule_id": shared}))
        assert unchanged["schedule"]["enabled"] is True


async def test_status_reports_the_scheduler(scheduled: RunningJarvis, admin: str) -> None:
    async with mcp_client(scheduled.url("/mcp/jarvis"), admin) as client:
        status = result_json(await client.call_tool("jarvis_check_status", {}))
    assert status["services"]["scheduler"]["ok"] is True
    assert status["services"]["runtime"]["ok"] is True
