"""Kafka client security pass-through (CLAIMWATCH_SECURITY_PROTOCOL and friends)."""

from __future__ import annotations

import ssl

import faust
import pytest
from claimwatch.wire.kafka import client_security
from claimwatch.worker.app import _credentials

_VARS = (
    "CLAIMWATCH_SECURITY_PROTOCOL",
    "CLAIMWATCH_SASL_MECHANISM",
    "CLAIMWATCH_SASL_USERNAME",
    "CLAIMWATCH_SASL_PASSWORD",
    "CLAIMWATCH_SSL_CAFILE",
    "CLAIMWATCH_SSL_CERTFILE",
    "CLAIMWATCH_SSL_KEYFILE",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No security variable from the outside leaks into a test."""
    for name in _VARS:
        monkeypatch.delenv(name, raising=False)


def test_plaintext_by_default() -> None:
    """Nothing set: no settings, no Faust credentials."""
    assert ({}, None) == (client_security(), _credentials(client_security()))


def test_sasl_ssl_without_a_ca_file_gets_the_system_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SSL needs a context in aiokafka; the system's CAs are used when none is named."""
    monkeypatch.setenv("CLAIMWATCH_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("CLAIMWATCH_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("CLAIMWATCH_SASL_USERNAME", "agent")
    monkeypatch.setenv("CLAIMWATCH_SASL_PASSWORD", "pw")
    settings = client_security()
    assert ("SASL_SSL", "SCRAM-SHA-512", "agent", "pw") == (
        settings["security_protocol"],
        settings["sasl_mechanism"],
        settings["sasl_plain_username"],
        settings["sasl_plain_password"],
    )
    assert isinstance(settings["ssl_context"], ssl.SSLContext)
    credentials = _credentials(settings)
    assert isinstance(credentials, faust.SASLCredentials)
    assert settings["ssl_context"] is credentials.ssl_context


def test_ssl_only_gives_faust_ssl_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """TLS without SASL: the worker's Faust app gets SSL credentials with the same context."""
    monkeypatch.setenv("CLAIMWATCH_SECURITY_PROTOCOL", "SSL")
    settings = client_security()
    assert isinstance(_credentials(settings), faust.SSLCredentials)
