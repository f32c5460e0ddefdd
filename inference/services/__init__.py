"""Writes, by sub-domain; each module's functions take keyword arguments and raise ClientError.

- validation:     checks on what a client sends (pure)
- generations:    create (a message, a regenerated answer, an edit), send and cancel one answer
- conversations:  rename, show another branch, change the chat settings
- presets:        a person's own named chat settings
- engine_control: staff's choice of model, settings and scheduling policy
- demo:           the shared-machine scenario on the dashboard
- sweeps:         the web side's repairs after a worker stops

The streaming loop that runs an answer lives in the worker package (worker/stream.py): only
workers run it, and the web reaches them through inference.dispatch.
"""
