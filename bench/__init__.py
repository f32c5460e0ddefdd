"""Benchmarks, kept out of the runtime apps.

- engine.py: the engine in process on the real model (`python manage.py bench_engine`).
- serving.py: OpenAI-compatible servers and the raw engine, side by side (`python manage.py bench_serving`).
- report.py: what their reports share (percentiles, Markdown tables, JSON and the Plotly chart).
- attention_paths.py, sampling.py, profile_stream.sh: one-off studies, run as scripts (see docs/bench/journal.md).

Results go to docs/bench: the JSON is committed, the HTML charts are written by the commands.
"""
