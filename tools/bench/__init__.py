"""The benchmark of the apply semantics: `python -m tools.bench {run,growth,layout,all}` (see
docs/performance.md). Generates a DataWorks export and pre-existing silver tables with Spark SQL, runs the
real jobs on them and measures every phase: time, changes per second, CPU, peak memory, machine load."""
