"""What a policy's `signing` must cover: its systems of record and field owners.

A policy that signs some sources but leaves a system of record (in `sources` or in a
field's `authority` map) or a field's `owner` unsigned would accept the claims that decide
the most from anyone who can write the topic. Such a policy is refused at load, unless it
lists the source under `signing_exempt` (the owner accepts its unsigned claims knowingly).

Coverage: a bare name in `signing` covers the source and every `@region` of it; an exact id
(`name@region`) covers only itself. An exact id whose regions share the bare registry entry
would leave the other regions of that entry without a key, so it needs the bare name signed
too, or a `sources` entry of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from claimwatch.core.policy import base_source
from claimwatch.models.policy import Authority, Policy
from claimwatch.policy.source import PolicyError, dotted, line_of

_HOW = "a bare name covers every @region"


def check_signing_cover(policy: Policy, root: yaml.Node | None, path: str) -> None:
    """Raise PolicyError (file, line, key, what to do) for the first source left unsigned."""
    signing = policy.signing
    if not signing:
        return
    for i, name in enumerate(policy.signing_exempt):
        if name in signing:
            loc: tuple[str | int, ...] = ("signing_exempt", i)
            reason = f"{name!r} is both signed (`signing`) and exempt from it: keep one"
            raise PolicyError(path, line_of(root, loc), dotted(loc), reason)
    for name in signing:
        base = base_source(name)
        shared = "@" in name and name not in policy.sources and base in policy.sources
        if shared and base not in signing:
            loc = ("signing", name)
            reason = (
                f"{name!r} shares the registry entry `sources.{base}` with every other "
                f"region of {base!r}, whose claims would have no key: sign {base!r} too "
                f"({_HOW}; {name!r} keeps its own keys) or give {name!r} a `sources` "
                "entry of its own"
            )
            raise PolicyError(path, line_of(root, loc), dotted(loc), reason)
    exempt = set(policy.signing_exempt)
    for name, loc, role in _deciding_sources(policy):
        if name in exempt or _covered(name, policy):
            continue
        reason = (
            f"{role} {name!r} is not covered by `signing`: its claims would be accepted "
            f"unsigned. Sign it (`signing: {{{base_source(name)}: {{env: VAR}}}}`; {_HOW}) "
            f"or accept its unsigned claims knowingly with `signing_exempt: [{name}]`"
        )
        raise PolicyError(path, line_of(root, loc), dotted(loc), reason)


def _covered(name: str, policy: Policy) -> bool:
    """Whether every claim the policy would class as `name` must be signed."""
    return name in policy.signing or ("@" in name and base_source(name) in policy.signing)


def _deciding_sources(policy: Policy) -> Iterator[tuple[str, tuple[str | int, ...], str]]:
    """(name, policy key, role) of every system of record and field owner, in file order."""
    for name, entry in policy.sources.items():
        if entry.authority is Authority.SYSTEM_OF_RECORD:
            yield name, ("sources", name), "system of record"
    for field, spec in policy.fields.items():
        for name, authority in spec.authority.items():
            if authority is Authority.SYSTEM_OF_RECORD:
                yield name, ("fields", field, "authority", name), f"the system of record of {field}"
        if spec.owner is not None:
            yield spec.owner, ("fields", field, "owner"), f"the owner of {field}"
