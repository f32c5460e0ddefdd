from django.apps import AppConfig


class BenchConfig(AppConfig):
    """The benchmarks' management commands (manage.py bench_*): installed where bench/ is, a
    checkout; the image leaves the folder out, and with it the app."""

    name = "bench"
