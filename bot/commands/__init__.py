"""One module a CLI subcommand; each exposes ``register(subparsers)``."""
