"""Build the Cython extension modules of engine_ext (metadata lives in pyproject.toml)."""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

# Cython's translations and the C compiles run side by side, one a core (they are most of a fresh
# install's time).
JOBS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

EXTENSIONS = [
    Extension("engine_ext.rules.core", ["engine_ext/rules/core.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.engine.strategic", ["engine_ext/engine/strategic.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.engine.knowledge", ["engine_ext/engine/knowledge.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.engine.evaluation", ["engine_ext/engine/evaluation.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.chase.lookahead", ["engine_ext/chase/lookahead.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.engine.search", ["engine_ext/engine/search.pyx"], extra_compile_args=["-O3", "-fopenmp"],
              extra_link_args=["-fopenmp"]),
]

setup(
    ext_modules=cythonize(
        EXTENSIONS,
        compiler_directives={"language_level": "3", "embedsignature": True},
        annotate=False,
        nthreads=JOBS,
    ),
    options={"build_ext": {"parallel": JOBS}},
)
