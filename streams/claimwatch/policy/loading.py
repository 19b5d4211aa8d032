"""Load a policy file: safe YAML, validated against the model, errors naming file, line and key."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from claimwatch.core.policy import CompiledPolicy
from claimwatch.models.policy import Policy
from claimwatch.policy.signing_cover import check_signing_cover
from claimwatch.policy.signing_keys import load_signing_keys
from claimwatch.policy.source import (
    MAX_POLICY_BYTES,
    PolicyError,
    UniqueKeyLoader,
    decode_utf8,
    key_at,
    line_of,
    read_bounded,
)
from claimwatch.policy.unit_cache import use_unit_cache


def parse_policy(text: str, path: str = "<policy>") -> Policy:
    """Validate policy text; raise PolicyError naming the first problem."""
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        key = ""
        if isinstance(exc, yaml.constructor.ConstructorError):  # the text composes: find the key
            key = key_at(yaml.compose(text, Loader=yaml.SafeLoader), exc.problem_mark)
        raise PolicyError(path, line, key, f"invalid YAML: {exc.problem or exc}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, e.g. NUL
        line = text.count("\n", 0, exc.position) + 1
        reason = f"invalid YAML: unacceptable character #x{exc.character:04x}"
        raise PolicyError(path, line, "", reason) from None
    except yaml.YAMLError as exc:
        raise PolicyError(path, None, "", f"invalid YAML: {' '.join(str(exc).split())}") from None
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
