"""The wire format: one JSON codec, topic names and partitioning, Kafka client settings."""
