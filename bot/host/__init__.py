"""The local host: the referee that pairs bots and plays their games, the match runner over it, the
board view.
"""
