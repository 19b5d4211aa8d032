"""Documents of claims merged per key."""
