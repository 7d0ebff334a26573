"""The rules of Stratego (compiled core plus a typed facade) and, in later modules, the engine.

Import the facade: ``from engine_ext.rules.game import Game, RulesOptions, Move``.
"""
