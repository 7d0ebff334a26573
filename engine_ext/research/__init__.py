"""Research tools beside the engine: the rank-value study and self-play.
"""
