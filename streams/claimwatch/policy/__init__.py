"""The policy file: reading YAML with line numbers, compiling it, signing keys."""
