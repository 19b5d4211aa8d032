"""Load the HMAC keys a policy's `signing` section names: from environment variables or files.

A key is never written in the policy itself. An environment variable's value is used as
its UTF-8 bytes; a key file's bytes are used as they are, minus trailing line breaks. A
relative key file path is taken from the policy file's directory. A key has at least
MIN_KEY_BYTES (32) bytes. Errors name the policy file, the line and the key, and say what
is missing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from claimwatch.models.policy import KID_PATTERN, MIN_KEY_BYTES, Policy, SigningKey
from claimwatch.policy.source import PolicyError, dotted, line_of


def load_signing_keys(
    policy: Policy, path: str | Path, text: str, environ: Mapping[str, str] | None = None
) -> dict[str, dict[str | None, bytes]]:
    """The keys of every source in `policy.signing`, by kid; PolicyError for the first bad one.

    A key that is missing, empty or shorter than MIN_KEY_BYTES is refused, naming the
    variable or file it comes from.
    """
    if not policy.signing:
        return {}
    env = os.environ if environ is None else environ
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    keys: dict[str, dict[str | None, bytes]] = {}
    for source, entry in policy.signing.items():
        ring: dict[str | None, bytes] = {}
        for place, where in entry.all_keys():
            ring[where.kid] = _load_key(source, place, where, path, root, env)
        keys[source] = ring
    return keys


def _load_key(
    source: str,
    place: tuple[str | int, ...],
    where: SigningKey,
    path: str | Path,
    root: yaml.Node | None,
    env: Mapping[str, str],
) -> bytes:
    """One key's bytes, from its variable or file; PolicyError naming where it is missing."""
    if where.env is not None:
        loc: tuple[str | int, ...] = ("signing", source, *place, "env")
        value = env.get(where.env)
        if value is None:
            reason = f"environment variable {where.env} is not set (the key of {source!r})"
            raise PolicyError(str(path), line_of(root, loc), dotted(loc), reason)
        key, origin = value.encode("utf-8"), f"environment variable {where.env}"
    else:
        assert where.file is not None
        loc = ("signing", source, *place, "file")
        file = Path(where.file).expanduser()
        if not file.is_absolute():
            file = Path(path).parent / file
        try:
            key = file.read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            reason = f"cannot read key file {file}: {exc.strerror or exc}"
            raise PolicyError(str(path), line_of(root, loc), dotted(loc), reason) from None
        origin = f"key file {file}"
    problem = key_problem(key, origin)
    if problem is not None:
        raise PolicyError(str(path), line_of(root, loc), dotted(loc), f"{problem} ({source!r})")
    return key


def key_problem(key: bytes, origin: str) -> str | None:
    """Why `key` (from `origin`) cannot sign, or None: empty or shorter than MIN_KEY_BYTES."""
    if not key:
        return f"the key in {origin} is empty"
    if len(key) < MIN_KEY_BYTES:
        return (
            f"the key in {origin} has {len(key)} bytes; a signing key needs at least "
            f"{MIN_KEY_BYTES} (make one with `openssl rand -hex 32`)"
        )
    return None


def client_key(env_var: str | None, file: str | None) -> bytes | None:
    """A publisher's signing key from `--sign-key-env VAR` or `--sign-key-file PATH` (or None).

    Raises ValueError naming the flag and what is missing or too short.
    """
    if env_var is not None and file is not None:
        raise ValueError("--sign-key-env and --sign-key-file: give one of them, not both")
    if env_var is not None:
        value = os.environ.get(env_var)
        if not value:
            raise ValueError(f"--sign-key-env: environment variable {env_var} is not set or empty")
        key, flag = value.encode("utf-8"), "--sign-key-env"
        origin = f"environment variable {env_var}"
    elif file is not None:
        try:
            key = Path(file).expanduser().read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise ValueError(
                f"--sign-key-file: cannot read {file}: {exc.strerror or exc}"
            ) from None
        if not key:
            raise ValueError(f"--sign-key-file: {file} is empty")
        flag, origin = "--sign-key-file", f"key file {file}"
    else:
        return None
    problem = key_problem(key, origin)
    if problem is not None:
        raise ValueError(f"{flag}: {problem}")
    return key


def client_kid(kid: str | None, key: bytes | None) -> str | None:
    """A publisher's `--sign-kid`, checked: it needs a key, and the form a policy's `kid` has.

    Raises ValueError naming the flag and what is wrong.
    """
    if kid is None:
        return None
    if key is None:
        raise ValueError("--sign-kid: give the key too (--sign-key-env or --sign-key-file)")
    if re.fullmatch(KID_PATTERN, kid) is None:
        raise ValueError(
            f"--sign-kid: {kid!r} is not a key id (letters, digits, `.`, `_`, `:`, `-`; "
            "at most 64, starting with a letter or digit)"
        )
    return kid
