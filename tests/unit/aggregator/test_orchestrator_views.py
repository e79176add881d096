"""The orchestrator's views say what the protobuf messages said before handlers stopped seeing protobuf: the same
field names in the same order, defaults shown, unset messages and times left out (issue 17). Each converter is
checked against the protobuf JSON mapping of an empty and of a fully set message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from jarvis.aggregator.gateways import registry_convert as registry_gateway
from jarvis.aggregator.gateways import runtime as runtime_gateway
from jarvis.aggregator.gateways import scheduler as scheduler_gateway
from jarvis.aggregator.tooling.results import jsonable
from jarvis.api.registry.v1 import registry_pb2
from jarvis.api.runtime.v1 import runtime_pb2 as rt
from jarvis.api.scheduler.v1 import scheduler_pb2 as sc

AT = Timestamp(seconds=1_700_000_000, nanos=5000)
CONTAINER = rt.Container(id="c", name="n", image="i", state="running", user="u", network=True)
PROJECT = rt.Project(
    id="p", name="n", source_url="s", image="i", agent_command=["a", "b"], agent_protocol="text", network=True,
    git=True, container=CONTAINER, sessions_running=2, workspaces=3, created_at=AT, agent="claude", egress_allow=["x"],
)  # fmt: skip
LIMITS = rt.Limits(
    memory="1g", cpus=1.5, pids=3, exec_timeout_seconds=4, exec_timeout_max_seconds=5, exec_output_max_bytes=6,
    session_end_grace_seconds=7, event_payload_max_bytes=8, events_page_max=9, tmpfs_size="t", read_only_root=True,
    no_new_privileges=True, cap_drop=["ALL"], container_user="u",
)  # fmt: skip
PRESET = rt.AgentPreset(
    name="a", command=["x"], protocol="p", prompt="stdin", key_env=["K"], base_url_env=["B"], hosts=["h"],
    env={"A": "1"}, description="d",
)  # fmt: skip
SESSION = rt.Session(
    id="s", project_id="p", workspace_id="w", state="running", agent_command=["a"], agent_protocol="t", exit_code=-1,
    events=3, detail="d", created_at=AT, ended_at=AT, idempotency_key="k", agent="a",
)  # fmt: skip
WORKSPACE = rt.Workspace(id="w", project_id="p", kind="worktree", branch="b", path="/p", session_id="s", created_at=AT)
SCHEDULE = sc.Schedule(
    id="i", name="n", cron="c", timezone="t", prompt="p", targets=["a"], enabled=True, concurrency="skip",
    missed="record", created_by="me", created_at=AT, updated_at=AT, next_fire_at=AT, last_fired_at=AT,
    secret_overrides={"A": "B"},
)  # fmt: skip
RUN = sc.Run(
    id="r", schedule_id="i", target="a", tick=AT, trigger="manual", state="queued", idempotency_key="k",
    session_id="s", attempts=2, error="e", missed_ticks=3, first_missed_tick=AT, queued_at=AT, started_at=AT,
    session_started_at=AT, finished_at=AT,
)  # fmt: skip
TOKEN = registry_pb2.Token(
    id="i", name="n", prefix="p", scopes=["a"], created_at=AT, expires_at=AT, revoked_at=AT, last_used_at=AT
)

CASES: list[tuple[Any, Message]] = [
    (runtime_gateway.container_view, CONTAINER),
    (runtime_gateway.project_view, PROJECT),
    (runtime_gateway.limits_view, LIMITS),
    (runtime_gateway.agent_preset_view, PRESET),
    (runtime_gateway.secret_view, rt.Secret(name="A", created_at=AT, updated_at=AT)),
    (runtime_gateway.session_view, SESSION),
    (runtime_gateway.workspace_view, WORKSPACE),
    (scheduler_gateway.schedule_view, SCHEDULE),
    (scheduler_gateway.run_view, RUN),
    (scheduler_gateway.detail_view, sc.ScheduleDetail(schedule=SCHEDULE, next_fires=[AT, AT], recent_runs=[RUN])),
    (registry_gateway.token_view, TOKEN),
]


def proto_json(message: Message) -> str:
    return json.dumps(
        MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    )


@pytest.mark.parametrize(("convert", "message"), CASES, ids=[type(m).__name__ for _, m in CASES])
def test_a_view_reads_as_its_message_did(convert: Any, message: Message) -> None:
    assert json.dumps(jsonable(convert(message))) == proto_json(message)
    empty = type(message)()
    assert json.dumps(jsonable(convert(empty))) == proto_json(empty)


def test_an_event_carries_its_payload_as_json() -> None:
    event = rt.Event(seq=1, type="assistant", payload_json='{"text": "hi"}', created_at=AT)
    expected = {"seq": 1, "type": "assistant", "created_at": AT.ToJsonString(), "payload": {"text": "hi"}}
    assert jsonable(runtime_gateway.event_view(event)) == expected
    assert jsonable(runtime_gateway.event_view(rt.Event(seq=2, payload_json="not json")))["payload"] == "not json"
