"""Perspecto: the bot daemon, its command line, the local host (referee) and the match runner."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("perspecto")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
