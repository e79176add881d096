"""Each shipped alert, unit-tested by `promtool test rules` on synthetic series: it fires when it should, with
the labels that route it, and stays quiet on the healthy case next to it. (tests/e2e/test_alerts.py evaluates
the same rules in a real Prometheus scraping a real Jarvis.)"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.required_tool import required_tool

RULES = Path(__file__).resolve().parents[3] / "deploy" / "prometheus" / "rules" / "jarvis.yml"

BEAT = 'jarvis_scheduler_beat_leader{job="scheduler-beat", instance="%s"}'
CALLS = 'jarvis_mcp_tool_calls_total{surface="jarvis", tool="%s", action="", outcome="%s"}'
DOWNSTREAM = 'jarvis_downstream_calls_total{server="%s", outcome="%s"}'

# (alert, input series {series: values}, evaluation time, expected alerts' labels)
CASES: list[tuple[str, dict[str, str], str, list[dict[str, str]]]] = [
    (
        "JarvisTargetDown",
        {
            'up{job="registry", instance="r:9100"}': "1 1 0x5",
            'up{job="aggregator", instance="a:8765"}': "1x7",
            'up{job="node", instance="n:9100"}': "0x7",
        },
        "7m",
        [{"job": "registry", "instance": "r:9100", "severity": "critical"}],
    ),
    (
        "JarvisToolErrorRatioHigh",
        {
            CALLS % ("jarvis_server", "ok"): "0+60x30",
            CALLS % ("jarvis_server", "error"): "0+60x30",
            CALLS % ("jarvis_token", "ok"): "0+60x30",
            CALLS % ("jarvis_token", "error"): "0+1x30",
            CALLS % ("rare", "error"): "0+1x30",
        },
        "25m",
        [{"surface": "jarvis", "tool": "jarvis_server", "severity": "warning"}],
    ),
    (
        "JarvisInternalErrors",
        {CALLS % ("jarvis_server", "internal"): "0 0 1 1 1", CALLS % ("jarvis_token", "ok"): "0+5x4"},
        "4m",
        [{"surface": "jarvis", "tool": "jarvis_server", "severity": "warning"}],
    ),
    (
        "JarvisDownstreamServersFailing",
        {
            'jarvis_downstream_servers{job="aggregator", instance="a", state="failing"}': "1x10",
            'jarvis_downstream_servers{job="aggregator", instance="b", state="failing"}': "0x10",
        },
        "8m",
        [{"job": "aggregator", "instance": "a", "severity": "warning"}],
    ),
    (
        "JarvisDownstreamServerFlapping",
        {
            'jarvis_downstream_server_start_failures_total{server="doomed"}': "0+1x10",
            'jarvis_downstream_server_restarts_total{server="doomed"}': "0x10",
            'jarvis_downstream_server_start_failures_total{server="fine"}': "0x10",
            'jarvis_downstream_server_restarts_total{server="fine"}': "0 1 1x9",
        },
        "10m",
        [{"server": "doomed", "severity": "warning"}],
    ),
    (
        "JarvisDownstreamCallErrors",
        {
            DOWNSTREAM % ("flaky", "error"): "0+9x30",
            DOWNSTREAM % ("flaky", "ok"): "0+1x30",
            DOWNSTREAM % ("clock", "ok"): "0+9x30",
            DOWNSTREAM % ("clock", "error"): "0+1x30",
        },
        "25m",
        [{"server": "flaky", "severity": "warning"}],
    ),
    (
        "JarvisQuarantinedTools",
        {
            'jarvis_downstream_quarantined_tools{server="drifted", instance="a"}': "2x3",
            'jarvis_downstream_quarantined_tools{server="drifted", instance="b"}': "2x3",
            'jarvis_downstream_quarantined_tools{server="pinned", instance="a"}': "0x3",
        },
        "2m",
        [{"server": "drifted", "severity": "info"}],
    ),
    (
        "JarvisNoBeatLeader",
        {
            BEAT % "b1": "0x5",
            BEAT % "b2": "0x5",
            'jarvis_scheduler_beat_leader{job="scheduler", instance="api"}': "0x5",
        },
        "4m",
        [{"severity": "critical"}],
    ),
    ("JarvisBeatLeaders", {BEAT % "b1": "1x5", BEAT % "b2": "1x5"}, "4m", [{"severity": "critical"}]),
    (
        "JarvisBeatLag",
        {
            'jarvis_scheduler_beat_lag_seconds_bucket{le="30"}': "0x40",
            'jarvis_scheduler_beat_lag_seconds_bucket{le="60"}': "0+10x40",
            'jarvis_scheduler_beat_lag_seconds_bucket{le="+Inf"}': "0+10x40",
        },
        "30m",
        [{"severity": "warning"}],
    ),
    (
        "JarvisScheduledRunsFailing",
        {
            'jarvis_scheduler_runs_total{outcome="failed"}': "0 0 1 1",
            'jarvis_scheduler_runs_total{outcome="succeeded"}': "0+3x3",
        },
        "3m",
        [{"severity": "warning"}],
    ),
]
# The healthy twin of each case: the same alert does not fire.
QUIET: list[tuple[str, dict[str, str], str]] = [
    (
        "JarvisNoBeatLeader",
        {
            BEAT % "b1": "1x5",
            BEAT % "b2": "0x5",
            'jarvis_scheduler_beat_leader{job="scheduler", instance="api"}': "0x5",
        },
        "4m",
    ),
    ("JarvisNoBeatLeader", {'jarvis_scheduler_beat_leader{job="scheduler", instance="api"}': "0x5"}, "4m"),
    (
        "JarvisBeatLag",
        {
            'jarvis_scheduler_beat_lag_seconds_bucket{le="1"}': "0+10x40",
            'jarvis_scheduler_beat_lag_seconds_bucket{le="+Inf"}': "0+10x40",
        },
        "30m",
    ),
    (
        "JarvisScheduledRunsFailing",
        {
            'jarvis_scheduler_runs_total{outcome="succeeded"}': "0+3x3",
            'jarvis_scheduler_runs_total{outcome="failed"}': "0x3",
        },
        "3m",
    ),
    ("JarvisQuarantinedTools", {'jarvis_downstream_quarantined_tools{server="pinned"}': "0x3"}, "2m"),
]


def _test(alert: str, series: dict[str, str], at: str, expected: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [
            {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": labels} for labels in expected]}
        ],
    }


def test_every_alert_fires_on_its_case_and_not_on_the_healthy_one(tmp_path: Path) -> None:
    rules = yaml.safe_load(RULES.read_text())
    names = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    assert {case[0] for case in CASES} == names, "every shipped alert has a case here"
    # promtool compares annotations too; they are prose for people, checked by `promtool check rules`.
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    tests = [_test(*case) for case in CASES] + [_test(alert, series, at, []) for alert, series, at in QUIET]
    (tmp_path / "tests.yml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests})
    )
    done = subprocess.run(
        [required_tool("promtool"), "test", "rules", "tests.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
