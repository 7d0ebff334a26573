"""The rules of Stratego: the compiled core, the game facade, rulesets, notation, records and the plain
reference rules.
"""
