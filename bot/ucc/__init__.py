"""The UCC 2012 adapters: a UCC program as an engine or an opponent, and Perspecto as a UCC player.
"""
