"""The pure core: normalization, freshness, lineage, precedence and decisions (no I/O, no clock)."""
