"""The `opa` check: ask an OPA server for a policy pack's decision on the call.

The check posts the call (tool, server, phase, arguments, the phase's texts, the result's
structured content) as OPA's `input` to `POST /v1/data/<package path>/<rule>` and turns the
`result` into one argument. Every way that can go wrong (OPA down, slow, erring, the pack
not loaded, an answer that is no decision) is a `CheckFailed` naming it, so the argument is
missing and the request undecided: never a silent allow (docs/policy-packs.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from claimwatch.gateway.config import ConfigSource, http_url
from claimwatch.gateway.governance.checks import Argument, CallView, CheckEnv, CheckFailed
from claimwatch.gateway.governance.targets import Mask, PatternMask
from claimwatch.gateway.upstream import describe
from claimwatch.models.durations import US_PER_S, Duration

#: A Rego package (`claimwatch.packs.pii`) and a rule name (`decision`).
PACKAGE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
RULE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: The largest answer read from OPA; a decision is a few hundred bytes.
MAX_ANSWER_BYTES: Final = 1024 * 1024
_DOCS: Final = "see docs/policy-packs.md"


class OpaMaskItem(BaseModel):
    """One entry of a decision's `mask`: `{pattern, label?}` or `{pointer}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: str | None = Field(default=None, min_length=1, max_length=1024)
    label: str | None = Field(default=None, pattern=r"^[A-Z][A-Z0-9_]{0,31}$")
    pointer: str | None = Field(default=None, max_length=1024)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern, re.ASCII)
            except re.error as exc:
                raise ValueError(f"{pattern!r} does not compile: {exc}") from None
        return pattern

    @field_validator("pointer")
    @classmethod
    def _json_pointer(cls, pointer: str | None) -> str | None:
        if pointer is not None and not pointer.startswith("/"):
            raise ValueError(f"{pointer!r} is no JSON pointer: write e.g. /structured/iban")
        return pointer

    @model_validator(mode="after")
    def _one_kind(self) -> OpaMaskItem:
        if (self.pattern is None) == (self.pointer is None):
            raise ValueError("give either `pattern` (and `label`) or `pointer`")
        if self.pointer is not None and self.label is not None:
            raise ValueError("`label` goes with `pattern`; a pointer is replaced by [REDACTED]")
        return self


class OpaDecision(BaseModel):
    """A pack's `decision` document, as the gateway accepts it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Literal["allow", "deny", "modify"]
    kind: str = Field(min_length=1, max_length=128)
    claim: str = Field(max_length=4096)
    strength: float = Field(ge=0, le=1, strict=True)
    mask: list[OpaMaskItem] = Field(default_factory=list, max_length=64)

    def argument(self) -> Argument:
        """The check's argument: this decision, and what it masks."""
        patterns = tuple(
            PatternMask(m.pattern, m.label or "REDACTED") for m in self.mask if m.pattern
        )
        pointers = tuple(m.pointer for m in self.mask if m.pointer is not None)
        return Argument(
            self.kind,
            self.claim,
            self.strength,
            self.decision,
            Mask(patterns=patterns, pointers=pointers),
        )


class OpaClient:
    """One OPA server's data API, over one HTTP session opened on first use."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    async def query(self, path: str, input_doc: Mapping[str, Any]) -> Any:
        """The `result` of `POST /v1/data/<path>` with `input_doc`; CheckFailed otherwise."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = f"{self.url}/v1/data/{path}"
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        try:
            async with self._session.post(url, json={"input": input_doc}, timeout=timeout) as got:
                status, body = got.status, await _read_bounded(got)
        except TimeoutError:
            raise CheckFailed(
                f"OPA at {self.url} gave no answer within {self.timeout_s * 1000:.0f} ms"
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise CheckFailed(
                f"OPA at {self.url} is unreachable: {describe(exc.os_error)}"
            ) from None
        except aiohttp.ClientConnectionError as exc:
            raise CheckFailed(f"OPA at {self.url} is unreachable: {describe(exc)}") from None
        except aiohttp.ClientError as exc:
            raise CheckFailed(f"OPA at {self.url} failed: {describe(exc)}") from None
        if body is None:
            raise CheckFailed(f"OPA {status}: its answer is over {MAX_ANSWER_BYTES} bytes")
        answer = _json(body)
        if status != 200:
            raise CheckFailed(f"OPA {status}: {_error_of(answer, body)}")
        if not isinstance(answer, dict):
            raise CheckFailed(f"OPA answered {_excerpt(body)!r}, not a JSON object")
        if "result" not in answer:
            raise CheckFailed(f"undefined: no {path} (is the pack loaded?)")
        return answer["result"]

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class OpaCheckConfig(BaseModel):
    """`governance.checks.<name>` of kind `opa`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["opa"]
    package: str = Field(pattern=PACKAGE.pattern)
    rule: str = Field(default="decision", pattern=RULE.pattern)
    timeout: Duration | None = None
    url: str | None = None

    @field_validator("timeout")
    @classmethod
    def _positive(cls, timeout: int | None) -> int | None:
        if timeout is not None and timeout <= 0:
            raise ValueError("a timeout must be more than 0, e.g. 500ms")
        return timeout

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return http_url(url, "http://127.0.0.1:8181")


class OpaCheck:
    """One configured `opa` check: a pack's rule, asked through its own `OpaClient`."""

    def __init__(
        self,
        name: str,
        timeout_s: float,
        *,
        client: OpaClient,
        package: str,
        rule: str = "decision",
    ) -> None:
        self.name, self.timeout_s = name, timeout_s
        self.client = client
        #: the rule's path under /v1/data: `claimwatch/packs/pii/decision`
        self.path = "/".join((*package.split("."), rule))

    @classmethod
    def from_config(
        cls, name: str, raw: Mapping[str, Any], source: ConfigSource, env: CheckEnv
    ) -> OpaCheck:
        """The check `governance.checks.<name>` describes; PolicyError naming file, line, key."""
        at = ("governance", "checks", name)
        try:
            config = OpaCheckConfig.model_validate(raw)
        except ValidationError as exc:
            error = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
            loc = tuple(p for p in error["loc"] if not str(p).startswith("function-"))
            reason = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                reason = (
                    f"unknown key: an opa check has kind, package, rule, timeout, url ({_DOCS})"
                )
            elif error["type"] == "missing":
                reason = (
                    f"missing: name the pack's Rego package, e.g. claimwatch.packs.pii ({_DOCS})"
                )
            elif error["type"] == "string_pattern_mismatch":
                example = "claimwatch.packs.pii" if loc[-1] == "package" else "decision"
                reason = f"{error['input']!r} is not a Rego {loc[-1]} name, e.g. {example}"
            raise source.error((*at, *loc), reason) from None
        timeout_s = config.timeout / US_PER_S if config.timeout is not None else env.opa_timeout_s
        client = OpaClient(config.url or env.opa_url, timeout_s)
        return cls(name, timeout_s, client=client, package=config.package, rule=config.rule)

    async def argue(self, call: CallView) -> Argument:
        """The pack's decision on the call, or CheckFailed saying why there is none."""
        result = await self.client.query(self.path, opa_input(call))
        if not isinstance(result, dict):
            raise CheckFailed(
                f"{self.path} is not a decision: an object with decision, kind, claim and "
                f"strength was expected, OPA gave {type(result).__name__} {_excerpt(repr(result))}"
            )
        try:
            return OpaDecision.model_validate(result).argument()
        except ValidationError as exc:
            error = exc.errors()[0]
            loc = ".".join(str(p) for p in error["loc"])
            reason = error["msg"].removeprefix("Value error, ")
            raise CheckFailed(f"{self.path} is not a decision: {loc}: {reason}") from None

    async def aclose(self) -> None:
        await self.client.aclose()


def opa_input(call: CallView) -> dict[str, Any]:
    """What a pack reads as `input`: the call, its texts (the PII scan's targets), its result."""
    result = call.result
    return {
        "tool": call.tool,
        "server": call.server,
        "phase": call.phase,
        "arguments": dict(call.arguments),
        "texts": [{"pointer": t.pointer, "text": t.text} for t in call.targets],
        "structured": result.structured_content if result is not None else None,
        "is_error": bool(result.is_error) if result is not None else False,
    }


async def _read_bounded(response: aiohttp.ClientResponse) -> bytes | None:
    """The body, or None when it is over MAX_ANSWER_BYTES."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(64 * 1024):
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            return None
    return bytes(body)


def _json(body: bytes) -> Any:
    """The JSON of a body, or None when it is none."""
    try:
        return json.loads(body)
    except ValueError:
        return None


def _error_of(answer: Any, body: bytes) -> str:
    """`code: message` of OPA's error document, with its first detailed error if any."""
    if not isinstance(answer, dict):
        return _excerpt(body)
    text = f"{answer.get('code', 'error')}: {answer.get('message', '')}"
    details = answer.get("errors")
    if isinstance(details, list) and details and isinstance(details[0], dict):
        text += f"; {details[0].get('code', 'error')}: {details[0].get('message', '')}"
    return _excerpt(text, 500)


def _excerpt(text: bytes | str, limit: int = 200) -> str:
    """At most `limit` characters of `text`, on one line."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
