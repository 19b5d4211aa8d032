"""The policy file as text: bounded reading, UTF-8, YAML with unique keys, lines of keys.

Every error is a `PolicyError` naming the file, the line and the key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

#: The largest policy file loaded unless the caller (`--max-policy-bytes`) says otherwise: 1 MiB.
MAX_POLICY_BYTES = 1024 * 1024


class PolicyError(ValueError):
    """A policy file that cannot be used; the message names the file, line, key and reason."""

    def __init__(self, path: str, line: int | None, key: str | None, reason: str) -> None:
        """`key=None`: a problem of the file itself (size, encoding), named without a key."""
        where = f"{path}:{line}" if line is not None else path
        what = "" if key is None else f"{key or '(top level)'}: "
        super().__init__(f"{where}: {what}{reason}")
        self.path, self.line, self.key, self.reason = path, line, key or "", reason


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of keeping the last one silently."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def dotted(loc: tuple[int | str, ...]) -> str:
    """A policy key as errors name it: `signing.ledger.keys.0.env`."""
    return ".".join(str(p) for p in loc)


def line_of(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the deepest node along a pydantic error location."""
    node, line = root, (root.start_mark.line + 1) if root is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == str(part)), None)
            key = next((k for k, v in node.value if k.value == str(part)), None)
            if match is None:
                break
            line = (key.start_mark.line if key is not None else match.start_mark.line) + 1
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def key_at(root: yaml.Node | None, mark: yaml.Mark | None) -> str:
    """Dotted key of the mapping entry whose key or value starts at `mark` ('' if none)."""
    if root is None or mark is None:
        return ""
    stack: list[tuple[yaml.Node, tuple[str, ...]]] = [(root, ())]
    seen: set[int] = set()  # aliases may make the node graph cyclic
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        pairs: list[tuple[str, yaml.Node, yaml.Node]] = []
        if isinstance(node, yaml.MappingNode):
            pairs = [(str(k.value), k, v) for k, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            pairs = [(str(i), v, v) for i, v in enumerate(node.value)]
        for name, key_node, value_node in pairs:
            if mark.index in (key_node.start_mark.index, value_node.start_mark.index):
                return ".".join((*where, name))
            stack.append((value_node, (*where, name)))
    return ""


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """The file's bytes; PolicyError, before reading it, when it is larger than `max_bytes`."""
    name = str(path)
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise PolicyError(name, None, None, _too_big(f"{size} bytes", max_bytes))
            data = handle.read(max_bytes + 1)  # bounded: a pipe or a growing file has no size
    except OSError as exc:
        raise PolicyError(name, None, "", f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise PolicyError(name, None, None, _too_big(f"more than {max_bytes} bytes", max_bytes))
    return data


def _too_big(size: str, max_bytes: int) -> str:
    return f"{size} exceeds the {max_bytes}-byte policy limit (--max-policy-bytes)"


def decode_utf8(data: bytes, path: str) -> str:
    """UTF-8 text; PolicyError naming the line (1-based) and byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        reason = f"invalid UTF-8 byte 0x{data[exc.start]:02x} at byte offset {exc.start}"
        raise PolicyError(path, line, None, reason) from None


def read_yaml(text: str, path: str) -> tuple[Any, yaml.Node | None]:
    """The YAML document (unique keys) and its node tree, whose marks give each key's line.

    PolicyError names the file, the line and, where the text composes, the key.
    """
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
    return data, root
