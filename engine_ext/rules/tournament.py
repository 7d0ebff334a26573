"""The Computer Stratego Championship's limits, written once (the 2008 tournament page: "The maximum time
limit per move is 15 seconds. The average time per move should not exceed 5 seconds." and "At 2,000 moves,
a game will be declared a draw."). The host's defaults, the game options' defaults, the profiles' default
move times and the time manager (engine_ext/engine/timeman.py) all take them from here.
"""

from __future__ import annotations

MOVE_TIME_MAX = 15.0  # seconds for any one move
MOVE_TIME_AVERAGE = 5.0  # seconds a move on average over a game
MOVE_LIMIT = 2000  # plies; the game is a draw when it is reached
