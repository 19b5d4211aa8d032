"""The stream worker: one Faust app wiring one folder per feature around the pure core."""
