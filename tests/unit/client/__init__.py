"""Tests of the client SDK."""
