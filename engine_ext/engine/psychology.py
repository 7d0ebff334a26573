"""The psychological model of the Perspecto thesis (9.3): three fear variables and the move analysis.

``Py = P - P * psy`` lowers a known piece's chance against an unknown piece that has moved towards it
since it became known; the search applies it (engine_ext/engine/knowledge.pxd, ``attack_outcomes``) with
- ``own_fear``: our known piece against their unknown, in our view;
- ``est_own_fear``: the same confrontation in the opponent's view (our estimate of its estimate of us);
- ``est_opp_fear``: their known piece against our unknown, in the opponent's view.
The move analysis here updates ``est_opp_fear`` after every move.

Not in the thesis: the bluff rate (its 11.2 names "game-theoretic bluff rates" as future work).
ownFear assumes that an unknown piece which walks up to our known piece is strong; against an
opponent whose pieces walk forward whatever they are, that makes every known piece of ours flee
(bench/engine_match: Perspecto lost 11/5/24 to p-e-minimax with ownFear, won 21/6/13 without). So
ownFear is multiplied by a scale kept per opponent: each time a fight shows the rank of their piece
that had walked up to our known pieces while unknown to us, the scale falls by ``bluff_step`` if it is
weaker than the strongest of them (a bluff) and rises by it if it is not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from engine_ext.engine.knowledge import history_facts
from engine_ext.engine.settings import FearSettings
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, Rank, combat

# Squares of the core's mailbox: up, down, left, right are +stride, -stride, -1, +1.
_UNKNOWN = int(Rank.UNKNOWN)
_LIEUTENANT = int(Rank.LIEUTENANT)


def py_probability(p: float, psy: float) -> float:
    """The thesis's rule: the known piece's chance of winning, P, becomes P - P * psy."""
    return p - p * psy


def hold_back_threshold(p: float, gain: float, loss: float) -> float:
    """The ownFear from which a known piece should decline an attack that wins ``gain`` when the
    unknown piece next to it is harmless (combinatorial chance ``p``) and loses ``loss`` otherwise:
    the expected value p' * gain - (1 - p') * loss turns negative once p' = P - P * ownFear falls
    below loss / (gain + loss). The thesis's example: p = 0.97, +25, -70 gives 0.24."""
    need = loss / (gain + loss)
    return 1.0 - need / p


@dataclass
class MoveAnalysis:
    """The changes one move made to estOppFear (``delta``) and to ownFear's bluff scale, with the rule
    of each."""

    delta: float = 0.0
    events: list[str] = field(default_factory=list)


class Psychology:
    def __init__(self, settings: FearSettings, rng: random.Random) -> None:
        self.settings = settings
        self._rng = rng
        self._est_opp_fear = settings.est_opp_fear_start
        self._drawn = settings.own_fear_min  # ownFear before the bluff scale
        self._own_fear_scale = 1.0
        self._declined: set[tuple[int, int]] = set()
        self.redraw_own_fear()

    # The variables ---------------------------------------------------------------------------------

    @property
    def own_fear(self) -> float:
        return self._drawn * self._own_fear_scale

    def redraw_own_fear(self) -> float:
        """ownFear is a random value in [min, max] (the thesis draws it anew as the game goes),
        times the bluff scale (1 until an opponent is caught bluffing)."""
        s = self.settings
        self._drawn = self._rng.uniform(s.own_fear_min, s.own_fear_max)
        return self.own_fear

    @property
    def own_fear_scale(self) -> float:
        return self._own_fear_scale

    @own_fear_scale.setter
    def own_fear_scale(self, value: float) -> None:
        self._own_fear_scale = min(1.0, max(0.0, float(value)))

    @property
    def est_opp_fear(self) -> float:
        return self._est_opp_fear

    @est_opp_fear.setter
    def est_opp_fear(self, value: float) -> None:
        self._est_opp_fear = min(1.0, max(0.0, float(value)))

    @property
    def est_own_fear(self) -> float:
        """Fixed by configuration, or midway between ownFear and estOppFear (the thesis's default)."""
        if self.settings.est_own_fear is not None:
            return self.settings.est_own_fear
        return (self.own_fear + self._est_opp_fear) / 2.0

    def start_game(self, est_opp_fear: float | None = None, own_fear_scale: float | None = None) -> None:
        self._declined.clear()
        self.est_opp_fear = self.settings.est_opp_fear_start if est_opp_fear is None else est_opp_fear
        self.own_fear_scale = 1.0 if own_fear_scale is None else own_fear_scale
        self.redraw_own_fear()

    # The move analysis -----------------------------------------------------------------------------

    def analyze(self, before: Position, move: int, me: int,
                revealed: tuple[Rank | None, Rank | None] = (None, None)) -> MoveAnalysis:
        """Update estOppFear for ``move`` played from ``before`` (our view of the position just
        before it, the move's side to move), and the bluff scale when the move was a fight whose
        ranks ``revealed`` (attacker, defender) shows. Returns what changed and why."""
        out = MoveAnalysis()
        shown, pairs = history_facts(before)
        frm, to = move & 0xFF, move >> 8
        attacker = before.piece_id(frm)
        target = before.piece_id(to)
        if attacker < 0:
            return out
        mover_side = before.piece(attacker)[1]
        s = self.settings

        def known_high(pid: int) -> bool:
            # Their piece, known to us before this move, ranked above lieutenant.
            return pid in shown and _LIEUTENANT < before.piece(pid)[2] < int(Rank.BOMB)

        def unknown_moved(pid: int) -> bool:
            # Our piece, unknown to them before this move, that has moved.
            return pid not in shown and before.piece(pid)[3] > 0

        shown_attacker, shown_defender = revealed
        if target >= 0 and shown_attacker is not None and shown_defender is not None:
            self._bluff(out, before, attacker, target, me, shown, pairs, (shown_attacker, shown_defender))
        if mover_side == me:
            if target >= 0 and unknown_moved(attacker) and target in shown:
                self._apply(out, s.we_attack_with_unknown)
                out.events.append("we attack a known piece with an unknown moved piece: "
                                  f"{s.we_attack_with_unknown:+.2f}")
        else:
            if target >= 0 and before.piece(target)[1] == me and known_high(attacker) and unknown_moved(target):
                self._apply(out, s.opponent_attacks_unknown)
                out.events.append(f"their known {Rank(before.piece(attacker)[2]).label} attacks our unknown "
                                  f"moved piece: {s.opponent_attacks_unknown:+.2f}")
            stride = before.width + 2
            for pid in range(before.piece_count):
                sq, owner, _rank, _moved = before.piece(pid)
                if sq < 0 or owner == me or not known_high(pid):
                    continue
                for step in (stride, -stride, -1, 1):
                    nb = before.piece_id(sq + step)
                    if nb < 0 or before.piece(nb)[1] != me or not unknown_moved(nb):
                        continue
                    if (pid, nb) in self._declined or (attacker == pid and target == nb):
                        continue
                    self._declined.add((pid, nb))
                    self._apply(out, s.opponent_declines_attack)
                    out.events.append(f"their known {Rank(before.piece(pid)[2]).label} declines to attack "
                                      f"our unknown moved piece: {s.opponent_declines_attack:+.2f}")
        return out

    def _bluff(self, out: MoveAnalysis, before: Position, attacker: int, target: int, me: int, shown: set[int],
               pairs: set[tuple[int, int]], revealed: tuple[Rank, Rank]) -> None:
        """A fight shows the rank of their piece that had walked up to one or more of our known
        pieces while unknown to us (in this fight or any other): was that approach backed by
        strength (it wins or ties against the strongest piece it approached), or a bluff?"""
        step = self.settings.bluff_step
        theirs = target if before.piece(attacker)[1] == me else attacker
        # ``shown``, not the rank on ``before``: the fight's reveal is already written into the position.
        if step <= 0.0 or theirs in shown:
            return
        approached = [Rank(before.piece(o)[2]) for t, o in pairs if t == theirs and o in shown]
        if not approached:
            return
        strongest = max(approached)
        their_rank = revealed[1] if theirs == target else revealed[0]
        # As if their piece attacked ours: a tie counts as backed.
        backed = combat(their_rank, strongest) in (ATTACKER_WINS, BOTH_DIE)
        self.own_fear_scale += step if backed else -step
        word = "not a bluff" if backed else "a bluff"
        out.events.append(f"their {their_rank.label} that approached our known {strongest.label}: {word}, "
                          f"ownFear scale {self._own_fear_scale:.2f}")

    def _apply(self, out: MoveAnalysis, step: float) -> None:
        # Each rule moves estOppFear on its own, clamped to [0, 1] every time.
        old = self._est_opp_fear
        self.est_opp_fear = old + step
        out.delta += self._est_opp_fear - old
