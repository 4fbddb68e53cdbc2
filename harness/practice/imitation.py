"""The practice server imitating another engine's API surface, for rehearsals of the GPU tracks on
a machine that cannot run that engine (``harness imitate <the engine's own command line>``).

Each persona reads the engine's own command line (and the files it reads) as the engine would, for
the address, the model name and the seats, and changes only what a client sees of the server:
where its routes live, what its health and version routes answer, whether it asks for a key, which
field carries reasoning, how a stream is framed (mlx_lm.server's ends with the connection's
close), and the start-up lines it logs. The timing stays the practice server's.
Every answer names the imitation (``owned_by``, ``/version``, the first log line), so a record made
against it can never pass for the real engine.

Sources: the routes, health bodies, auth and reasoning fields are those stated in shared/ENGINES.md
(TensorRT-LLM §3, mlx_lm.server §5, TabbyAPI §6, Lemonade §7), each taken there from the engine's
own source at a stated commit; the start-up lines are uvicorn's standard lines (TensorRT-LLM,
TabbyAPI, Lemonade serve through FastAPI/uvicorn) and the first line mlx_lm.server's
``logging.info`` prints. They are cited, not recorded: no such engine has run on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.errors import ConfigError


@dataclass(frozen=True)
class Persona:
    """What a client sees of one engine, beyond the OpenAI routes every persona serves."""

    engine: str  # the engine imitated, as the records name it
    mode: str  # the practice server's dialect underneath (llama or vllm)
    prefixes: tuple[str, ...] = ()  # more API roots answering like /v1 (Lemonade's /api/v1)
    health: dict = field(default_factory=lambda: {"status": "ok"})
    version: str | None = None  # the /version route's body, when the engine has one
    needs_key: bool = False
    log_lines: tuple[str, ...] = ()
    # A stream sent as an HTTP/1.0 answer that the close ends (no Content-Length, no chunks), as a
    # server on Python's http.server answers: mlx_lm.server's APIHandler is a BaseHTTPRequestHandler.
    close_delimited: bool = False


PERSONAS = {
    "tensorrt-llm": Persona(
        "tensorrt-llm",
        "vllm",
        version="practice imitation of trtllm-serve",
        log_lines=(
            "INFO:     Started server process",
            "INFO:     Waiting for application startup.",
            "INFO:     Application startup complete.",
        ),
    ),
    "mlx-lm": Persona(
        "mlx-lm",
        "vllm",
        log_lines=("INFO - Starting httpd at {host} on port {port}...",),
        close_delimited=True,
    ),
    "tabbyapi": Persona(
        "tabbyapi",
        "llama",
        health={"status": "healthy", "issues": []},
        needs_key=True,
        log_lines=("INFO:     Application startup complete.",),
    ),
    "lemonade": Persona(
        "lemonade",
        "llama",
        prefixes=("/api/v1",),
        log_lines=("INFO:     Application startup complete.",),
    ),
}


@dataclass
class Imitation:
    """A persona with what the engine's command line said: where to listen, the model, the seats."""

    persona: Persona
    host: str
    port: int
    model: str
    seats: int
    ctx: int | None = None
    api_key: str | None = None
    argv: list[str] = field(default_factory=list)
    loaded: dict | None = None  # Lemonade's service: the model its last `load` loaded, and how
    config_lines: list[str] = field(default_factory=list)  # what the engine logs of its own config

    def control(self, method: str, path: str, body: bytes) -> tuple[int, dict] | None:
        """A Lemonade service's own load and unload routes (POST /api/v1/load {model_name, ctx_size,
        llamacpp_backend, llamacpp_args}, POST /api/v1/unload), or None for any other request.
        Only the model it has pulled (``model``) loads; the practice server serves it either way,
        as Lemonade loads a model a chat request names."""
        if self.persona.engine != "lemonade" or method != "POST" or path not in ("/v1/load", "/v1/unload"):
            return None
        if path == "/v1/unload":
            was, self.loaded = self.loaded, None
            return 200, {
                "status": "success",
                "message": f"unloaded {was['model_name']}" if was else "none loaded",
            }
        try:
            request = json.loads(body.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError):
            return 400, {"status": "error", "message": "the load request is not JSON"}
        name = request.get("model_name") if isinstance(request, dict) else None
        if name != self.model:
            return 404, {
                "status": "error",
                "message": f"model {name!r} is not pulled here (only {self.model})",
            }
        options = {k: request[k] for k in ("ctx_size", "llamacpp_backend", "llamacpp_args") if k in request}
        self.loaded = {"model_name": name, "recipe_options": options}
        return 200, {"status": "success", "message": f"loaded {name}"}

    def route(self, path: str) -> str:
        """The path as the practice server's routes know it (Lemonade's /api/v1 answers as /v1)."""
        for prefix in self.persona.prefixes:
            if path == prefix or path.startswith(prefix + "/"):
                return "/v1" + path[len(prefix) :]
        return path

    def own_route(self, path: str) -> dict | None:
        """The body of a route the imitated engine answers its own way (health, version), or None."""
        if path in ("/health", "/v1/health"):
            return self.health_body()
        if path == "/version" and self.persona.version:
            return {"version": self.persona.version}
        return None

    def health_body(self) -> dict:
        body = dict(self.persona.health)
        if self.persona.engine == "lemonade":
            loaded = [self.loaded] if self.loaded else []
            body.update(
                version="practice imitation",
                model_loaded=self.loaded["model_name"] if self.loaded else None,
                all_models_loaded=loaded,
            )
        return body

    def start_lines(self) -> list[str]:
        first = (
            f"practice server imitating {self.persona.engine} (not the real engine): {shlex.join(self.argv)}"
        )
        persona = [x.format(host=self.host, port=self.port) for x in self.persona.log_lines]
        return [first, *self.config_lines, *persona]


def _parser(prog: str, model_flag: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, add_help=False)
    if model_flag:
        p.add_argument(model_flag, dest="model")
    else:
        p.add_argument("model")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int)
    return p


def _trtllm(argv: list[str]) -> Imitation:
    p = _parser("trtllm-serve", None)
    p.add_argument("--max_batch_size", type=int, default=2048)
    p.add_argument("--max_seq_len", type=int)
    p.add_argument("--extra_llm_api_options", "--config", dest="options")
    args, _ = p.parse_known_args(argv[1:])
    return Imitation(
        PERSONAS["tensorrt-llm"],
        args.host,
        args.port or 8000,
        Path(args.model).name,  # trtllm-serve names the model by the checkpoint folder
        args.max_batch_size,
        args.max_seq_len,
        argv=argv,
        config_lines=_trtllm_config_lines(args.options),
    )


# What trtllm-serve logs when its options file turns guided decoding on (the line the engines lab,
# the engines lab shows from a real start); the imitation reads the same file the engine would.
GUIDED_LINE = "[TRT-LLM] [I] Guided decoder initialized with backend: GuidedDecodingBackend.{backend}"


# What it logs of the paged KV cache (tests/corpus/trtllm: 32 tokens a block by default); the
# imitation's pool is the options file's cap, as a real engine's is when memory is ample.
KV_LINES = (
    "[TensorRT-LLM][INFO] Number of blocks in KV cache primary pool: {blocks}",
    "[TensorRT-LLM][INFO] Number of tokens per block: {per_block}.",
)
TOKENS_PER_BLOCK = 32


def _trtllm_config_lines(path: str | None) -> list[str]:
    """The options file's lines the engine logs: guided decoding's backend, and the paged KV cache
    its ``kv_cache_config.max_tokens`` caps, when the file sets them (none when there is no file or
    it cannot be read: the real engine would not start either)."""
    if not path:
        return []
    try:
        options = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return []
    options = options if isinstance(options, dict) else {}
    lines = []
    if backend := options.get("guided_decoding_backend"):
        lines.append(GUIDED_LINE.format(backend=str(backend).upper()))
    kv = options.get("kv_cache_config")
    cap = kv.get("max_tokens") if isinstance(kv, dict) else None
    if isinstance(cap, int) and cap > 0:
        blocks = -(-cap // TOKENS_PER_BLOCK)
        lines += [line.format(blocks=blocks, per_block=TOKENS_PER_BLOCK) for line in KV_LINES]
    return lines


def _mlx(argv: list[str]) -> Imitation:
    p = _parser("mlx_lm.server", "--model")
    p.add_argument("--decode-concurrency", type=int, default=32)
    args, _ = p.parse_known_args(argv[1:])
    return Imitation(
        PERSONAS["mlx-lm"], args.host, args.port or 8080, args.model, args.decode_concurrency, argv=argv
    )


def lemonade_options(p: argparse.ArgumentParser) -> None:
    """Lemonade's own options as its service (lemond) and its CLI (``lemonade``) both take them:
    the service's address (LEMONADE_HOST and LEMONADE_PORT, or ``--host``/``--port``) and the
    context a model is served with (``--ctx-size``)."""
    p.add_argument("--host", default=os.environ.get("LEMONADE_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("LEMONADE_PORT", "13305")))
    p.add_argument("--ctx-size", type=int)


def _lemond(argv: list[str]) -> Imitation:
    """Lemonade's service, on the address LEMONADE_HOST/PORT name (``--host``/``--port`` too), with
    no model loaded until a `lemonade load`. Two options are the imitation's own, since the real
    service has them from its model store: ``--pulled MODEL``, the one model it has pulled, and
    ``--ctx-size N``, the context it serves it with."""
    p = argparse.ArgumentParser(prog="lemond", add_help=False)
    lemonade_options(p)
    p.add_argument("--pulled", required=True)
    try:
        args, _ = p.parse_known_args(argv[1:])
    except SystemExit:
        raise ConfigError("the lemond imitation needs --pulled MODEL (the model its store holds)") from None
    return Imitation(PERSONAS["lemonade"], args.host, args.port, args.pulled, 1, args.ctx_size, argv=argv)


def _tabby(argv: list[str]) -> Imitation:
    """TabbyAPI's start.sh reads config.yml and api_tokens.yml beside it, as the real one does."""
    folder = Path(argv[0]).parent
    try:
        config = yaml.safe_load((folder / "config.yml").read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"TabbyAPI imitation: cannot read {folder / 'config.yml'} ({exc.strerror})"
        ) from None
    net, model = config.get("network", {}), config.get("model", {})
    key = None if net.get("disable_auth", False) else _tabby_key(folder / "api_tokens.yml")
    return Imitation(
        PERSONAS["tabbyapi"],
        str(net.get("host", "127.0.0.1")),
        int(net.get("port", 5000)),
        str(model.get("model_name", "model")),
        int(model.get("max_batch_size") or 1),
        int(model.get("max_seq_len") or 0) or None,
        api_key=key,
        argv=argv,
    )


def _tabby_key(path: Path) -> str:
    """The key in api_tokens.yml, which TabbyAPI writes (0600, random keys) on its first start."""
    if not path.is_file():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yaml.safe_dump({"api_key": secrets.token_hex(16), "admin_key": secrets.token_hex(16)}, out)
    tokens = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    key = tokens.get("api_key")
    key = key[0] if isinstance(key, list) and key else key
    if not isinstance(key, str) or not key:
        raise ConfigError(f"TabbyAPI imitation: {path} holds no api_key")
    return key


READERS = {"trtllm-serve": _trtllm, "mlx_lm.server": _mlx, "lemond": _lemond, "start.sh": _tabby}


def read_command(argv: list[str]) -> Imitation:
    """The imitation an engine's own command line asks for (its program's name picks the persona)."""
    if not argv:
        raise ConfigError(
            "harness imitate needs the engine's command line, e.g. trtllm-serve MODEL --port 8082"
        )
    name = Path(argv[0]).name
    reader = READERS.get(name)
    if reader is None:
        raise ConfigError(f"no imitation of {name}; the practice server imitates {', '.join(READERS)}")
    return reader(argv)
