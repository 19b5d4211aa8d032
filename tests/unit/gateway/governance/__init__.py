"""Tests of the gateway's governance checks."""
