"""The position suite (issue 44): positions from our lost and drawn games, each with what the engine must or
must not play there (docs/lab.md, "The position suite").

``view``: a side's view of a recorded game at a ply, as the bot kept it; ``knowledge``: what that side knew;
``predicates``: the named rules a move is judged by; ``entries``: the suite file; ``extract``: proposing
entries from records; ``run``: asking the engine and scoring the suite.
"""
