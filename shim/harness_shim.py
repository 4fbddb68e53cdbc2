#!/usr/bin/env python3
"""The host-side shim: starts native engines for a harness that runs in a container.

Metal llama-server, mlx_lm.server and Lemonade cannot run inside a container, so a containerised
harness asks this small server on the host to start them. It is one file, the standard library
only, and runs on the host's system ``python3`` (3.9 and newer: macOS's is 3.9).

    python3 shim/harness_shim.py serve --allow runs/shim/allow.json --library ~/models

What it may start is fixed when it starts: the allow-list file (written by ``harness shim-allow``
from a plan's engine definitions) names each engine's program, its argument templates and the
settings a request may give, with each setting's check (a whole number in a range, one of some
words, a yes/no, a path under the model library, a plain word). A request names an engine and
values for its declared settings, nothing else; every value is checked and the command line is
an argument list, never a shell.

It also answers one macOS ``powermetrics`` sample a request (``GET /v1/power``) when the
allow-list names ``powermetrics`` and the shim runs as root (``sudo``): powermetrics needs root, and
the shim is the host-side process that can have it. The argument list is the shim's own (the CPU
and GPU power samplers, one property-list sample of a bounded window); a request gives only the
window's length. Otherwise the route refuses with the reason, never a figure.

It binds the address the containers reach (``--bind auto``: the Docker bridge's gateway on Linux,
127.0.0.1 on macOS, where Docker Desktop's host.docker.internal reaches the host's loopback),
never 0.0.0.0 unless ``--allow-any-address``. Every request needs the bearer token that it writes
at start to a file only its user can read (0600). It logs one line per request and stops every
engine it started when it stops.

The API (JSON; every route needs ``Authorization: Bearer <token>``):

    GET  /v1/health                  the shim's version, pid and address
    GET  /v1/engines                 the allow-list: each engine, its settings, whether it runs
    POST /v1/engines/NAME/start      {"settings": {...}}: start it; 400 a bad or undeclared setting
    GET  /v1/engines/NAME            running, pid, exit status, resident memory (MB), health
    GET  /v1/engines/NAME/log?offset=N   its log from byte N (text; X-Log-Size: its size)
    GET  /v1/engines/NAME/version    its version command's answer
    GET  /v1/engines/NAME/devices    its device listing (llama-server --list-devices), for the preflight
    POST /v1/engines/NAME/stop       stop it (TERM, then KILL) and say whether its port is free
    GET  /v1/memory                  the host's memory (/proc/meminfo; vm_stat on macOS)
    GET  /v1/host                    the host's facts for a harness in a container: system, machine,
                                     name, memory and swap, and the answers of a fixed list of
                                     read-only commands (vm_stat, sysctl hw.memsize ...; HOST_COMMANDS)
    GET  /v1/power?interval_ms=500   one powermetrics sample of that window (100..5000 ms) as its
                                     property-list output; 403 when not allow-listed or not root

An engine not in the allow-list answers 403; a missing or wrong token 401.
"""

import argparse
import collections
import contextlib
import hmac
import ipaddress
import json
import os
import platform
import queue
import re
import secrets
import selectors
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

VERSION = "1"
ALLOW_SCHEMA = 1
DEFAULT_PORT = 8790
MAX_BODY = 64 * 1024
MAX_HEAD = 64 * 1024  # the request line and headers of one request, together
# The shim's limits under load, each with the flag of serve that changes it (declared once here).
LIMITS = {
    "header_s": 5.0,  # a request's line and headers must be whole this long after it may start
    "body_s": 10.0,  # its body, once the head is read
    "connections": 1024,  # open at once, from every address (fewer where open files are fewer)
    "per_address": 32,  # open at once from one client address
    "workers": 16,  # requests answered at once, a thread each
}
LIMIT_FLAGS = (
    ("--header-timeout", "header_s", float, "seconds for a request's line and headers"),
    ("--body-timeout", "body_s", float, "seconds for a request's body"),
    (
        "--max-connections",
        "connections",
        int,
        "connections open at once; past it the oldest unfinished is dropped",
    ),
    ("--max-per-address", "per_address", int, "connections open at once from one client address"),
    ("--workers", "workers", int, "requests answered at once (a thread each)"),
)
# A route: letters, digits, . _ - and /, no %-escape, at most 200 characters (dot segments refused).
ROUTE = re.compile(r"^/[A-Za-z0-9._/-]{0,200}$")
OFFSET = re.compile(r"^[0-9]{1,19}$")
# A word value: letters, digits and . _ : @ + = , - (no slash, no space, nothing a shell reads).
WORD = re.compile(r"^[A-Za-z0-9._:@+=,-]{0,200}$")
# A path value: the same, plus / and spaces; its '..' parts are refused before it is resolved.
PATH = re.compile(r"^[A-Za-z0-9._:@+=,/ -]{1,1000}$")
INTERVAL = re.compile(r"^[0-9]{1,5}$")
KINDS = ("int", "choice", "bool", "path", "word")
FILLS = ("bind", "log", "log_dir")  # what the shim itself puts in a setting
_FORMATTER = string.Formatter()


class ShimError(Exception):
    """A request the shim refuses: ``status`` is the HTTP status, the message says why."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Refused(ShimError):
    def __init__(self, message):
        super().__init__(400, message)


# -- the allow-list ------------------------------------------------------------------------------


def load_allow_list(path):
    """The allow-list file, checked: SystemExit with a one-line reason when it is not usable."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise SystemExit(
            "harness_shim: cannot read the allow-list {}: {}; write it with "
            "`harness shim-allow` (or make shim)".format(path, exc.strerror)
        ) from None
    except ValueError:
        raise SystemExit(
            "harness_shim: {} is not JSON; write it again with `harness shim-allow`".format(path)
        ) from None
    if not isinstance(data, dict) or data.get("schema_version") != ALLOW_SCHEMA:
        raise SystemExit(
            "harness_shim: {} is not an allow-list of version {}; write it again "
            "with `harness shim-allow`".format(path, ALLOW_SCHEMA)
        )
    engines = data.get("engines")
    if not isinstance(engines, dict) or not engines:
        raise SystemExit(
            "harness_shim: {} names no engine; its plan has no block with launcher: shim".format(path)
        )
    for name, spec in engines.items():
        problem = _spec_problem(spec)
        if problem:
            raise SystemExit("harness_shim: {}: engine {}: {}".format(path, name, problem))
        _find_program(spec)
    power = data.get("powermetrics")
    if power is not None:
        problem = _power_problem(power)
        if problem:
            raise SystemExit("harness_shim: {}: powermetrics: {}".format(path, problem))
        _find_program(power)
    return data


def _power_problem(spec):
    """The allow-list's ``powermetrics`` entry names its program only: the shim sets the arguments."""
    head = spec.get("argv_head") if isinstance(spec, dict) else None
    if not isinstance(head, list) or len(head) != 1 or not isinstance(head[0], str):
        return 'must be {"argv_head": ["powermetrics"]} (the program only; the shim sets its arguments)'
    if os.path.basename(head[0]) != "powermetrics" or (not os.path.isabs(head[0]) and "/" in head[0]):
        return "its program {!r} must be powermetrics, by an absolute path or on PATH".format(head[0])
    return None


def _find_program(spec):
    """A program named without a path (mlx_lm.server) is looked up on PATH once, at start, and
    fixed; one not found leaves the engine listed but not startable (``missing``)."""
    program = spec["argv_head"][0]
    if os.path.isabs(program):
        return
    found = shutil.which(program)
    if found:
        spec["argv_head"][0] = found
    else:
        spec["missing"] = "{} is not on this host's PATH; install it, then start the shim again".format(
            program
        )


def _spec_problem(spec):
    if not isinstance(spec, dict):
        return "not an object"
    head = spec.get("argv_head")
    if not isinstance(head, list) or not head or not all(isinstance(x, str) for x in head):
        return "argv_head must be a list of words (the program first)"
    if not os.path.isabs(head[0]) and "/" in head[0]:
        return "its program {!r} must be an absolute path or a name on PATH".format(head[0])
    for name, rule in spec.get("settings", {}).items():
        if not isinstance(rule, dict) or rule.get("kind") not in KINDS:
            return "setting {}: kind must be one of {}".format(name, ", ".join(KINDS))
    for name, what in spec.get("fills", {}).items():
        if what not in FILLS:
            return "fill {}: must be one of {}".format(name, ", ".join(FILLS))
    return None


# -- checking a request's values -----------------------------------------------------------------


def _inside(path, root):
    root = os.path.realpath(root)
    return os.path.commonpath([path, root]) == root


def check_path(name, value, library):
    """A path under the model library (a relative one is read against it), resolved; Refused else."""
    if not isinstance(value, str) or not PATH.match(value):
        raise Refused(
            "setting {}: {!r} is not a plain path (letters, digits, . _ - / and spaces only)".format(
                name, value
            )
        )
    if ".." in value.split("/"):
        raise Refused(
            "setting {}: {!r} climbs out with '..'; give a path under {}".format(name, value, library)
        )
    full = os.path.realpath(os.path.join(library, value))
    if not _inside(full, library):
        raise Refused(
            "setting {}: {} is outside the model library {}; put the model there".format(name, value, library)
        )
    if not os.path.exists(full):
        raise Refused("setting {}: {} does not exist; download the model first".format(name, full))
    return full


def _check_int(name, value, rule):
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and re.match(r"^-?[0-9]{1,12}$", value):
            value = int(value)
        else:
            raise Refused("setting {}: {!r} is not a whole number".format(name, value))
    lo, hi = rule.get("min"), rule.get("max")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise Refused("setting {}: {} is outside {}..{}".format(name, value, lo, hi))
    return value


def check_value(name, value, rule, library):
    """One declared setting's value, checked against its rule; Refused (400) with the reason."""
    if value is None:
        if rule.get("null"):
            return None
        raise Refused("setting {}: a value is required".format(name))
    kind = rule["kind"]
    if kind == "int":
        return _check_int(name, value, rule)
    if kind == "bool":
        if not isinstance(value, bool):
            raise Refused("setting {}: {!r} is not true or false".format(name, value))
        return value
    if kind == "choice":
        if str(value) not in [str(c) for c in rule.get("choices", [])]:
            raise Refused(
                "setting {}: {!r} is not one of {}".format(
                    name, value, ", ".join(str(c) for c in rule.get("choices", []))
                )
            )
        return str(value)
    if kind == "path":
        return check_path(name, value, library)
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not WORD.match(str(value)):
        raise Refused(
            "setting {}: {!r} is not a plain word (letters, digits and . _ : @ + = , - only)".format(
                name, value
            )
        )
    return str(value)


def check_settings(spec, given, library):
    """The request's settings over the allow-list's defaults; Refused for any not declared."""
    if not isinstance(given, dict):
        raise Refused("settings must be an object of name: value")
    declared = spec.get("settings", {})
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise Refused(
            "setting {} is not declared for this engine; it may take {}".format(
                ", ".join(unknown), ", ".join(sorted(declared)) or "none"
            )
        )
    values = {}
    for name, rule in declared.items():
        value = given[name] if name in given else rule.get("default")
        values[name] = check_value(name, value, rule, library)
    return values


# -- the command line ----------------------------------------------------------------------------


def _empty(value):
    return value is None or value == "" or value is False


def _names(template):
    return [f for _, f, _, _ in _FORMATTER.parse(str(template)) if f]


def _fill(template, settings):
    try:
        return str(template).format_map(settings)
    except (KeyError, IndexError, AttributeError) as exc:
        raise ShimError(
            500, "the allow-list's template {!r} names {}, which no setting gives".format(template, exc)
        ) from None


def _group(items, settings):
    if any(_empty(settings.get(n)) for item in items for n in _names(item)):
        return []
    return [_fill(item, settings) for item in items]


def arg_words(arg, settings):
    """One item of the args: a flag group (left out whole when a setting it names is empty), or an
    ``if``/``switch`` choosing one; the same rules as the harness's engine definitions."""
    if isinstance(arg, list):
        return _group(arg, settings)
    if "if" in arg:
        return _group(arg["then"] if not _empty(settings.get(arg["if"])) else arg.get("else", []), settings)
    value = str(settings.get(arg["switch"]))
    if value not in arg["cases"]:
        raise Refused(
            "setting {}: {!r} is not one of {}".format(arg["switch"], value, ", ".join(arg["cases"]))
        )
    return _group(arg["cases"][value], settings)


def build_argv(spec, values, fills):
    """The exact argument list: the allow-list's fixed head, its args filled, its fixed tail."""
    settings = dict(spec.get("fixed", {}))
    settings.update(values)
    settings.update(fills)
    for name, rule in spec.get("derived", {}).items():
        product = 1
        for part in rule["product"]:
            product *= int(settings[part])
        settings[name] = product
    argv = list(spec["argv_head"])
    for arg in spec.get("args", []):
        argv += arg_words(arg, settings)
    env = {k: _fill(v, settings) for k, v in spec.get("env", {}).items()}
    port = int(_fill(spec.get("port", "{port}"), settings))
    return argv + list(spec.get("argv_tail", [])), env, port, settings


# -- memory, without psutil ----------------------------------------------------------------------


def _proc_tree_kb_linux(pid):
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/{}/stat".format(entry)) as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, total = _descendants(pid, parents), 0
    for p in tree:
        try:
            with open("/proc/{}/status".format(p)) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total if tree else None


def _descendants(pid, parents):
    """``pid`` and every process below it, from a map of pid -> parent pid (only those alive)."""
    children = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in parents and p not in tree:
            tree.append(p)
        todo += [c for c in children.get(p, []) if c not in tree]
    return tree


def _proc_tree_kb_ps(pid):
    try:
        out = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid=,rss="], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    parents, rss = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and all(x.isdigit() for x in parts):
            parents[int(parts[0])], rss[int(parts[0])] = int(parts[1]), int(parts[2])
    tree = _descendants(pid, parents)
    return sum(rss[p] for p in tree) if tree else None


def process_rss_mb(pid):
    """Resident memory of a process and its children in MB (/proc on Linux, ps elsewhere)."""
    kb = _proc_tree_kb_linux(pid) if os.path.isdir("/proc/self") else _proc_tree_kb_ps(pid)
    return None if kb is None else round(kb / 1024.0, 1)


def host_memory():
    """The host's memory: /proc/meminfo on Linux, vm_stat and hw.memsize on macOS."""
    if os.path.exists("/proc/meminfo"):
        info = {}
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0])
        return {
            "source": "/proc/meminfo",
            "total_mb": round(info["MemTotal"] / 1024.0, 1),
            "available_mb": round(info.get("MemAvailable", info.get("MemFree", 0)) / 1024.0, 1),
        }
    try:
        text = subprocess.run(["vm_stat"], capture_output=True, text=True, timeout=10).stdout
        total = int(
            subprocess.run(
                ["sysctl", "-n", "hw.memsize"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        )
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {"source": "none", "total_mb": None, "available_mb": None}
    size = int(re.search(r"page size of (\d+) bytes", text).group(1)) if "page size of" in text else 16384
    pages = {
        k.strip(): int(v.strip().rstrip(".")) for k, v in re.findall(r"^([^:\n]+):\s+(\d+)\.?$", text, re.M)
    }
    free = sum(pages.get(k, 0) for k in ("Pages free", "Pages inactive", "Pages speculative"))
    return {
        "source": "vm_stat",
        "total_mb": round(total / 2**20, 1),
        "available_mb": round(free * size / 2**20, 1),
    }


# The read-only commands whose answers a containerised harness's preflight and memory readings
# need from the host (they would read the container's, or find nothing, inside it). Fixed here;
# nothing in a request names a command. Each is run only where its program is on PATH.
HOST_COMMANDS = (
    ("vm_stat",),
    ("sysctl", "-n", "hw.memsize"),
    ("sysctl", "-n", "vm.swapusage"),
    ("sysctl", "-n", "machdep.cpu.brand_string"),
    ("nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"),
    ("nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"),
)


def _answer(argv):
    """A command's output (stripped), or None when it is missing or fails."""
    if not shutil.which(argv[0]):
        return None
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _swap_bytes():
    """(used, free) swap in bytes: /proc/meminfo on Linux, sysctl vm.swapusage on macOS; Nones else."""
    if os.path.exists("/proc/meminfo"):
        with open("/proc/meminfo") as f:
            info = {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in f) if v.split()}
        total, free = info.get("SwapTotal", 0), info.get("SwapFree", 0)
        return (total - free) * 1024, free * 1024
    return swapusage_bytes(_answer(("sysctl", "-n", "vm.swapusage")) or "")


def swapusage_bytes(text):
    """(used, free) in bytes from macOS's ``sysctl -n vm.swapusage``
    (``total = 2048.00M  used = 1126.25M  free = 921.75M  (encrypted)``); Nones when unreadable."""
    pattern = r"(used|free)\s*=\s*([\d.]+)([BKMGT])"
    got = {k: float(n) * 1024 ** "BKMGT".index(u) for k, n, u in re.findall(pattern, text)}
    if not {"used", "free"} <= set(got):
        return None, None
    return int(got["used"]), int(got["free"])


def host_facts():
    """What ``GET /v1/host`` answers: the machine, its memory and swap in bytes, and each of
    HOST_COMMANDS's answers keyed by its words joined by spaces (None: missing or failed)."""
    memory = host_memory()
    used, free = _swap_bytes()
    return {
        "system": platform.system(),
        "machine": platform.machine(),
        "node": platform.node(),
        "memory_source": memory["source"],
        "total_bytes": None if memory["total_mb"] is None else int(memory["total_mb"] * 2**20),
        "available_bytes": None if memory["available_mb"] is None else int(memory["available_mb"] * 2**20),
        "swap_used_bytes": used,
        "swap_free_bytes": free,
        "commands": {" ".join(argv): _answer(argv) for argv in HOST_COMMANDS},
    }


# -- power: macOS's powermetrics, one sample a request -----------------------------------------

# The arguments are the shim's: the CPU and GPU power samplers, one sample, as a property list
# (the harness's harness/energy/sources/powermetrics.py parses it). A request gives the window only.
POWER_ARGS = ("--samplers", "cpu_power,gpu_power", "--sample-count", "1", "--format", "plist")
POWER_WINDOW_MS = (100, 5000)  # the window a request may ask for (default 500 ms)
POWER_OUTPUT = 1 << 20  # one sample of two samplers is a few kB; past this it is cut off, refused
POWER_GRACE_S = 10.0  # powermetrics' own start-up, on top of the window, before it is killed


def _sudo_owner():
    """(uid, gid) of the user who ran ``sudo`` to start this root shim, or None: the token file is
    given to them, so a harness running as that user (or a container as them) can read it."""
    uid, gid = os.environ.get("SUDO_UID", ""), os.environ.get("SUDO_GID", "")
    if os.geteuid() != 0 or not (uid.isdigit() and gid.isdigit()) or uid == "0":
        return None
    return int(uid), int(gid)


def _last_line(f, limit=200):
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - 4096))
    lines = [x.strip() for x in f.read().decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1][:limit] if lines else ""


def run_bounded(argv, seconds, limit):
    """Run ``argv`` (no shell): (its output up to ``limit`` bytes, its exit status, its error
    output's last line, why it was stopped or None). It is killed past ``seconds`` or ``limit``."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        except OSError as exc:
            return b"", None, "", "cannot run {}: {}".format(argv[0], exc.strerror)
        stopped = []

        def kill(why):
            stopped.append(why)
            with contextlib.suppress(OSError):
                proc.kill()

        timer = threading.Timer(seconds, kill, ["it gave no sample within {:g} s".format(seconds)])
        timer.start()
        try:
            out = proc.stdout.read(limit + 1)
            if len(out) > limit:
                kill("it wrote more than {} bytes for one sample".format(limit))
                out = out[:limit]
            proc.stdout.close()
            code = proc.wait()
        finally:
            timer.cancel()
        return out, code, _last_line(err), (stopped[0] if stopped else None)


class Power:
    """``GET /v1/power``: one powermetrics sample a request, one at a time, when the allow-list
    names powermetrics (``spec``; its program found on PATH at start) and the shim runs as root."""

    def __init__(self, spec):
        self.spec, self.lock = spec, threading.Lock()

    def refusal(self):
        """(status, the one line why) when this shim may not run powermetrics, else None."""
        if self.spec is None:
            return 403, (
                "powermetrics is not in this shim's allow-list; write it with `harness shim-allow PLAN "
                "--powermetrics` (make shim SHIM_POWERMETRICS=1) and start the shim again"
            )
        if self.spec.get("missing"):
            return (
                503,
                "powermetrics is not on this host's PATH (macOS has it in /usr/bin; this is {})".format(
                    platform.system()
                ),
            )
        if os.geteuid() != 0:
            return 403, (
                "powermetrics needs root and this shim runs as uid {}; start the shim with sudo "
                "(docs/telemetry.md)".format(os.geteuid())
            )
        return None

    def sample(self, window_ms):
        refused = self.refusal()
        if refused:
            raise ShimError(*refused)
        argv = [self.spec["argv_head"][0], *POWER_ARGS, "--sample-rate", str(window_ms)]
        seconds = window_ms / 1000.0 + POWER_GRACE_S
        if not self.lock.acquire(timeout=seconds):
            raise ShimError(503, "another powermetrics sample is still being taken; ask again")
        try:
            t0 = time.monotonic()
            out, code, err, stopped = run_bounded(argv, seconds, POWER_OUTPUT)
            took = time.monotonic() - t0
        finally:
            self.lock.release()
        if stopped or code != 0 or not out.strip(b"\0 \n"):
            exited = "it exited {}{}".format(code, ": " + err if err else "")
            why = stopped or (exited if code != 0 else "it printed nothing")
            raise ShimError(502, "powermetrics gave no sample: {}".format(why))
        return {
            "source": "powermetrics",
            "argv": argv,
            "interval_ms": window_ms,
            "seconds": round(took, 3),
            "output": out.decode("utf-8", "replace"),
        }


def power_window(query):
    """The window a ``/v1/power`` query asks for (``interval_ms``, default 500); Refused else."""
    given = parse_qs(query, keep_blank_values=True).get("interval_ms", ["500"])
    lo, hi = POWER_WINDOW_MS
    if len(given) != 1 or not INTERVAL.match(given[0]) or not lo <= int(given[0]) <= hi:
        raise Refused("interval_ms must be one whole number of milliseconds, {} to {}".format(lo, hi))
    return int(given[0])


# -- the engines it runs -------------------------------------------------------------------------


def port_open(host, port, timeout=0.5):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class Engines:
    """The engines started by this shim, by name (one of each at a time)."""

    def __init__(self, allow, library, bind, log_dir):
        self.allow, self.library, self.bind, self.log_dir = allow, library, bind, log_dir
        self.running = {}  # name -> {proc, argv, port, log}
        self.lock = threading.Lock()

    def spec(self, name):
        spec = self.allow["engines"].get(name)
        if spec is None:
            raise ShimError(
                403,
                "engine {!r} is not in this shim's allow-list; it may start {}".format(
                    name, ", ".join(sorted(self.allow["engines"]))
                ),
            )
        return spec

    def listing(self):
        return {
            name: {
                "settings": spec.get("settings", {}),
                "running": self._alive(name),
                "missing": spec.get("missing"),
            }
            for name, spec in sorted(self.allow["engines"].items())
        }

    def _alive(self, name):
        run = self.running.get(name)
        return run is not None and run["proc"].poll() is None

    def start(self, name, given):
        spec = self.spec(name)
        values = check_settings(spec, given, self.library)
        if spec.get("missing"):
            raise ShimError(503, "cannot start {}: {}".format(name, spec["missing"]))
        # Its output is kept in NAME.out; an engine that writes a log of its own gets NAME.log,
        # and that is the log the API serves (else its output).
        out, own = (os.path.join(self.log_dir, "{}.{}".format(name, x)) for x in ("out", "log"))
        wanted = spec.get("fills", {})
        fills = {k: {"bind": self.bind, "log": own, "log_dir": self.log_dir}[v] for k, v in wanted.items()}
        log = own if "log" in wanted.values() else out
        argv, env, port, _ = build_argv(spec, values, fills)
        with self.lock:
            if self._alive(name):
                raise ShimError(
                    409,
                    "engine {} is already running (pid {}); stop it first".format(
                        name, self.running[name]["proc"].pid
                    ),
                )
            if port_open(self.bind, port):
                raise ShimError(
                    409, "port {} on {} is already in use; stop what holds it".format(port, self.bind)
                )
            if log == own and os.path.exists(own):
                os.remove(own)  # a fresh log for each start, as the host launcher keeps
            with open(out, "wb") as captured:
                try:
                    proc = subprocess.Popen(
                        argv,
                        stdout=captured,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        env=dict(os.environ, **env),
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise ShimError(
                        500, "cannot start {}: {}; is it installed?".format(argv[0], exc.strerror)
                    ) from None
            self.running[name] = {"proc": proc, "argv": argv, "port": port, "log": log}
        return {"engine": name, "pid": proc.pid, "argv": argv, "port": port, "host": self.bind, "log": log}

    def status(self, name):
        spec = self.spec(name)
        run = self.running.get(name)
        if run is None:
            return {"engine": name, "running": False, "pid": None, "returncode": None, "rss_mb": None}
        proc = run["proc"]
        alive = proc.poll() is None
        health = spec.get("health")
        return {
            "engine": name,
            "running": alive,
            "pid": proc.pid,
            "returncode": proc.returncode,
            "rss_mb": process_rss_mb(proc.pid) if alive else None,
            "port": run["port"],
            "argv": run["argv"],
            "port_open": port_open(self.bind, run["port"]) if alive else False,
            "health": health,
        }

    def log_from(self, name, offset):
        self.spec(name)
        run = self.running.get(name)
        if run is None:
            return b"", 0
        try:
            with open(run["log"], "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(min(max(offset, 0), size))
                return f.read(4 * 2**20), size
        except OSError:
            return b"", 0

    def version(self, name):
        argv = self.spec(name).get("version_argv")
        if not argv:
            return {"engine": name, "version": None}
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return {"engine": name, "version": "unknown"}
        if done.returncode != 0:
            return {"engine": name, "version": "unknown (version command exited {})".format(done.returncode)}
        lines = [x.strip() for x in (done.stdout + done.stderr).splitlines() if x.strip()]
        chosen = next(
            (x for x in lines if x.lower().startswith("version")), lines[-1] if lines else "unknown"
        )
        return {"engine": name, "version": chosen}

    def devices(self, name):
        """The engine's device listing (its allow-list's devices_argv: llama-server --list-devices)."""
        argv = self.spec(name).get("devices_argv")
        if not argv:
            return {"engine": name, "devices": None}
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"engine": name, "devices": None, "error": str(exc)}
        return {"engine": name, "devices": done.stdout + done.stderr, "returncode": done.returncode}

    def stop(self, name, timeout=15.0):
        self.spec(name)
        with self.lock:
            run = self.running.pop(name, None)
        if run is None:
            return {"engine": name, "stopped": False, "was_running": False, "port_free": True}
        proc = run["proc"]
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait(5)
        _signal_group(proc.pid, signal.SIGKILL)  # anything it left in its session
        deadline = time.monotonic() + 10
        while port_open(self.bind, run["port"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        return {
            "engine": name,
            "stopped": True,
            "was_running": True,
            "returncode": proc.returncode,
            "port_free": not port_open(self.bind, run["port"]),
        }

    def stop_all(self):
        return [self.stop(name) for name in list(self.running)]


def _signal_group(pid, sig):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


# -- HTTP ----------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    server_version = "harness-shim/" + VERSION
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # one line per request, written by _done instead
        pass

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def __init__(self, conn, server):
        self._pending = conn.buffer  # the head the selector read, and what followed it
        super().__init__(conn.sock, conn.address, server)

    def setup(self):
        super().setup()
        self.rfile.close()  # every read goes through the deadline instead
        self.rfile = self._reader = _Reader(self.connection, self._pending)

    def handle(self):
        """One request: a kept-alive connection goes back to the selector to wait for its next."""
        self.close_connection = True
        self._reader.begin(self.server.limits["header_s"])
        self.handle_one_request()

    def handle_expect_100(self):
        return True  # no 100 Continue before the token and the framing are checked (_handle)

    def _handle(self, method):
        t0, status = time.monotonic(), 500
        self._raw = b""
        try:
            if self._unreadable_head():
                self.close_connection = True  # what follows on this connection cannot be trusted
                raise Refused(
                    "a header line is no 'Name: value' (a space before the colon, a folded or "
                    "malformed line); send each header on one line"
                )
            if not self._authorised():  # from the headers alone; no body is read for a refusal
                self.close_connection = True
                status = self._json(
                    401,
                    {"error": "a bearer token is required (the shim's token file)"},
                    {"WWW-Authenticate": "Bearer"},
                )
                return
            self._raw = self._read_body()  # read before any answer, so a kept-alive connection stays in step
            status = self._route(method)
        except ShimError as exc:
            status = self._json(exc.status, {"error": str(exc)})
        except Exception as exc:  # a bug here must not kill the shim; it is said and logged
            self.close_connection = True
            status = self._json(500, {"error": "shim error: {}".format(exc.__class__.__name__)})
        finally:
            self.server.log_line(
                "{} {} {} {} {} {:.0f}ms".format(
                    _now(),
                    self.client_address[0],
                    method,
                    urlparse(self.path).path[:200],
                    status,
                    (time.monotonic() - t0) * 1000,
                )
            )

    def _unreadable_head(self):
        """Whether the header block holds a line the parser could not read as a header (everything
        after such a line, a smuggled Transfer-Encoding among it, would be unseen) or a folded one
        (RFC 9112 says a server rejects both)."""
        if self.headers.defects:
            return True
        return any("\n" in value or "\r" in value for value in self.headers.values())

    def _authorised(self):
        given = self.headers.get("Authorization", "")
        want = "Bearer " + self.server.token
        return hmac.compare_digest(given.encode("utf-8", "replace"), want.encode("utf-8"))

    def _route(self, method):
        url = urlparse(self.path)
        if not ROUTE.match(url.path) or any(p in (".", "..") for p in url.path.split("/")):
            raise Refused(
                "the path may hold letters, digits, . _ - and / only (no %-escape, no . or .. part)"
            )
        parts = [p for p in url.path.split("/") if p]
        engines = self.server.engines
        if parts[:1] != ["v1"]:
            raise ShimError(404, "no such route; the API is under /v1")
        parts = parts[1:]
        if method == "GET" and parts == ["health"]:
            return self._json(
                200,
                {
                    "ok": True,
                    "shim_version": VERSION,
                    "pid": os.getpid(),
                    "bind": engines.bind,
                    "python": platform.python_version(),
                },
            )
        if method == "GET" and parts == ["engines"]:
            return self._json(200, {"engines": engines.listing()})
        if method == "GET" and parts == ["memory"]:
            return self._json(200, host_memory())
        if method == "GET" and parts == ["host"]:
            return self._json(200, host_facts())
        if method == "GET" and parts == ["power"]:
            return self._json(200, self.server.power.sample(power_window(url.query)))
        if len(parts) >= 2 and parts[0] == "engines":
            return self._engine_route(method, parts[1], parts[2:], url)
        raise ShimError(404, "no such route: {} {}".format(method, url.path))

    def _engine_route(self, method, name, rest, url):
        engines = self.server.engines
        engines.spec(name)  # 403 before anything else about an engine not allowed
        if method == "POST" and rest == ["start"]:
            body = self._body()
            return self._json(200, engines.start(name, body.get("settings", {})))
        if method == "POST" and rest == ["stop"]:
            return self._json(200, engines.stop(name))
        if method == "GET" and rest == []:
            return self._json(200, engines.status(name))
        if method == "GET" and rest == ["version"]:
            return self._json(200, engines.version(name))
        if method == "GET" and rest == ["devices"]:
            return self._json(200, engines.devices(name))
        if method == "GET" and rest == ["log"]:
            offsets = parse_qs(url.query, keep_blank_values=True).get("offset", ["0"])
            if len(offsets) != 1 or not OFFSET.match(offsets[0]) or int(offsets[0]) >= 2**63:
                raise Refused("offset must be one whole number of bytes, 0 to 2**63 - 1, in ASCII digits")
            data, size = engines.log_from(name, int(offsets[0]))
            return self._send(200, data, "text/plain; charset=utf-8", {"X-Log-Size": str(size)})
        raise ShimError(404, "no such route for engine {}: {} {}".format(name, method, "/".join(rest)))

    def _read_body(self):
        """The body, framed by one Content-Length of ASCII digits only: a Transfer-Encoding (with or
        without a Content-Length) is refused and the connection closed, as is a body too long or
        one that does not arrive within the body deadline."""
        chunked = self.headers.get_all("Transfer-Encoding")
        lengths = self.headers.get_all("Content-Length") or []
        if chunked or len(lengths) > 1:
            self.close_connection = True  # what follows on this connection cannot be trusted
            if lengths:
                raise Refused("a request may not carry Transfer-Encoding and Content-Length, or two lengths")
            raise ShimError(501, "Transfer-Encoding is not accepted; send the body with a Content-Length")
        length = lengths[0].strip() if lengths else "0"
        if not re.match(r"^[0-9]{1,10}$", length) or int(length) > MAX_BODY:
            self.close_connection = True
            raise Refused("the request body must have a Content-Length of at most {} bytes".format(MAX_BODY))
        if self.headers.get("Expect", "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
        self._reader.begin(self.server.limits["body_s"], None)
        try:
            data = self.rfile.read(int(length)) if int(length) else b""
        except socket.timeout:
            data = None
        if data is None or len(data) < int(length):
            self.close_connection = True
            raise ShimError(
                408,
                "the body did not arrive within {:g} s: send all of its Content-Length".format(
                    self.server.limits["body_s"]
                ),
            )
        return data

    def _body(self):
        try:
            body = json.loads(self._raw or b"{}")
        except (ValueError, RecursionError):  # 64 KiB of brackets nests past the parser's stack
            raise Refused("the request body is not JSON") from None
        if not isinstance(body, dict) or set(body) - {"settings"}:
            raise Refused('the body must be {"settings": {...}} and nothing else')
        return body

    def _json(self, status, obj, headers=None):
        return self._send(status, json.dumps(obj).encode(), "application/json", headers)

    def _send(self, status, data, kind, headers=None):
        self.connection.settimeout(self.server.limits["body_s"])  # a client that never reads
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        return status


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Reader:
    """A connection's reads for one request: first the bytes the selector already holds (the whole
    head, and whatever followed it), then the socket, each read bounded by the time left to the
    current deadline. Past it, socket.timeout (BaseHTTPRequestHandler closes on it); ``leftover``
    is what a kept-alive connection sent past this request."""

    def __init__(self, sock, pending):
        self.sock, self.buffer, self.deadline, self.stopped, self.closed = (
            sock,
            bytearray(pending),
            0.0,
            None,
            False,
        )

    def begin(self, seconds, budget=None):
        self.deadline, self.stopped = time.monotonic() + seconds, None

    def _more(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.stopped = "deadline: the request did not arrive in time"
            raise socket.timeout(self.stopped)
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            self.stopped = "deadline: the request did not arrive in time"
            raise
        self.buffer += data
        return bool(data)

    def readline(self, limit=-1):
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                n = end + 1
            elif 0 <= limit <= len(self.buffer) or not self._more():
                n = len(self.buffer)
            else:
                continue
            return self._take(n if limit < 0 else min(n, limit))

    def read(self, size=-1):
        while size < 0 or len(self.buffer) < size:
            if not self._more():
                break
        return self._take(len(self.buffer) if size < 0 else min(size, len(self.buffer)))

    def _take(self, n):
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    def leftover(self):
        return bytes(self.buffer)

    def close(self):
        self.closed = True


def head_end(data):
    """Where a request's head ends in ``data`` (past its empty line), or None while it is unfinished."""
    ends = [i for i in (data.find(b"\n\r\n"), data.find(b"\n\n")) if i >= 0]
    if not ends:
        return None
    first = min(ends)
    return first + (3 if data[first + 1 : first + 2] == b"\r" else 2)


def closing(status, error):
    """A whole answer sent by the selector itself, before the connection is closed."""
    body = json.dumps({"error": error}).encode()
    head = "HTTP/1.1 {}\r\nContent-Type: application/json\r\nConnection: close\r\n".format(status)
    return head.encode() + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


def busy(why):
    """The 503 a refused or dropped connection gets (then it is closed)."""
    return closing("503 Service Unavailable", "the shim is busy: {}; try again".format(why))


HEAD_TOO_LONG = closing(
    "431 Request Header Fields Too Large", "the request line and headers exceed {} bytes".format(MAX_HEAD)
)
FD_RESERVE = 64  # open files the shim keeps for itself (logs, engines' pipes) beside its connections


class _Conn:
    """One client connection: its socket, address, the bytes of the head read so far, and the time
    by which that head must be whole."""

    __slots__ = ("sock", "address", "buffer", "deadline")

    def __init__(self, sock, address, deadline):
        self.sock, self.address, self.buffer, self.deadline = sock, address, b"", deadline


class ShimServer(HTTPServer):
    """One selector thread reads every connection's request head; a head made whole goes to a
    worker thread (at most ``limits["workers"]``, started as needed), which answers it and hands a
    kept-alive connection back. So an idle connection costs a socket and its bytes, never a thread,
    and ``/v1/health`` is answered while a thousand heads wait unfinished.

    Caps (``LIMITS``): at most ``per_address`` connections from one client address and
    ``connections`` in all. A connection past a cap takes the place of the oldest one (of that
    address, or of all) whose head is still unfinished, which gets 503 and is closed; where every
    one is busy with a request, the new one gets 503. A head unfinished at ``header_s`` is dropped."""

    request_queue_size = 1024  # the kernel's backlog for connections not yet accepted

    def __init__(self, address, engines, token, log_path, limits=None):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, Handler)
        self.socket.setblocking(False)
        self.engines, self.token, self.log_path = engines, token, log_path
        self.power = Power(engines.allow.get("powermetrics"))
        self.limits = dict(LIMITS, **(limits or {}))
        self._log_lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.socket, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._reading = collections.OrderedDict()  # conn -> None, oldest (first deadline) first
        self._by_address = {}  # address -> OrderedDict of its reading conns
        self._open = collections.Counter()  # address -> its open connections (reading or working)
        self._returned = collections.deque()  # (conn, keep) from the workers
        self._queue = queue.Queue()
        self._workers, self._idle, self._work_lock = [], 0, threading.Lock()
        self._refused, self._refused_at = collections.Counter(), time.monotonic()
        self._stopping = False

    # the selector thread (the one that calls serve_forever) alone touches the tables above

    def serve_forever(self, poll_interval=0.5):
        self._stopping = False
        while not self._stopping:
            timeout = poll_interval
            if self._reading:
                first = next(iter(self._reading))
                timeout = max(0.0, min(timeout, first.deadline - time.monotonic()))
            for key, _ in self._selector.select(timeout):
                if key.data is None:
                    self._accept()
                elif key.data == "wake":
                    with contextlib.suppress(OSError):
                        while self._wake_r.recv(4096):
                            pass
                else:
                    self._read(key.data)
            self._take_back()
            self._expire()
            self._say_refused()

    def shutdown(self):
        self._stopping = True
        self._wake()

    def open_connections(self):
        """How many connections are open now, by client address (for tests and the log)."""
        return dict(self._open)

    def _wake(self):
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _accept(self):
        for _ in range(256):  # then the other sockets get their turn
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of open files: the caps are above what the host lets it hold
                self.log_line("{} - - - accept failed: {}".format(_now(), exc.strerror))
                return
            host = address[0]
            if self._open[host] >= self.limits["per_address"] and not self._evict(
                self._by_address.get(host),
                "more than {} connections from {}".format(self.limits["per_address"], host),
            ):
                self._refuse(sock, host, "{} connections from {} are busy".format(self._open[host], host))
                continue
            if sum(self._open.values()) >= self.limits["connections"] and not self._evict(
                self._reading, "more than {} connections".format(self.limits["connections"])
            ):
                self._refuse(sock, host, "{} connections are busy".format(self.limits["connections"]))
                continue
            sock.setblocking(False)
            self._open[host] += 1
            self._watch(_Conn(sock, address, time.monotonic() + self.limits["header_s"]))

    def _watch(self, conn):
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        self._reading[conn] = None
        self._by_address.setdefault(conn.address[0], collections.OrderedDict())[conn] = None

    def _unwatch(self, conn):
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(conn.sock)
        self._reading.pop(conn, None)
        mine = self._by_address.get(conn.address[0])
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self._by_address[conn.address[0]]

    def _forget(self, conn):
        host = conn.address[0]
        self._open[host] -= 1
        if self._open[host] <= 0:
            del self._open[host]

    def _drop(self, conn, answer=None):
        """Close a connection the selector holds; ``answer`` is sent first when the socket takes it."""
        self._unwatch(conn)
        with contextlib.suppress(OSError):
            if answer:
                conn.sock.send(answer)
        self.close_request(conn.sock)
        self._forget(conn)

    def _evict(self, reading, why):
        """Drop the oldest connection of ``reading`` (its head unfinished); False when there is none."""
        if not reading:
            return False
        conn = next(iter(reading))
        self._drop(conn, busy("dropped an unfinished request: " + why))
        self._refused["dropped (" + why + ")"] += 1
        return True

    def _refuse(self, sock, host, why):
        with contextlib.suppress(OSError):
            sock.setblocking(False)
            sock.send(busy(why))
        self.close_request(sock)
        self._refused["refused (" + why + ")"] += 1

    def _say_refused(self):
        """One log line a second at most for refused and dropped connections, so a flood of them
        does not become a flood of log lines."""
        if self._refused and time.monotonic() - self._refused_at >= 1.0:
            for why, n in sorted(self._refused.items()):
                self.log_line("{} - - - 503 {} connection(s) {}".format(_now(), n, why))
            self._refused.clear()
            self._refused_at = time.monotonic()

    def _read(self, conn):
        if conn not in self._reading:  # dropped earlier in this round of the selector
            return
        try:
            data = conn.sock.recv(MAX_HEAD + 1 - len(conn.buffer))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client closed it
            self._drop(conn)
            return
        conn.buffer += data
        if head_end(conn.buffer) is not None:
            self._unwatch(conn)
            self._dispatch(conn)
        elif len(conn.buffer) > MAX_HEAD:
            self.log_line(
                "{} {} - - 431 the request line and headers exceed {} bytes".format(
                    _now(), conn.address[0], MAX_HEAD
                )
            )
            self._drop(conn, HEAD_TOO_LONG)

    def _expire(self):
        now = time.monotonic()
        while self._reading:
            conn = next(iter(self._reading))
            if conn.deadline > now:
                return
            if conn.buffer:
                self.log_line(
                    "{} {} - - 408 deadline: the request did not arrive in time".format(
                        _now(), conn.address[0]
                    )
                )
            self._drop(conn)

    def _dispatch(self, conn):
        conn.sock.setblocking(True)
        self._queue.put(conn)
        with self._work_lock:
            start = self._idle < self._queue.qsize() and len(self._workers) < self.limits["workers"]
        if start:
            worker = threading.Thread(target=self._work, daemon=True, name="shim-worker")
            self._workers.append(worker)
            worker.start()

    def _take_back(self):
        while self._returned:
            conn, keep = self._returned.popleft()
            if not keep:
                self._forget(conn)
                continue
            conn.deadline = time.monotonic() + self.limits["header_s"]
            if head_end(conn.buffer) is not None:  # a pipelined request is already here
                self._dispatch(conn)
            else:
                conn.sock.setblocking(False)
                self._watch(conn)

    # the workers

    def _work(self):
        while True:
            with self._work_lock:
                self._idle += 1
            conn = self._queue.get()
            with self._work_lock:
                self._idle -= 1
            if conn is None:
                return
            keep = False
            try:
                handler = Handler(conn, self)
                keep = not handler.close_connection
                conn.buffer = handler.rfile.leftover() if keep else b""
            except Exception:
                self.handle_error(conn.sock, conn.address)
            if not keep:
                self.shutdown_request(conn.sock)
            self._returned.append((conn, keep))
            self._wake()

    def server_close(self):
        for conn in list(self._reading):
            self._drop(conn)
        for _ in self._workers:
            self._queue.put(None)
        with contextlib.suppress(OSError):
            self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        super().server_close()

    def shutdown_request(self, request):
        """Close after a bounded drain (256 KiB, half a second), so that a client refused before
        its body was read gets the answer rather than a reset."""
        with contextlib.suppress(OSError):
            request.shutdown(socket.SHUT_WR)
            request.settimeout(0.5)
            left = 256 * 1024
            while left > 0 and request.recv(min(left, 65536)):
                left -= 65536
        self.close_request(request)

    def handle_error(self, request, client_address):
        """One line, never a traceback: a client that resets its connection is not the shim's bug."""
        kind = sys.exc_info()[0]
        self.log_line("{} {} - - connection ended: {}".format(_now(), client_address[0], kind.__name__))

    def log_line(self, line):
        with self._log_lock:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")


def room_for(connections):
    """The connections the shim can hold open: the open-file limit is raised toward
    ``connections`` + FD_RESERVE (up to the hard limit); past what it allows, fewer."""
    try:
        import resource
    except ImportError:  # not a Unix: nothing to raise
        return connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want, infinite = connections + FD_RESERVE, resource.RLIM_INFINITY
    if soft != infinite and soft < want:
        raised = want if hard == infinite else min(want, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    return connections if soft == infinite else max(1, min(connections, soft - FD_RESERVE))


# -- where it binds, its token -------------------------------------------------------------------


def docker_gateway():
    """The Docker bridge's gateway address on this host (what containers reach it at), or None.
    A bridge whose IPAM lists only its subnet (seen with Docker 20.10 on Debian) has the subnet's
    first address as its gateway, as Docker assigns it to docker0."""
    try:
        out = subprocess.run(
            [
                "docker",
                "network",
                "inspect",
                "bridge",
                "--format",
                "{{range .IPAM.Config}}{{.Gateway}}|{{.Subnet}} {{end}}",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for word in out.split():
        gateway, _, subnet = word.partition("|")
        try:
            if gateway:
                return str(ipaddress.IPv4Address(gateway))
            return str(next(ipaddress.IPv4Network(subnet).hosts()))
        except (ValueError, StopIteration):
            continue
    return None


def choose_bind(asked, allow_any, system=None, gateway=docker_gateway):
    """The address to bind: ``auto`` is 127.0.0.1 on macOS (Docker Desktop's host.docker.internal
    reaches the host's loopback) and the Docker bridge's gateway elsewhere. Any address that
    listens everywhere is refused unless ``allow_any``. SystemExit with what to do otherwise."""
    system = system or platform.system()
    if asked == "auto":
        if system == "Darwin":
            return "127.0.0.1"
        found = gateway()
        if found is None:
            raise SystemExit(
                "harness_shim: no Docker bridge found (docker network inspect bridge); start "
                "Docker, or pass --bind 127.0.0.1 when the harness runs on this host"
            )
        return found
    try:
        address = ipaddress.ip_address(asked)
    except ValueError:
        raise SystemExit(
            "harness_shim: --bind {!r} is not an IP address; give one this host has, or auto".format(asked)
        ) from None
    if address.is_unspecified and not allow_any:
        raise SystemExit(
            "harness_shim: --bind {} listens on every network; bind the Docker bridge's "
            "gateway (auto) or add --allow-any-address if you mean it".format(asked)
        )
    return str(address)


def write_token(path):
    """A new random token in a file only this user can read or write (0600), made at each start
    (under sudo: the user who ran sudo, as ``_sudo_owner`` says)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an older file keeps its mode through O_CREAT; set it again
        owner = _sudo_owner()
        if owner:  # a root shim (for powermetrics) started by sudo: the token is its user's
            os.fchown(fd, *owner)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    return token


# -- serve ---------------------------------------------------------------------------------------


def serve(args):
    allow = load_allow_list(args.allow)
    library = os.path.realpath(os.path.expanduser(args.library or allow.get("library") or "~/models"))
    if not os.path.isdir(library):
        raise SystemExit("harness_shim: the model library {} is no folder; pass --library".format(library))
    bind = choose_bind(args.bind, args.allow_any_address)
    state = os.path.abspath(args.state_dir)
    log_dir = os.path.join(state, "engines")
    os.makedirs(log_dir, exist_ok=True)
    engines = Engines(allow, library, bind, log_dir)
    limits = {key: getattr(args, key) for _, key, _, _ in LIMIT_FLAGS}
    for flag, key, _, _ in LIMIT_FLAGS:
        if not limits[key] > 0:
            raise SystemExit("harness_shim: {} must be above 0 (its default is {})".format(flag, LIMITS[key]))
    held = room_for(limits["connections"])
    if held < limits["connections"]:
        print(
            "harness_shim: holds {} connections, not {}: this host allows {} open files "
            "(raise it with ulimit -n)".format(held, limits["connections"], held + FD_RESERVE),
            flush=True,
        )
        limits["connections"] = held
    try:
        server = ShimServer((bind, args.port), engines, "", os.path.join(state, "shim.log"), limits)
    except OSError as exc:
        raise SystemExit(
            "harness_shim: cannot listen on {}:{}: {}; is the port taken, or the address "
            "not this host's?".format(bind, args.port, exc.strerror)
        ) from None
    token_file = args.token_file or os.path.join(state, "token")
    server.token = write_token(token_file)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        "harness_shim {} listening on http://{}:{} (engines: {}; library: {}; token file: {})".format(
            VERSION, bind, server.server_address[1], ", ".join(sorted(allow["engines"])), library, token_file
        ),
        flush=True,
    )
    if "powermetrics" in allow:
        refused = server.power.refusal()
        print("harness_shim: powermetrics: {}".format(refused[1] if refused else "GET /v1/power"), flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for done in engines.stop_all():
            print(
                "harness_shim: stopped {} (port free: {})".format(done["engine"], done["port_free"]),
                flush=True,
            )
        server.server_close()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="harness_shim", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="start native engines for a containerised harness")
    p.add_argument("--allow", required=True, help="the allow-list (JSON, from `harness shim-allow`)")
    p.add_argument("--library", help="the model library every path setting must be under (default ~/models)")
    p.add_argument("--bind", default="auto", help="address to listen on (auto: the address containers reach)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (default %(default)s)")
    p.add_argument("--allow-any-address", action="store_true", help="permit --bind 0.0.0.0 or ::")
    p.add_argument(
        "--state-dir", default=os.path.join("runs", "shim"), help="token, logs (default runs/shim)"
    )
    p.add_argument("--token-file", help="where the token is written (default STATE_DIR/token)")
    for flag, key, kind, what in LIMIT_FLAGS:
        p.add_argument(flag, dest=key, type=kind, default=LIMITS[key], help=what + " (default %(default)s)")
    b = sub.add_parser("bind-address", help="print the address `serve --bind auto` would listen on")
    b.add_argument("--allow-any-address", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "bind-address":
        print(choose_bind("auto", args.allow_any_address))
        return 0
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
