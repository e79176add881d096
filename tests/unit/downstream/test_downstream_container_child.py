"""How a container-image server's end is told: the container named, the runtime's reason, stderr's last lines."""

from __future__ import annotations

from jarvis.aggregator.downstream.transport.stdio import ChildProcess


def test_a_crashed_container_is_named_with_its_code_and_stderr() -> None:
    child = ChildProcess(pid=None, container="0123456789abcdef0123")
    child.stderr_tail.append("crashing as asked")
    child.returncode = 7
    assert child.describe_exit() == "container 0123456789ab exited with code 7; stderr: crashing as asked"


def test_the_runtime_reason_goes_with_the_code_or_stands_alone() -> None:
    oom = ChildProcess(
        pid=None, container="feedbeefcafe", returncode=137, exit_detail="it ran out of memory (limit 1g) and was killed"
    )
    assert oom.describe_exit() == (
        "container feedbeefcafe exited with code 137 (it ran out of memory (limit 1g) and was killed)"
    )
    lost = ChildProcess(pid=None, container="feedbeefcafe", exit_detail="lost its stream from the runtime (gone)")
    assert lost.describe_exit() == "container feedbeefcafe lost its stream from the runtime (gone)"


def test_a_child_process_is_still_named_by_its_pid() -> None:
    assert ChildProcess(pid=42, returncode=-9).describe_exit() == "process 42 was killed by signal 9"
