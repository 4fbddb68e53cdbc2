"""Engine launchers (DESIGN.md, Contract 5): start with stated settings, refuse a busy port, wait
until healthy, read the version, keep the log, stop, and prove the port free. Every launcher can
dry-run: ``command()`` is exactly what it would execute."""
