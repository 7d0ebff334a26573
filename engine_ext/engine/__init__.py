"""The engine: knowledge, psychology, evaluation, the search and the strategic search, time, settings,
the facade and the plain reference search.
"""
