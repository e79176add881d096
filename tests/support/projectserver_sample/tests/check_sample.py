"""The sample project's own tests: one passes, one fails (run_test_task reports both)."""


def test_pass() -> None:
    assert 1 + 1 == 2


def test_fail() -> None:
    assert 1 + 1 == 3, "math is broken"
