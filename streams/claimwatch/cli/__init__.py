"""The `claimwatch` command line: one module per command."""
