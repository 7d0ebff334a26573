"""The tables and reports, read back from the records: a single-arm run's per-opponent table and failures, a
paired run's difference, failures and verdict."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.commands.gauntlet_run.jobs import game_id
from bot.commands.gauntlet_run.paired_run import PairedPlan, opponent_labels, replay_schedule
from bot.safe_text import terminal_safe
from bot.tables import print_table
from engine_ext.lab.analysis import GameAnalysis
from engine_ext.lab.game_events import ReplayError
from engine_ext.lab.gauntlet import (
    FAILURES,
    AnalysedGame,
    GauntletGame,
    OpponentSummary,
    Rate,
    analyse_gauntlet_record,
    failure_rates,
    gauntlet_game,
    summarise_gauntlet,
    total,
)
from engine_ext.lab.paired import (
    ARMS,
    Arm,
    PairedEstimate,
    PairedSchedule,
    paired_rate_difference,
    pentanomial,
    pooled_estimate,
    stratified_estimate,
    unpaired_slots,
)
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord


def analyse(paths: Sequence[Path], console: Console) -> list[AnalysedGame]:
    """Every record analysed; a game that ended at the setup (no moves, a forfeit) has nothing to replay and
    counts with its result alone; a record that cannot be read or replayed is named and left out."""
    out = []
    for path in paths:
        try:
            record = GameRecord.load(path)
            if not record.moves and (record.result or {}).get("forfeits"):
                out.append(AnalysedGame(GameAnalysis(
                    game_id=record.game_id, players={Side.RED: record.red.name, Side.BLUE: record.blue.name},
                    result=record.result, plies=0, fates=[], flags=[], chases=[])))
            else:
                out.append(analyse_gauntlet_record(record))
        except (OSError, ValueError, KeyError, ReplayError) as exc:
            # A file's name and a replay's complaint may quote what the file holds (a move, a reason).
            console.print(f"[red]{terminal_safe(str(path))}: left out: {terminal_safe(str(exc))}[/red]",
                          highlight=False, soft_wrap=True)
    return out


def _counts(counter: Any) -> str:
    return ", ".join(f"{k} {n}" for k, n in counter.most_common()) or "-"


def _score(summary: OpponentSummary) -> str:
    interval = summary.interval
    if interval is None:
        return "-"
    return f"{100 * interval.score:.0f} % [{100 * interval.low:.0f}, {100 * interval.high:.0f}]"


def _plies(summary: OpponentSummary) -> str:
    plies = summary.plies
    if not plies:
        return "-"
    return f"{plies[len(plies) // 2]} ({plies[0]}-{plies[-1]})"


def gauntlet_table(summaries: dict[str, OpponentSummary], ours: str) -> Table:
    table = Table(title=f"{terminal_safe(ours)}: the gauntlet")
    for column in ("opponent", "games", "W / D / L", "score [95 %]", "forfeits us / them", "stopped",
                   "plies: median (range)", "losses: how", "our marshal/general in lost games",
                   "taken in our half (run)", "attacks lost for certain"):
        table.add_column(column, overflow="fold")
    rows = [*summaries.values(), total(summaries.values())]
    for summary in rows:
        t = summary.trinomial
        # The opponent's name is the record's, which a program or a file's author chose.
        table.add_row(terminal_safe(summary.opponent), str(t.games), f"{t.wins} / {t.draws} / {t.losses}",
                      _score(summary),
                      f"{summary.forfeits_ours} / {summary.forfeits_theirs}", str(summary.stopped), _plies(summary),
                      terminal_safe(_counts(summary.loss_causes)), _counts(summary.top_losses_in_lost_games),
                      f"{summary.taken_in_half} ({summary.longest_raid})", str(summary.hopeless_attacks))
    return table


def _rate(rate: Rate | None) -> str:
    return "-" if rate is None else str(rate)


def failures_table(summaries: dict[str, OpponentSummary], ours: str) -> Table:
    """Every game's failures per 100 games with the 95 % interval (engine_ext/lab/gauntlet.py, FAILURES)."""
    table = Table(title=f"{terminal_safe(ours)}: failures per 100 games [95 %], over all games")
    table.add_column("opponent")
    table.add_column("games")
    for name, _once in FAILURES:
        table.add_column(name, overflow="fold")
    table.add_column("longest run taken in our half")
    for summary in [*summaries.values(), total(summaries.values())]:
        rates = failure_rates(summary.games)
        table.add_row(terminal_safe(summary.opponent), str(len(summary.games)),
                      *(_rate(rates[name]) for name, _once in FAILURES),
                      str(summary.longest_raid))
    return table


def report(paths: Sequence[Path], ours: str, console: Console, *, seconds: float | None = None,
           settings: dict[str, Any] | None = None, json_path: Path | None = None) -> int:
    games = analyse(paths, console)
    summaries = summarise_gauntlet(games, ours)
    if not summaries:
        console.print(f"[red]no games of {terminal_safe(repr(ours))} among the {len(paths)} records[/red]",
                      highlight=False)
        return 1
    print_table(console, gauntlet_table(summaries, ours))
    print_table(console, failures_table(summaries, ours))
    played = sum(len(s.games) for s in summaries.values())
    rate = None
    if seconds:
        rate = played / seconds * 3600
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        console.print(f"{played} games in {seconds / 60:.1f} min: {rate:.1f} games/hour "
                      f"(load average now {load})", highlight=False)
    if json_path is not None:
        everything = total(summaries.values())
        data = {"ours": ours, "settings": settings or {}, "seconds": seconds, "games_per_hour": rate,
                "opponents": [s.to_json() for s in summaries.values()], "all": everything.to_json()}
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _difference(estimate: PairedEstimate | None) -> str:
    if estimate is None:
        return "-"
    return f"{_points(estimate.mean)} [{_points(estimate.low)}, {_points(estimate.high)}]"


def _mean_score(scores: Sequence[float]) -> str:
    return f"{100 * sum(scores) / len(scores):.0f} %" if scores else "-"


def paired_table(plan: PairedPlan, schedule: PairedSchedule) -> tuple[Table, dict[str, Any]]:
    strata = schedule.strata()
    cand, base = schedule.arm_scores("candidate"), schedule.arm_scores("baseline")
    # The arms' and opponents' names are the plan's (DIR/paired.json: a file, which anyone may have written).
    table = Table(title=f"paired: {terminal_safe(plan.candidate.name)} - {terminal_safe(plan.baseline.name)}, "
                  "points of score per game [95 %]")
    for column in ("opponent", "slots", "pairs", terminal_safe(plan.candidate.name), terminal_safe(plan.baseline.name),
                   "pairs -1 / -½ / 0 / +½ / +1", "difference [95 %]"):
        table.add_column(column, overflow="fold")
    played = {name: len({n for (o, n, _arm) in schedule.scores if o == name}) for name in strata}
    rows: list[dict[str, Any]] = []
    for name, differences in strata.items():
        estimate = pooled_estimate(differences)
        counts = pentanomial(differences).counts
        table.add_row(terminal_safe(name), str(played[name]), str(len(differences)), _mean_score(cand[name]),
                      _mean_score(base[name]), " / ".join(map(str, counts)), _difference(estimate))
        rows.append({"opponent": name, "slots": played[name], "pairs": len(differences),
                     "candidate_score": sum(cand[name]) / len(cand[name]) if cand[name] else None,
                     "baseline_score": sum(base[name]) / len(base[name]) if base[name] else None,
                     "pentanomial": list(counts), "difference": None if estimate is None else estimate.to_json()})
    everything = [d for ds in strata.values() for d in ds]
    stratified, pooled = stratified_estimate(strata), pooled_estimate(everything)
    all_cand = [s for ss in cand.values() for s in ss]
    all_base = [s for ss in base.values() for s in ss]
    table.add_row("all: opponents weighed equally", str(sum(played.values())), str(len(everything)),
                  _mean_score(all_cand), _mean_score(all_base), " / ".join(map(str, pentanomial(everything).counts)),
                  _difference(stratified))
    table.add_row("all: pooled by slots", "", "", "", "", "", _difference(pooled))
    data = {"opponents": rows, "stratified": None if stratified is None else stratified.to_json(),
            "pooled": None if pooled is None else pooled.to_json(), "pairs": len(everything)}
    return table, data


def paired_failures_table(plan: PairedPlan, schedule: PairedSchedule,
                          games: dict[tuple[Arm, str, int], GauntletGame]) -> tuple[Table, dict[str, Any]]:
    """Failures per 100 games of each arm (all its games with a record) and their paired difference (complete
    pairs)."""
    by_arm = {arm: [g for (a, _o, _n), g in games.items() if a == arm] for arm in ARMS}
    rates = {arm: failure_rates(by_arm[arm]) for arm in ARMS}
    pairs = [(games[("candidate", o, n)], games[("baseline", o, n)])
             for (a, o, n) in games if a == "candidate" and ("baseline", o, n) in games]
    table = Table(title="failures per 100 games [95 %], over all games")
    for column in ("failure", f"{terminal_safe(plan.candidate.name)} ({len(by_arm['candidate'])} games)",
                   f"{terminal_safe(plan.baseline.name)} ({len(by_arm['baseline'])} games)",
                   f"difference ({len(pairs)} pairs)"):
        table.add_column(column, overflow="fold")
    data: dict[str, Any] = {}
    for name, _once in FAILURES:
        difference = paired_rate_difference([c.failures[name] - b.failures[name] for c, b in pairs])
        diff_text = "-" if difference is None else (f"{difference.per_100:+.1f} [{difference.low:+.1f}, "
                                                    f"{difference.high:+.1f}]")
        table.add_row(name, _rate(rates["candidate"][name]), _rate(rates["baseline"][name]), diff_text)
        data[name] = {arm: None if (rate := rates[arm][name]) is None else rate.to_json() for arm in ARMS}
        data[name]["difference"] = None if difference is None else difference.to_json()
    runs = {arm: max((g.longest_raid for g in by_arm[arm]), default=0) for arm in ARMS}
    table.add_row("longest run taken in our half", str(runs["candidate"]), str(runs["baseline"]), "")
    data["longest_run_taken_in_our_half"] = runs
    return table, data


def paired_report(plan: PairedPlan, records: Path, console: Console, *, seconds: float | None = None,
                  json_path: Path | None = None, interrupted: bool = False) -> int:
    """The paired verdict from the records in ``records`` (the schedule played again from them)."""
    labels = opponent_labels(plan)
    schedule = replay_schedule(plan, labels, records)
    games: dict[tuple[Arm, str, int], GauntletGame] = {}
    for arm in ARMS:
        spec = plan.arm(arm)
        for round_ in schedule.rounds:
            for slot in round_:
                path = records / f"{game_id(spec.name, slot.opponent, slot.number)}.json"
                if path.is_file():
                    for analysed in analyse([path], console):
                        game = gauntlet_game(analysed, spec.name)
                        if game is not None:
                            games[(arm, slot.opponent, slot.number)] = game
    if not games:
        console.print(f"[red]no games of {terminal_safe(repr(plan.candidate.name))} or "
                      f"{terminal_safe(repr(plan.baseline.name))} in {terminal_safe(str(records))}[/red]",
                      highlight=False)
        return 1
    table, verdict = paired_table(plan, schedule)
    print_table(console, table)
    failures, failure_data = paired_failures_table(plan, schedule, games)
    print_table(console, failures)
    strata = schedule.strata()
    stratified = stratified_estimate(strata)
    sprt_data: dict[str, Any] | None = None
    if schedule.sprt is not None:
        sprt = schedule.sprt
        everything = [d for ds in strata.values() for d in ds]
        llr = sprt.llr(strata)
        pooled_llr = sprt.pooled_llr(everything)
        decided = (f"{schedule.verdict} accepted after {schedule.decided_at} pairs" if schedule.verdict else
                   "no verdict")
        console.print(f"SPRT {sprt} (stratified GSPRT, bounds [{sprt.spec.lower:.2f}, {sprt.spec.upper:.2f}]): "
                      f"{decided}; LLR now {llr:.2f} on {len(everything)} pairs (pooled pentanomial LLR "
                      f"{pooled_llr:.2f})", highlight=False, soft_wrap=True)
        sprt_data = {"spec": str(sprt), "lower": sprt.spec.lower, "upper": sprt.spec.upper,
                     "verdict": schedule.verdict, "decided_at_pairs": schedule.decided_at, "llr": llr,
                     "pooled_pentanomial_llr": pooled_llr}
    unpaired = unpaired_slots(schedule.arm_scores("candidate"), schedule.arm_scores("baseline"), strata)
    if unpaired is not None and stratified is not None:
        console.print(f"an unpaired run (each arm its own games, the same allocation) would need about "
                      f"{unpaired:.0f} slots for this interval's width ({unpaired / stratified.pairs:.2f} times "
                      f"the {stratified.pairs} pairs)", highlight=False, soft_wrap=True)
    played = len(games)
    if seconds:
        console.print(f"{played} games in the records; this run took {seconds / 60:.1f} min", highlight=False)
    if json_path is not None:
        data = {"plan": {**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)},
                         "candidate": plan.candidate.to_json(), "baseline": plan.baseline.to_json()},
                "seconds": seconds, "interrupted": interrupted, "games": played, **verdict, "sprt": sprt_data,
                "unpaired_slots_for_the_same_width": unpaired, "failures_per_100": failure_data}
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0
