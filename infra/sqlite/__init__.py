"""Django's SQLite backend with a finer wait for the write lock (base.py)."""
