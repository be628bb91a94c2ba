"""The base of the errors lakeloader raises, so a caller can catch every one of them with one `except`.

Each error keeps the built-in class it had (`ConfigError` is still a `ValueError`, `LandError` a `RuntimeError`),
so code that catches those goes on catching them.
"""


class LakeloaderError(Exception):
    """Base class of every exception defined by lakeloader and lakeloader_airflow."""
