"""GradBench's `jax` tool with every timed call waiting for its result.

GradBench's jax tool times `f(input)` for a jitted `f` and does not wait for the
result; JAX dispatches CPU work asynchronously, so those timings can be the dispatch
alone. This launcher wraps the functions that `gradbench.wrap.function` and
`gradbench.wrap.multiple_runs` time in `jax.block_until_ready` before the tool imports
its eval modules, then runs the tool unchanged.

Run from the root of a GradBench checkout with PYTHONPATH=python/gradbench:
    python jax_blocking.py [--multithreaded]
"""

import runpy
import sys
from pathlib import Path

import jax
from gradbench import wrap


def _blocking(fn):
    return lambda x: jax.block_until_ready(fn(x))


def _wrap(decorator_factory):
    def factory(**kwargs):
        decorate = decorator_factory(**kwargs)
        return lambda fn: decorate(_blocking(fn))

    return factory


wrap.multiple_runs = _wrap(wrap.multiple_runs)
wrap.function = _wrap(wrap.function)

tool = Path("python/gradbench/gradbench/tools/jax/run.py").resolve()
sys.path.insert(0, str(tool.parent))  # the tool imports its eval modules by name
sys.argv = [str(tool), *sys.argv[1:]]
runpy.run_path(str(tool), run_name="__main__")
