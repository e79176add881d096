"""Who a call's downstream credentials belong to: the signed-in person, else the `jv_` token's owner (the token)."""

from __future__ import annotations

from jarvis.aggregator.tooling.principal import Principal


def person_of(principal: Principal) -> str:
    """A stable key of the person behind `principal`: never a secret, fit for the vault and for logs."""
    if principal.user:
        return f"user:{principal.user}"
    if principal.token_id:
        return f"token:{principal.token_id}"
    return "local" if principal.local else ""
