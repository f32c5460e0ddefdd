"""Pulling models by name into a models folder, without Django: Ollama library names from an
OCI distribution registry (oci.py) and GGUF files from Hugging Face (hf.py). The caller (a
worker's task) passes the folder, the registry and its callbacks; nothing here reads settings.

The web imports `names` alone (to check a name before it sends the task); a worker runs
`puller.pull`, which loads the HTTP clients.
"""
