"""Unit tests of claimwatch.gateway."""
