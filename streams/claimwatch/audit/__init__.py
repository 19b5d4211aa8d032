"""Offline audit: resolve a file, replay a stream under a policy, diff, explain."""
