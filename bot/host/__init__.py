"""The local host: the referee that pairs bots and plays their games, what strangers may cost it (per address),
the match runner over it, the board view.
"""
