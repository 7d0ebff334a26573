"""The engine: knowledge, psychology, evaluation, the search and the strategic search, time, settings,
the facade and the plain reference search.

The search's threads (``threads`` > 1, the perspecto profile's one a core) are OpenMP's (libgomp). By default
a libgomp thread that waits (at the end of each iteration's share of the root moves, and between
iterations) spins on its core. On a machine whose cores are busy with other work, the spinning threads and
the thread with work left take turns on the cores, so every iteration costs scheduler time slices, and the
iterative deepening's forecast (engine_ext/engine/search.pyx ``iterate``) reads that cost as growth and
stops: with both cores of the two-core machine busy, moves of 1 s stopped at depth 1 or 2 after 12 to 400
nodes where one thread reached depth 7 (issue 31; docs/ucc.md). Waiting threads that sleep instead cost a
wake-up (microseconds) an iteration on an idle machine and restore the depth on a busy one, so this package
asks for them before the search's library is loaded (libgomp reads the setting once, when it loads).
An ``OMP_WAIT_POLICY`` set in the environment is left as it is.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
