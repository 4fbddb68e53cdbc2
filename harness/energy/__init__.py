"""Power and energy, each source behind one interface, and the words ``--telemetry`` takes.

    detect.detect(spec, where) -> Detection     which sources read this machine; one line for each absent
    sources.base.Source.read() -> Reading       one device read once (readings.Reading)
    sampler.TelemetrySampler(sources, interval) every source read off the load loop while a level runs
    sampler.idle_baseline(sources, seconds)     a short reading before the first level
    meter                                       the above for one sweep, search, measurement or Locust run

Sources: ``nvml`` (nvidia-ml-py), ``amdsmi`` (AMD's bindings), ``hwmon`` (amdgpu's sysfs files),
``rapl`` (powercap), ``powermetrics`` (Apple silicon); ``practice`` is the practice server's
imitation, read only when named. The arithmetic (``arithmetic``), a record's parts
(``record_part``) and the tables are pure; this package's face is pure too, so importing them
loads no source."""

PURE = True  # no network, files, clock or Locust here: tests/unit/test_house.py checks it

KINDS = ("nvml", "amdsmi", "hwmon", "powermetrics", "rapl")
IMITATIONS = ("practice",)  # read only when named: never by auto
WORDS = ("auto", "none", *KINDS, *IMITATIONS)
