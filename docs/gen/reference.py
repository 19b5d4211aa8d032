"""The generated reference pages: the policy file from its pydantic models, the command line
from its Typer app. `make docs` runs this (mkdocs-gen-files) on every build, so the pages
cannot drift from the code; tests/unit/docs/test_reference.py checks what it writes.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from enum import Enum
from typing import Any

import typer
import typer.cli
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from claimwatch.cli.main import build
from claimwatch.models.durations import parse_duration
from claimwatch.models.policy import Policy

POLICY_PAGE = "reference/policy.md"
CLI_PAGE = "reference/cli.md"

#: How a mapping's key reads in a key path (`fields.<name>.type`).
_KEY_NAMES = {"sources": "<source>", "fields": "<field>", "authority": "<source>",
              "signing": "<source>"}

_POLICY_HEAD = """# Policy file reference

Every key of a policy file, with its type, its default and what it means. This page is
generated from the pydantic models (`claimwatch.models.policy`) on every build of the
site; the JSON Schema of the same models is `schemas/policy.schema.json`
([wire format](../wire-format.md)). Durations are written `500ms`, `60s`, `5m`, `24h`,
`2d` (a bare number is seconds). How the keys are used: [concepts](../concepts.md);
signing and strictness: [signing and strictness](../policy.md).

A key whose default is *required* must be given; a key of a mapping (`<field>`,
`<source>`) is a name you choose.
"""


def _type_name(annotation: Any) -> str:
    """A short, readable name of a field's type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        validators = [getattr(a, "func", None) for a in args[1:]]
        return "duration" if parse_duration in validators else _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping (below)"
    return getattr(annotation, "__name__", str(annotation))


def _field_type(info: FieldInfo) -> str:
    """The field's type name; a duration's (`5m`) is named so, not by the int it is held in."""
    validators = [getattr(m, "func", None) for m in info.metadata]
    if parse_duration in validators:
        nullable = type(None) in typing.get_args(info.annotation)
        return "duration" + (" or null" if nullable else "")
    return _type_name(info.annotation)


def _nested(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """The model a field holds, with the key it adds to the path (`.<name>`, `[]`), if any."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "", annotation
    if origin in (typing.Union, types.UnionType):
        for arg in args:
            found = _nested(arg)
            if found is not None:
                return found
    if origin is list:
        found = _nested(args[0])
        return None if found is None else ("[]", found[1])
    if origin is dict:
        found = _nested(args[1])
        return None if found is None else (".{key}", found[1])
    return None


def _default(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    """The default as a policy file would write it (`5m`, not microseconds)."""
    if info.default is PydanticUndefined and info.default_factory is None:
        return "*required*"
    dumped = model.model_construct().model_dump(mode="json", include={name})
    value = dumped.get(name)
    if value is None:
        return "none"
    if value in ({}, []):
        return "empty"
    if isinstance(value, dict):
        return "(below)"
    return f"`{value}`"


def policy_rows(
    model: type[BaseModel] = Policy, prefix: str = ""
) -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, default, description) of every key of `model`, depth first."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        yield (
            path,
            _field_type(info),
            _default(model, name, info),
            " ".join((info.description or "").split()),
        )
        nested = _nested(info.annotation)
        if nested is not None:
            step, inner = nested
            key = step.format(key=_KEY_NAMES.get(name, "<name>"))
            yield from policy_rows(inner, f"{path}{key}.")


def policy_reference() -> str:
    """The policy reference page (Markdown)."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for path, kind, default, description in policy_rows():
        cell = description.replace("|", "\\|")
        rows.append(f"| `{path}` | {kind} | {default} | {cell} |")
    return _POLICY_HEAD + "\n" + "\n".join(rows) + "\n"


def cli_reference() -> str:
    """The command-line reference page (Markdown), from every command's Typer help."""
    command = typer.main.get_command(build())
    ctx = typer.Context(command, info_name="claimwatch")
    body = typer.cli.get_docs_for_click(obj=command, ctx=ctx, name="claimwatch")
    return (
        "# Command-line reference\n\n"
        "Every `claimwatch` command with its options, generated from the command line's own\n"
        "help on every build of the site. Exit codes: 0 ok, 1 a runtime failure (or, for\n"
        "`ask`, no covering decision), 2 bad usage or a bad policy. In a checkout the command\n"
        "is `.venv/bin/claimwatch` (or `claimwatch` once the venv is activated).\n\n"
        + body.replace("# `claimwatch`", "## `claimwatch`", 1)
    )


def write_pages() -> None:
    """Write both pages into the site being built (mkdocs-gen-files)."""
    import mkdocs_gen_files

    for page, text in ((POLICY_PAGE, policy_reference()), (CLI_PAGE, cli_reference())):
        with mkdocs_gen_files.open(page, "w") as out:
            out.write(text)


if __name__ in {"<run_path>", "__main__"}:
    write_pages()
