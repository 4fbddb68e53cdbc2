"""The client's own figures, live, for Prometheus (``--prometheus-port``), and the server's and the
client's time series side by side in a level's record.

    figures   metric names, units, buckets; the totals from exact samples (pure)
    live      the process's collector, fed by Locust's request event and served over HTTP
    series    the server's /metrics readings and the client's figures at the same instants (pure)
"""

PURE = True  # the package's face: no network, files, clock or Locust here
