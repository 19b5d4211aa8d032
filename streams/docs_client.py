"""Kept import path: the docs client lives in `streams.client.docs_client`."""

from streams.client.docs_client import MAX_RETRIES, DocsClient, DocsError, merge_and_publish

__all__ = ["MAX_RETRIES", "DocsClient", "DocsError", "merge_and_publish"]
