"""Beliefs: what every hidden piece probably is (issue 22; docs/engine.md "Beliefs").

``BeliefModel`` (model.py) is the entry point; prior.py holds the start-square statistics, evidence.py
the likelihood tables, events.py the behaviours read from a game's history, fit.py the fitting of the
tables from lab records and calibration.py the measurement.
"""

from engine_ext.beliefs.model import MAX_PIECES, BeliefModel, balance
from engine_ext.beliefs.prior import SetupLearner

__all__ = ["MAX_PIECES", "BeliefModel", "SetupLearner", "balance"]
