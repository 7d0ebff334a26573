"""The web view: a read-only page that watches the host's games live and replays records (docs/host.md)."""
