"""Build the Cython extension modules of engine_ext (metadata lives in pyproject.toml)."""

from Cython.Build import cythonize
from setuptools import Extension, setup

EXTENSIONS = [
    Extension("engine_ext.core", ["engine_ext/core.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.strategic", ["engine_ext/strategic.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.knowledge", ["engine_ext/knowledge.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.evaluation", ["engine_ext/evaluation.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.chase.lookahead", ["engine_ext/chase/lookahead.pyx"], extra_compile_args=["-O3"]),
    Extension("engine_ext.search", ["engine_ext/search.pyx"], extra_compile_args=["-O3", "-fopenmp"],
              extra_link_args=["-fopenmp"]),
]

setup(
    ext_modules=cythonize(
        EXTENSIONS,
        compiler_directives={"language_level": "3", "embedsignature": True},
        annotate=False,
    ),
)
