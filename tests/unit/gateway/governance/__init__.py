"""Unit tests of the gateway's governance stage."""
