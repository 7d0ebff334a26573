"""The ``--web`` option the commands share (light: the commands import it before deciding to serve)."""

from __future__ import annotations

import argparse

from protocol.tcp import parse_address

DEFAULT_WEB_ADDRESS = "127.0.0.1:8080"


def parse_web_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or a bare ``PORT`` (on 127.0.0.1)."""
    return parse_address(text, default_host="127.0.0.1")


def _web_address(text: str) -> str:
    parse_web_address(text)  # argparse turns the ValueError into a usage error
    return text


def add_web_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--web", nargs="?", const=DEFAULT_WEB_ADDRESS, metavar="HOST:PORT", type=_web_address,
        help=f"serve a read-only web page of {what} (default address {DEFAULT_WEB_ADDRESS}; a bare PORT is on "
        "127.0.0.1; port 0 takes a free one). Whoever reaches the address sees the games: docs/host.md",
    )
