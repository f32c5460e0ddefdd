"""The OpenAI-compatible HTTP API (/v1/...), its API keys, and the Prometheus endpoint."""
