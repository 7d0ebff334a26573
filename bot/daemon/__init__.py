"""The bot daemon: the client of the wire protocol, the daemon that runs it, its journal, what it
learns and stores, its health.
"""
