"""The HTTP APIs: OpenAI-compatible (/v1), Ollama-compatible (/api), embeddings for both, and the
server's own endpoints (/healthz, /props, /slots, /metrics), over one shared answer lifecycle."""
