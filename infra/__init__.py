"""Shared infrastructure, below every app and importing none: the environment, the database
backend and kept connections, the arrival stamp, moving a database, the one bad-input error."""
