"""Many runs laid beside each other (``harness compare``): the headline figures of each, the curves
overlaid, differences called only beyond the runs' own spread, unlike runs refused.

    runs.read_runs(named, labbook) -> runs        what the command line names, read
    sets.sets(runs) -> [RunSet]                   comparable sets, and why a set stands apart
    figures.headline_rows / figures.calls         each run's headline; its figures against the reference
    page.write_comparison(...) -> Written         compare.md, compare.html and the charts

``sets`` and ``figures`` are pure; ``runs`` reads notebooks and ``page`` writes the files."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it
