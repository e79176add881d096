"""AWS at the HTTP level: moto's server on a free loopback port, seeded through boto3 like real data."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import boto3

REGION = "us-east-1"
ACCESS_KEY = "AKIAJARVISTESTKEY000"  # dummy: moto accepts any key; a real endpoint never sees it
SECRET_KEY = "jarvis-test-secret-never-logged-0123456789"
LOG_GROUP = "/aws/lambda/orders-api"
STREAM = "2026/11/22/[$LATEST]0123456789abcdef"
MACHINE = "orders-workflow"
DEFINITION = '{"Comment":"orders","StartAt":"Charge","States":{"Charge":{"Type":"Pass","End":true}}}'


@dataclass
class FakeAws:
    """Where the fake listens and what was seeded into it."""

    endpoint_url: str
    machine_arn: str = ""
    executions: dict[str, str] = field(default_factory=dict)  # name -> ARN

    def env(self) -> dict[str, str]:
        """What a Jarvis process needs to use this fake: dummy credentials and the endpoint override."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "JARVIS_DEBUG_AWS_ENDPOINT_URL": self.endpoint_url,
        }


def _seed(aws: FakeAws) -> None:
    logs = boto3.client(
        "logs",
        endpoint_url=aws.endpoint_url,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    logs.create_log_group(logGroupName=LOG_GROUP)
    logs.create_log_group(logGroupName="/aws/lambda/billing-worker")
    logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=STREAM)
    now = int(time.time() * 1000)
    messages = [
        "START RequestId: 7f1c Version: $LATEST",
        "INFO order 42 received",
        "ERROR payment declined for order 42: card_expired",
        "END RequestId: 7f1c",
        "REPORT RequestId: 7f1c Duration: 812.44 ms",
    ]
    logs.put_log_events(
        logGroupName=LOG_GROUP,
        logStreamName=STREAM,
        logEvents=[{"timestamp": now - 60_000 + i * 100, "message": m} for i, m in enumerate(messages)],
    )
    sfn = boto3.client(
        "stepfunctions",
        endpoint_url=aws.endpoint_url,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    aws.machine_arn = sfn.create_state_machine(
        name=MACHINE, definition=DEFINITION, roleArn="arn:aws:iam::123456789012:role/orders-sfn"
    )["stateMachineArn"]
    ok = sfn.start_execution(stateMachineArn=aws.machine_arn, name="order-41", input='{"order": 41}')
    failed = sfn.start_execution(stateMachineArn=aws.machine_arn, name="order-42", input='{"order": 42}')
    sfn.stop_execution(executionArn=failed["executionArn"], error="PaymentDeclined", cause="card_expired")
    aws.executions = {"order-41": ok["executionArn"], "order-42": failed["executionArn"]}


@contextmanager
def fake_aws() -> Iterator[FakeAws]:
    """moto's server (server mode: boto3 talks real HTTP to it), seeded with logs and executions."""
    from moto.server import ThreadedMotoServer  # imported here: only the debug tests pay for moto and flask

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access line per AWS call otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        _, port = server.get_host_and_port()
        aws = FakeAws(endpoint_url=f"http://127.0.0.1:{port}")
        _seed(aws)
        yield aws
    finally:
        server.stop()
