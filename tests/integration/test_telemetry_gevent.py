"""The telemetry sampler under gevent's monkey-patching (as in every Locust run): its reads run
on a native thread, never as a greenlet of the hub that stamps the load's tokens. A fresh process,
since patching is for the whole process; the check is which native thread read, not a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

CODE = """
from gevent import monkey
monkey.patch_all()
import json, time
from gevent.monkey import get_original
from harness.energy.readings import Reading
from harness.energy.sampler import TelemetrySampler
native_ident = get_original("_thread", "get_ident")
seen = []

class Source:
    kind, device = "fake", "thread-check"
    def read(self):
        seen.append(native_ident())
        return Reading(self.kind, self.device, time.monotonic(), power_w=1.0)
    def close(self):
        pass

sampler = TelemetrySampler([Source()], interval=0.01)
sampler.start()
time.sleep(0.1)
sampler.stop()
main = native_ident()
print(json.dumps({"on_thread": sum(1 for s in seen if s != main), "reads": len(seen)}))
"""


def test_the_sampler_reads_on_a_native_thread_under_gevent():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    counts = json.loads(out.stdout)
    # start() and stop() read once each on the caller's thread; every read between is the sampler's
    assert counts["on_thread"] == counts["reads"] - 2 and counts["on_thread"] >= 1
