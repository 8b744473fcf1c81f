"""Speed figures and counts, not tests: each module runs with ``python -m benchmarks.<name>``.

- :mod:`benchmarks.bench_companion` -- the torch rotary embedding and the attention biases
- :mod:`benchmarks.bench_contracts` -- the argument checks against pydantic and beartype
- :mod:`benchmarks.bench_figures` -- the figures' redraw times and the pages' weight in a browser
- :mod:`benchmarks.count_checks` -- argument checking versus math, by module
- :mod:`benchmarks.suite_time` -- the test suite's time by area, from pytest's JUnit report
"""
