"""boto3 clients built per call from the current credentials, and one translation of AWS errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
    ProfileNotFound,
)
from botocore.exceptions import ConnectionError as EndpointUnreachable

from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError, NotFound, Unavailable
from jarvis.common.params import Param
from jarvis.debug.backends.credentials import Credentials

if TYPE_CHECKING:
    import boto3
    from botocore.config import Config
    from mypy_boto3_logs import CloudWatchLogsClient
    from mypy_boto3_stepfunctions import SFNClient

_NAMES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)
CREDENTIALS_HELP = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary credentials), "
    "or AWS_PROFILE naming a profile in ~/.aws/credentials or ~/.aws/config (`aws configure`; the files can be "
    "moved with AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE)"
)
REGION_PARAM = Param("region", "string", "AWS region; default AWS_REGION")
_NOT_FOUND = ("ResourceNotFoundException", "StateMachineDoesNotExist", "ExecutionDoesNotExist")
_AUTH = (
    "AccessDenied",
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
)


@dataclass(frozen=True)
class AwsConfig:
    """Process settings for AWS calls; credentials are not here, they are read per call."""

    endpoint_url: str = ""  # one endpoint for every AWS call (LocalStack, moto); empty: AWS itself
    default_region: str = ""  # used when neither the call nor AWS_REGION names one
    timeout_seconds: float = 20.0


class AwsClients:
    """Makes a fresh session per call so new credentials apply without a restart."""

    def __init__(self, config: AwsConfig, credentials: Credentials) -> None:
        self._config = config
        self._credentials = credentials

    def logs(self, region: str = "") -> CloudWatchLogsClient:
        return self._session(region).client("logs", endpoint_url=self._endpoint(), config=self._client_config())

    def stepfunctions(self, region: str = "") -> SFNClient:
        return self._session(region).client(
            "stepfunctions", endpoint_url=self._endpoint(), config=self._client_config()
        )

    def _endpoint(self) -> str | None:
        return self._config.endpoint_url or None

    def _client_config(self) -> Config:
        from botocore.config import Config  # imported on first use: boto3 adds ~0.5 s to every start

        # Bounded: the gateway answers within the aggregator's deadline even when AWS is slow.
        return Config(
            connect_timeout=5,
            read_timeout=self._config.timeout_seconds,
            retries={"max_attempts": 3, "mode": "standard"},
        )

    def _session(self, region: str) -> boto3.Session:
        import boto3

        env = self._credentials.values(_NAMES)
        key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if bool(key) != bool(secret):
            missing = "AWS_SECRET_ACCESS_KEY" if key else "AWS_ACCESS_KEY_ID"
            raise FailedPrecondition(
                f"AWS credentials are incomplete: {missing} is not set; {CREDENTIALS_HELP} "
                f"in {self._credentials.where()}"
            )
        region_name = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or self._config.default_region
        try:
            session = boto3.Session(
                aws_access_key_id=key,
                aws_secret_access_key=secret,
                aws_session_token=env.get("AWS_SESSION_TOKEN"),
                profile_name=None if key else env.get("AWS_PROFILE"),
                region_name=region_name or None,
            )
            found = session.get_credentials()
        except ProfileNotFound as exc:
            raise FailedPrecondition(f"AWS is not configured: {exc}; {CREDENTIALS_HELP}") from None
        except BotoCoreError as exc:
            raise FailedPrecondition(f"AWS credentials could not be loaded: {exc}; {CREDENTIALS_HELP}") from None
        if found is None:
            raise FailedPrecondition(f"AWS credentials not found: {CREDENTIALS_HELP} in {self._credentials.where()}")
        if not session.region_name:
            raise FailedPrecondition(
                "AWS region not set: set AWS_REGION (e.g. us-east-1) in "
                f'{self._credentials.where()}, or pass "region" in the arguments'
            )
        return session


@contextmanager
def aws_errors(call: str) -> Iterator[None]:
    """Turn what boto3 raises during `call` (e.g. "CloudWatch Logs FilterLogEvents") into domain errors."""
    try:
        yield
    except JarvisError:
        raise
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "")) or "Error"
        text = f"{call} failed: {code}: {error.get('Message', '') or exc}"
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in _NOT_FOUND:
            raise NotFound(text) from None
        if code in _AUTH or status in (401, 403):
            raise FailedPrecondition(
                f"{text}; check the AWS credentials and their IAM permissions ({CREDENTIALS_HELP})"
            ) from None
        if status >= 500 or code in ("ThrottlingException", "ServiceUnavailableException"):
            raise Unavailable(text) from None
        raise InvalidArgument(text) from None
    except (NoCredentialsError, PartialCredentialsError) as exc:
        raise FailedPrecondition(f"{call} failed: {exc}; {CREDENTIALS_HELP}") from None
    except NoRegionError:
        raise FailedPrecondition(f'{call} failed: no AWS region; set AWS_REGION or pass "region"') from None
    except ParamValidationError as exc:
        raise InvalidArgument(f"{call} rejected the arguments: {exc}") from None
    except (EndpointUnreachable, HTTPClientError) as exc:
        raise Unavailable(f"{call} failed: AWS unreachable: {exc}") from None
    except BotoCoreError as exc:
        raise Unavailable(f"{call} failed: {exc}") from None
