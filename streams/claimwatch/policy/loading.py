"""Load a policy file: safe YAML, validated against the model, errors naming file, line and key."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from claimwatch.core.policy import CompiledPolicy
from claimwatch.models.policy import Policy
from claimwatch.policy.signing_cover import check_signing_cover
from claimwatch.policy.signing_keys import load_signing_keys
from claimwatch.policy.source import (
    MAX_POLICY_BYTES,
    PolicyError,
    decode_utf8,
    line_of,
    read_bounded,
    read_yaml,
)
from claimwatch.policy.unit_cache import use_unit_cache


def parse_policy(text: str, path: str = "<policy>") -> Policy:
    """Validate policy text; raise PolicyError naming the first problem."""
    data, root = read_yaml(text, path)
    if not isinstance(data, dict):
        raise PolicyError(path, 1, "", "a policy file must be a mapping with `policy_version`")
    use_unit_cache()  # a quantity field's unit is checked against pint's registry
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(p for p in error["loc"] if not str(p).startswith("function-"))
        loc = tuple(p for p in loc if p not in ("str", "int", "float", "constrained-str"))
        key = ".".join(str(p) for p in loc)
        reason = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            reason = "unknown key (check the spelling against docs/reference/policy.md)"
        if loc[:1] == ("signing",) and _literal_key(error["type"], loc):
            reason = _LITERAL_KEY
        raise PolicyError(path, line_of(root, loc), key, reason) from None
    check_signing_cover(policy, root, path)
    return policy


def load_policy(path: str | Path, *, max_bytes: int = MAX_POLICY_BYTES) -> CompiledPolicy:
    """Read, validate and compile a policy file of at most `max_bytes` bytes."""
    p = Path(path)
    text = decode_utf8(read_bounded(p, max_bytes), str(p))
    policy = parse_policy(text, str(p))
    return CompiledPolicy(policy, load_signing_keys(policy, p, text))


#: Names under `signing.<source>` that look like the key itself, written into the policy.
_SECRET_NAMES = frozenset({"key", "secret", "hmac", "value", "password", "token"})
_LITERAL_KEY = (
    "a signing key is never written in the policy: name an environment variable "
    "(`env: VAR`) or a key file (`file: path`)"
)


def _literal_key(kind: str, loc: tuple[int | str, ...]) -> bool:
    """Whether a validation error under `signing` is a key written into the policy."""
    if len(loc) == 2:  # `source: s3cret` instead of a mapping
        return kind in ("model_type", "model_attributes_type")
    if len(loc) == 4 and loc[2] == "keys":  # `keys: [s3cret]`
        return kind in ("model_type", "model_attributes_type")
    return kind == "extra_forbidden" and str(loc[-1]).lower() in _SECRET_NAMES
