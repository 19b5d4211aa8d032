"""Tests of the wire format and client settings."""
