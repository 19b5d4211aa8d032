"""The check kinds a gateway file may name, and the check each `governance.checks` entry builds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from claimwatch.gateway.config import ConfigSource
from claimwatch.gateway.governance import opa, pii, trust
from claimwatch.gateway.governance.checks import CHECK_DOCS, Check, CheckEnv

#: The check kinds `governance.checks.<name>.kind` may name.
KINDS: Final = ("pii", "opa", "trust")


def build_check(name: str, raw: Mapping[str, Any], source: ConfigSource, env: CheckEnv) -> Check:
    """The check `governance.checks.<name>` describes, by its `kind` (pii, opa, trust)."""
    if not isinstance(raw, Mapping):
        raise source.error(
            ("governance", "checks", name),
            f"a check is a mapping with a `kind` ({', '.join(KINDS)}); {CHECK_DOCS}",
        )
    kind = raw.get("kind")
    if kind is None:
        raise source.error(
            ("governance", "checks", name), f"missing: `kind`, one of {', '.join(KINDS)}"
        )
    if kind == "pii":
        return pii.PiiCheck.from_config(name, raw, source, env)
    if kind == "opa":
        return opa.OpaCheck.from_config(name, raw, source, env)
    if kind == "trust":
        return trust.TrustCheck.from_config(name, raw, source, env)
    raise source.error(
        ("governance", "checks", name, "kind"), f"{kind!r} is not one of {', '.join(KINDS)}"
    )
