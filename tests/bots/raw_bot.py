"""A misbehaving bot for the host's end-to-end tests, speaking the raw protocol (a socket and json).

    python tests/bots/raw_bot.py PORT MODE [--token T]

It plays a fixed legal classic setup and then misbehaves as MODE says:
- ``illegal_move``: its first move moves its flag;
- ``timeout``: it never answers getAIMove;
- ``disconnect``: it closes the connection when asked for a move;
- ``bad_setup``: both of its setups have an unknown rank;
- ``bad_setup_once``: its first setup has two flags, its second is legal; then it moves its flag.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from typing import Any

COUNTS = {
    "flag": 1, "bomb": 6, "spy": 1, "scout": 8, "miner": 5, "sergeant": 4, "lieutenant": 4, "captain": 4,
    "major": 3, "colonel": 2, "general": 1, "marshal": 1,
}


def legal_setup(colour: str) -> dict[str, str]:
    """The flag on the back row's first square, then the rest in order: the front row is all officers."""
    rows = [1, 2, 3, 4] if colour == "red" else [10, 9, 8, 7]
    squares = [f"{col}{row}" for row in rows for col in "ABCDEFGHIJ"]
    ranks = [rank for rank, n in COUNTS.items() for _ in range(n)]
    return dict(zip(squares, ranks, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("mode", choices=["illegal_move", "timeout", "disconnect", "bad_setup", "bad_setup_once"])
    parser.add_argument("--token")
    args = parser.parse_args()

    sock = socket.create_connection(("127.0.0.1", args.port), timeout=60)
    stream = sock.makefile("rwb")

    def send(message: dict[str, Any]) -> None:
        stream.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        stream.flush()

    send({"id": 1, "method": "hello",
          "params": {"name": f"raw-{args.mode}", "version": "0", "protocol": "1.0", "token": args.token}})
    colour = "red"
    setups_made = 0
    for line in stream:
        message = json.loads(line)
        method = message.get("method")
        if method is None or method == "gameOver":
            continue
        if method == "goodbye":
            return 0
        params = message.get("params", {})
        result: dict[str, Any] = {}
        if method == "setGameOption" and params["option"] == "colour":
            colour = params["value"]
        elif method == "createAISetup":
            setups_made += 1
        elif method == "getAISetupPiece":
            setup = legal_setup(colour)
            rank = setup.get(params["square"])
            if args.mode == "bad_setup" and rank == "marshal":
                rank = "dragon"
            if args.mode == "bad_setup_once" and setups_made == 1 and rank == "spy":
                rank = "flag"
            result = {"rank": rank}
        elif method == "getAIMove":
            if args.mode == "timeout":
                time.sleep(60)
                return 0
            if args.mode == "disconnect":
                sock.close()
                return 0
            # The flag stands on A1 (red) or A10 (blue): flags never move.
            result = {"from": "A1", "to": "A2"} if colour == "red" else {"from": "A10", "to": "A9"}
        send({"id": message["id"], "result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
