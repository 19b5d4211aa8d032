"""Load the HMAC keys a policy's `signing` section names: from environment variables or files.

A key is never written in the policy itself. An environment variable's value is used as
its UTF-8 bytes; a key file's bytes are used as they are, minus trailing line breaks. A
relative key file path is taken from the policy file's directory. Errors name the policy
file, the line and the key, and say what is missing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from schemas.policy import Policy
from streams.policy.source import PolicyError, line_of


def load_signing_keys(
    policy: Policy, path: str | Path, text: str, environ: Mapping[str, str] | None = None
) -> dict[str, bytes]:
    """The key of every source in `policy.signing`; PolicyError for the first one missing."""
    if not policy.signing:
        return {}
    env = os.environ if environ is None else environ
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    keys: dict[str, bytes] = {}
    for source, where in policy.signing.items():
        if where.env is not None:
            loc: tuple[str, ...] = ("signing", source, "env")
            value = env.get(where.env)
            if value is None:
                reason = f"environment variable {where.env} is not set (the key of {source!r})"
                raise PolicyError(str(path), line_of(root, loc), ".".join(loc), reason)
            key = value.encode("utf-8")
        else:
            assert where.file is not None
            loc = ("signing", source, "file")
            file = Path(where.file).expanduser()
            if not file.is_absolute():
                file = Path(path).parent / file
            try:
                key = file.read_bytes().rstrip(b"\r\n")
            except OSError as exc:
                reason = f"cannot read key file {file}: {exc.strerror or exc}"
                raise PolicyError(str(path), line_of(root, loc), ".".join(loc), reason) from None
        if not key:
            reason = f"the key of {source!r} is empty"
            raise PolicyError(str(path), line_of(root, loc), ".".join(loc), reason)
        keys[source] = key
    return keys


def client_key(env_var: str | None, file: str | None) -> bytes | None:
    """A publisher's signing key from `--sign-key-env VAR` or `--sign-key-file PATH` (or None).

    Raises ValueError naming the flag and what is missing.
    """
    if env_var is not None and file is not None:
        raise ValueError("--sign-key-env and --sign-key-file: give one of them, not both")
    if env_var is not None:
        value = os.environ.get(env_var)
        if not value:
            raise ValueError(f"--sign-key-env: environment variable {env_var} is not set or empty")
        return value.encode("utf-8")
    if file is not None:
        try:
            key = Path(file).expanduser().read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise ValueError(
                f"--sign-key-file: cannot read {file}: {exc.strerror or exc}"
            ) from None
        if not key:
            raise ValueError(f"--sign-key-file: {file} is empty")
        return key
    return None
