"""Kept import path (the README's first example): the publisher lives in `streams.client`."""

from streams.client.publisher import InvalidClaim, Publisher, validate

__all__ = ["InvalidClaim", "Publisher", "validate"]
