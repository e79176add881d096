"""A person's consent at a downstream server's authorization server, through their browser and back to Jarvis.

`begin(person, server)` runs the SDK's OAuth client (provider.py) against the server in a task of its own: discovery
and client registration, then the authorization URL, which Jarvis hands out as a link of its own,
`<public URL>/oauth/downstream/start?flow=…`. A link can be forwarded, so whoever opens it must first show that the
consent is theirs (decision 0062): a signed-in person signs in again through the team's provider and must be the
person the consent was made for; a `jv_` token's consent is opened only after its page, naming the token and the
server, is confirmed. Only then is the browser bound to the consent (an HttpOnly cookie) and sent on to the
authorization server, which returns to `<public URL>/oauth/downstream/callback`: the state names the consent, the
cookie must be that browser's, the code is exchanged (PKCE, `resource`) and the tokens land in the vault. A
callback replayed, or carrying someone else's state, finds no consent of that browser's and fails. A consent is used
once and forgotten after `consent_seconds`.

Consents live in the aggregator process that started them; where Jarvis has Redis, a link or a return that reaches
another worker or replica is answered by the one holding the consent (relay.py), as decision 0056 says.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx2
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull

from jarvis.aggregator.downstream.auth.guard import AddressGuard, OAuthClientSettings
from jarvis.aggregator.downstream.auth.provider import CALLBACK_PATH, PersonalOAuth, client_id_url
from jarvis.aggregator.downstream.auth.storage import GrantStore, VaultStorage
from jarvis.common import tracing
from jarvis.common.errors import FailedPrecondition

log = logging.getLogger(__name__)


class _QuietFlowErrors(logging.Filter):
    """The SDK logs every OAuth flow that ends without tokens (a denied consent, a person not yet connected) as an
    ERROR with its traceback; Jarvis says what failed in its own line, so the SDK's record stays, at INFO, bare."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "OAuth flow error":
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietFlowErrors())

START_PATH = "/oauth/downstream/start"
COOKIE = "jarvis_downstream_consent"
EXCHANGE_SECONDS = 20.0
_PROBE = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def cookie_name(flow_id: str) -> str:
    """The cookie that binds a browser to the consent it opened (a name per consent: one browser, several links)."""
    return f"{COOKIE}_{flow_id[:12]}"


class ConsentFailed(Exception):
    """Consent could not start or finish; the message says why, without secrets."""


class ConsentDenied(ConsentFailed):
    pass


class NotYourConsent(ConsentFailed):
    """The browser proved to be another person than the one the consent was made for: a forwarded link."""


USER_PREFIX = "user:"


def signed_in_person(subject: str) -> str:
    """The person key (person.py) of someone the team's provider just signed in."""
    return USER_PREFIX + subject


def needs_sign_in(person: str) -> bool:
    """Whether a browser must sign in as `person` before their consent opens: true for a signed-in person, whose
    identity the team's provider can prove; a `jv_` token's holder has no identity a browser could show."""
    return person.startswith(USER_PREFIX)


def person_label(person: str) -> str:
    """How a page names the person behind a consent, without a secret (a token's id is not one)."""
    if needs_sign_in(person):
        return "you, as you signed in to Jarvis"  # shown only to a browser that proved it is that person
    if person.startswith("token:"):
        return f"the Jarvis token {person.removeprefix('token:')} (see jarvis token list)"
    return "this Jarvis's local user"


@dataclass(frozen=True)
class Described:
    """Whose consent a link is, at which server: what the link's page needs before anything is opened."""

    person: str
    server: str


class NeedsConsent(FailedPrecondition):
    """The person has not authorized Jarvis at the server (or no longer): `link` is where they do."""

    def __init__(self, server: str, link: str, flow: Flow) -> None:
        super().__init__(
            f"server '{server}' needs your authorization with your own account. Open this link in your browser "
            f"and approve: {link} — then call again (the link works once, for you, for "
            "10 minutes; `jarvis_server action=connect name=" + server + "` gives a new one)."
        )
        self.server = server
        self.link = link
        self.flow = flow


@dataclass
class Flow:
    id: str
    person: str
    server: str
    base_url: str  # Jarvis's public URL: the link and the callback are under it
    nonce: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    created: float = field(default_factory=time.monotonic)
    authorize_url: str = ""
    state: str = ""
    opened: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    answer: asyncio.Future[AuthorizationCodeResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    error: str = ""
    task: asyncio.Task[None] | None = None
    # Made in the call that asked (Consents.begin): the browser's callback is traced under it (decision 0066).
    trace: dict[str, str] = field(default_factory=tracing.carrier)

    @property
    def connected(self) -> bool:
        return self.done.is_set() and not self.error


class Consents:
    def __init__(
        self,
        store: GrantStore,
        server_url: Callable[[str], str | None],
        settings: OAuthClientSettings,
        on_connected: Callable[[str, str], None] = lambda server, person: None,
        client_of: Callable[[str], dict[str, str] | None] = lambda server: None,
    ) -> None:
        self.client_of = client_of
        self.store = store
        self.server_url = server_url
        self.settings = settings
        self.on_connected = on_connected
        self._by_id: dict[str, Flow] = {}
        self._by_state: dict[str, Flow] = {}
        self._live: dict[tuple[str, str], Flow] = {}

    @staticmethod
    def redirect_uri(base_url: str) -> str:
        return base_url.rstrip("/") + CALLBACK_PATH

    def client_id_url(self, base_url: str) -> str | None:
        """Jarvis's URL-based client id for an authorization server that takes one (provider.client_id_url)."""
        return client_id_url(self.settings.client_metadata_url, base_url, self.settings.allow_loopback)

    @staticmethod
    def link(flow: Flow) -> str:
        return f"{flow.base_url.rstrip('/')}{START_PATH}?flow={flow.id}"

    def holds(self, flow_id: str) -> bool:
        """Whether the consent a link names is this process's (relay.py asks the others otherwise)."""
        return flow_id in self._by_id

    def flow_for_state(self, state: str) -> Flow | None:
        return self._by_state.get(state)

    def flow(self, flow_id: str, person: str, server: str) -> Flow | None:
        """The consent `flow_id` names, if it is this person's at this server (a retry names it in its state)."""
        flow = self._by_id.get(flow_id)
        return flow if flow is not None and flow.person == person and flow.server == server else None

    def pending(self, person: str, server: str) -> Flow | None:
        flow = self._live.get((person, server))
        return flow if flow is not None and not flow.done.is_set() else None

    async def begin(self, person: str, server: str, base_url: str) -> Flow:
        """The consent under way for (person, server), or a new one; returns once its link exists (ConsentFailed
        when discovery or registration failed)."""
        self._prune()
        flow = self.pending(person, server)
        if flow is None:
            url = self.server_url(server)
            if url is None:
                raise ConsentFailed(f"server '{server}' is not a streamable-HTTP server Jarvis can authorize at")
            flow = Flow(secrets.token_urlsafe(18), person, server, base_url)
            self._by_id[flow.id] = flow
            self._live[(person, server)] = flow
            flow.task = asyncio.create_task(self._run(flow, url), name=f"consent-{server}")
        ready = asyncio.ensure_future(flow.ready.wait())
        done = asyncio.ensure_future(flow.done.wait())
        try:
            await asyncio.wait([ready, done], timeout=self.settings.ready_seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            done.cancel()
        if flow.error:
            raise ConsentFailed(flow.error)
        if not flow.ready.is_set():
            raise ConsentFailed(
                f"server '{server}''s authorization server did not answer within {self.settings.ready_seconds:g} s; "
                "try again later"
            )
        return flow

    async def continued(self, person: str, server: str) -> None:
        """Where this call is traced: if it is `person`'s first call to `server` since a consent they gave (within the
        consent's lifetime), its span links to the call that asked for it, so a trace viewer goes from that call to
        the browser's callback (a span in its trace) and on to this one. One vault read per traced call."""
        if not person or tracing.linked() is None:
            return
        asked = await VaultStorage(self.store, person, server).take_asked()
        if asked:
            tracing.link(asked, {"jarvis.consent": "continued", "jarvis.downstream.server": server})

    async def _run(self, flow: Flow, url: str) -> None:
        async def publish(authorize_url: str) -> None:
            wanted = await provider.storage.wanted_scope()
            if wanted:  # a step-up asked for more than the 401 names: ask for both (the code carries the grant)
                authorize_url = with_scope(authorize_url, wanted)
            flow.authorize_url = authorize_url
            flow.state = parse_qs(urlsplit(authorize_url).query).get("state", [""])[0]
            self._by_state[flow.state] = flow
            flow.ready.set()

        async def wait_for_browser() -> AuthorizationCodeResult:
            return await asyncio.wait_for(asyncio.shield(flow.answer), self.settings.consent_seconds)

        provider = PersonalOAuth(
            url,
            VaultStorage(self.store, flow.person, flow.server),
            self.redirect_uri(flow.base_url),
            redirect_handler=publish,
            callback_handler=wait_for_browser,
            client_metadata_url=self.client_id_url(flow.base_url),
            refresh_ahead=self.settings.refresh_ahead_seconds,
        )
        # A fresh consent starts from no tokens (an expired refresh token, a revoked grant): the probe must be
        # answered 401 so the flow runs.
        await provider.storage.forget_tokens()
        if (configured := self.client_of(flow.server)) and await provider.storage.get_client_info() is None:
            await provider.storage.set_client_info(preregistered(configured, self.redirect_uri(flow.base_url)))
        guard = AddressGuard(url, self.settings)
        try:
            async with httpx2.AsyncClient(
                auth=provider, timeout=EXCHANGE_SECONDS, event_hooks={"request": [guard.check]}
            ) as client:
                headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
                await client.post(url, content=json.dumps(_PROBE), headers=headers)
            if provider.context.current_tokens is None:
                flow.error = f"server '{flow.server}' did not ask for authorization (it answered without a 401)"
            else:
                if flow.trace:  # traced: the person's next call links to the one that asked (`continued`)
                    until = time.time() + self.settings.consent_seconds - (time.monotonic() - flow.created)
                    await provider.storage.ask_continued(flow.trace, until)
                self.on_connected(flow.server, flow.person)
        except ConsentDenied as exc:
            flow.error = str(exc)
        except TimeoutError:
            flow.error = "the consent link was not used in time; ask for a new one (jarvis_server action=connect)"
        except Exception as exc:  # the SDK's OAuth errors, HTTP failures: the reason, never a token
            flow.error = f"authorizing at server '{flow.server}' failed: {_reason(exc)}"
            log.info("consent at server %s failed: %s", flow.server, type(exc).__name__, extra={"server": flow.server})
        finally:
            flow.done.set()

    # ------------------------------------------------------------ the browser's side

    def _usable(self, flow_id: str) -> Flow:
        flow = self._by_id.get(flow_id)
        if flow is None or flow.done.is_set() or not flow.authorize_url:
            raise ConsentFailed("this consent link is unknown, used or expired; ask for a new one")
        if flow.opened:
            raise ConsentFailed(
                "this consent link was already opened; ask for a new one (jarvis_server action=connect)"
            )
        return flow

    def describe(self, flow_id: str) -> Described:
        """Whose consent a start link names, and where; ConsentFailed if it is unusable. Opens nothing."""
        flow = self._usable(flow_id)
        return Described(flow.person, flow.server)

    def open(self, flow_id: str, proven: str) -> tuple[Flow, str]:
        """The consent a start link names and the URL to send the browser on to, once the browser has shown whose
        it is: `proven` is the person it signed in as ("" when it could not sign in). A signed-in person's consent
        opens only for that same person (NotYourConsent otherwise); ConsentFailed if the link is unusable."""
        flow = self._usable(flow_id)
        if needs_sign_in(flow.person) and not hmac.compare_digest(proven, flow.person):
            log.warning(
                "consent link for server %s opened by another person than it was made for; refused",
                flow.server,
                extra={"server": flow.server},
            )
            raise NotYourConsent(
                f"this link asks you to connect '{flow.server}' for another person of Jarvis, not for the account "
                "you signed in with. Nothing was connected. If someone sent you this link, do not use it; to connect "
                f"'{flow.server}' yourself, ask your own assistant (jarvis_server action=connect name={flow.server})."
            )
        flow.opened = True
        return flow, flow.authorize_url

    async def returned(
        self, state: str, cookie: str, code: str, error: str, iss: str | None, description: str = ""
    ) -> Flow:
        """The authorization server sent the browser back: finish the consent it belongs to."""
        flow = self._by_state.get(state)
        if flow is None or flow.done.is_set() or flow.answer.done():
            raise ConsentFailed("this authorization response matches no consent under way (replayed, or expired)")
        if not flow.opened or not hmac.compare_digest(cookie, flow.nonce):
            raise ConsentFailed(
                "this authorization response belongs to a consent started in another browser; open the link "
                "Jarvis gave you in your own browser"
            )
        self._by_state.pop(state, None)
        if error:
            flow.answer.set_exception(
                ConsentDenied(f"consent was not given ({error[:60]}{': ' if description else ''}{description[:200]})")
            )
        else:
            flow.answer.set_result(AuthorizationCodeResult(code=code, state=state, iss=iss))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(flow.done.wait(), EXCHANGE_SECONDS)
        return flow

    def _prune(self) -> None:
        horizon = time.monotonic() - self.settings.consent_seconds - EXCHANGE_SECONDS
        for flow_id, flow in list(self._by_id.items()):
            if flow.created < horizon or (flow.done.is_set() and flow.created < horizon + EXCHANGE_SECONDS):
                self._by_id.pop(flow_id, None)
                self._by_state.pop(flow.state, None)
                if self._live.get((flow.person, flow.server)) is flow:
                    self._live.pop((flow.person, flow.server), None)


def with_scope(url: str, wanted: str) -> str:
    """`url` (an authorization request) asking for its scope and `wanted` both."""
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    scopes = dict.fromkeys([*" ".join(query.get("scope", [])).split(), *wanted.split()])
    query["scope"] = [" ".join(scopes)]
    return urlunsplit(parts._replace(query=urlencode({k: v[0] for k, v in query.items()})))


def preregistered(configured: dict[str, str], redirect_uri: str) -> OAuthClientInformationFull:
    """An admin's pre-registered client (servers.oauth_clients); a `${NAME}` secret is read from Jarvis's env."""
    secret = configured.get("client_secret") or None
    if secret and secret.startswith("${") and secret.endswith("}"):
        secret = os.environ.get(secret[2:-1]) or None
    return OAuthClientInformationFull.model_validate(
        {
            "client_id": configured.get("client_id", ""),
            "client_secret": secret,
            "token_endpoint_auth_method": configured.get("token_endpoint_auth_method")
            or ("client_secret_basic" if secret else "none"),
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
        }
    )


def _reason(exc: BaseException) -> str:
    """An error's message, cut short; the SDK's token errors quote the server's answer, which names no token."""
    text = str(exc) or type(exc).__name__
    return text[:300]
