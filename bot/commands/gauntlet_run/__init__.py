"""The pieces of ``perspecto gauntlet`` (bot/commands/gauntlet.py: its arguments and ``main``), one a concern:

- ``opponents``: what to play, the opponents and the games against each;
- ``jobs``: one game, one job (``Clock``, ``GauntletJob``, ``GauntletOutcome``, ``play_gauntlet_job``), the run
  loop (``run_jobs``), the feeds' interface and the executors, slots and game ids;
- ``records``: the records a run leaves and reads back;
- ``referee_route``: the referee, the programs it runs and our wrapper; ``lab_route``: the lab's games;
- ``single_arm``: a single-arm run; ``paired_run``: a paired run (``--baseline``);
- ``tables``: the single-arm and paired tables and reports;
- ``cluster``: the games on a Dask cluster's workers (``--cluster``).
"""
