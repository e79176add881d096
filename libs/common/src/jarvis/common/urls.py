"""URLs as Jarvis shows and logs them: without the credentials a URL can carry.

A server's URL may hold a password in its userinfo (`https://alice:pw@host/mcp`) or a key in its query
(`?api_key=...`, `&sig=...`). Whatever shows a URL (tool answers, errors, the audit log, log lines) shows
`masked_url(url)`; what connects to it, or writes it into a client's configuration, keeps the URL itself.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_plus, urlsplit, urlunsplit

MASK = "***"
# Query (and fragment) parameters whose values are credentials: these names exactly, or any name containing
# one of the words after them (case-insensitive, `_`/`-` ignored for the exact names).
_CREDENTIAL_NAMES = frozenset(
    {"key", "sig", "code", "auth", "pass", "pwd", "pw", "jwt", "bearer", "session", "sid", "otp", "hash", "hmac"}
)
_CREDENTIAL_WORDS = re.compile(r"token|secret|key|passw|password|auth|signature|credential|cookie|private", re.I)
# A URL inside free text (an error message, a log line): a scheme, `://`, then up to whitespace or a quote.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>`]+")


def credential_name(name: str) -> bool:
    """Whether a query parameter named `name` carries a credential (api_key, token, X-Amz-Signature, sig, ...)."""
    plain = unquote_plus(name).strip().lower()
    return plain.replace("-", "").replace("_", "") in _CREDENTIAL_NAMES or bool(_CREDENTIAL_WORDS.search(plain))


def masked_url(url: str) -> str:
    """`url` with its userinfo shown as `***@` and every credential-like query or fragment value as `***`."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:  # not a URL urllib can split (a bad IPv6 literal): mask what looks like userinfo
        return _masked_params(re.sub(r"(://)[^/?#@]*@", r"\1" + MASK + "@", url))
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query, fragment = _masked_params(parts.query), _masked_params(parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url  # as given, not as urllib would rebuild it
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def masked_urls(text: str) -> str:
    """`text` with every URL in it masked as `masked_url` masks one (for errors and log lines that quote URLs)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: masked_url(m.group(0)), text)


def _masked_params(params: str) -> str:
    """`a=1&api_key=s3cret` as `a=1&api_key=***`; the separators and every other byte as they were."""
    if "=" not in params:
        return params
    pieces = re.split(r"([&;?])", params)
    for index in range(0, len(pieces), 2):
        name, equals, value = pieces[index].partition("=")
        if equals and value and credential_name(name):
            pieces[index] = f"{name}={MASK}"
    return "".join(pieces)
