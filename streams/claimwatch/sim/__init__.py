"""The traffic simulator and the demo."""
