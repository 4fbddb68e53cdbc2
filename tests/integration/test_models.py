"""``harness models``: the seeds' downloads and sizes (dry run), the library layout, the SHA-256 check
and its failure path, the multi-file checks, Lemonade's user. registration, and the records. No hub:
a fake ``hf`` on PATH downloads from a local file server standing in for it."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.engines.models import download_table
from harness.cli import main
from harness.records.notebook import read_records
from tests.conftest import install_fake

FAKE_HF = (
    "#!{python}\nimport runpy; runpy.run_path('{root}/tests/fixtures/fake_hf.py', run_name='__main__')\n"
)

GGUF_BYTES = b"GGUF" + bytes(range(256)) * 40


def awq_files(bits: int = 4, method: str = "awq") -> dict[str, bytes]:
    files = {f"model-0000{i}-of-00002.safetensors": b"w" * 100 for i in (1, 2)}
    files["config.json"] = json.dumps(
        {"quantization_config": {"bits": bits, "quant_method": method}}
    ).encode()
    for i in range(12 - len(files)):
        files[f"extra-{i}.json"] = b"{}"
    return files


class Hub:
    """A local hub: the tree listing (with LFS checksums) and the files, per repository and revision."""

    def __init__(self):
        self.repos: dict[tuple[str, str], dict[str, bytes]] = {}
        self.published: dict[str, str] = {}  # path -> the checksum the hub claims (to test the mismatch path)
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                parts = self.path.strip("/").split("/")
                if parts[:2] == ["api", "models"]:
                    key = ("/".join(parts[2:4]), parts[5])
                    if key not in hub.repos:
                        return self.send_error(404)
                    body = json.dumps(
                        [
                            {
                                "type": "file",
                                "path": p,
                                "size": len(b),
                                "lfs": {
                                    "oid": hub.published.get(p, hashlib.sha256(b).hexdigest()),
                                    "size": len(b),
                                },
                            }
                            for p, b in hub.repos[key].items()
                        ]
                    ).encode()
                else:
                    key = ("/".join(parts[0:2]), parts[3])
                    body = hub.repos.get(key, {}).get("/".join(parts[4:]))
                    if body is None:
                        return self.send_error(404)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hub(tmp_path, monkeypatch):
    h = Hub()
    monkeypatch.setenv("HF_ENDPOINT", h.url)
    monkeypatch.setenv("FAKE_HF_LOG", str(tmp_path / "hf.log"))
    install_fake(tmp_path, monkeypatch, "hf", FAKE_HF)
    yield h
    h.server.shutdown()


def hf_calls(tmp_path) -> list[list[str]]:
    log = tmp_path / "hf.log"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def test_dry_run_prints_the_seeds_downloads_with_sizes_for_tracks_s_and_n(tmp_path, capsys, hub):
    lib = tmp_path / "models"
    assert main(["models", "--track", "S", "--dry-run", "--library", str(lib)]) == 0
    out = capsys.readouterr().out
    assert "1 file, 5,027,784,512 bytes (5.0 GB)" in out
    assert "12 files, 6,114,568,235 bytes (6.1 GB)" in out
    assert "15 files, 16,397,461,266 bytes (16.4 GB)" in out
    assert f"hf download Qwen/Qwen3-8B-AWQ --local-dir {lib}/Qwen/Qwen3-8B-AWQ" in out
    assert (
        f"hf download unsloth/Qwen3-8B-GGUF Qwen3-8B-Q4_K_M.gguf --local-dir {lib}/unsloth/Qwen3-8B-GGUF"
    ) in out
    assert "120307ba529eb2439d6c430d94104dabd578497bc7bfe7e322b5d9933b449bd4" in out
    assert "about 27.5 GB to download for track S" in out
    assert main(["models", "--track", "n", "--dry-run", "--library", str(lib)]) == 0
    out = capsys.readouterr().out
    assert "10 files, 5.2G" in out and "12 files, 6,114,568,235 bytes" in out
    assert (
        f"hf download turboderp/Qwen3-8B-exl3 --revision 4.0bpw --local-dir "
        f"{lib}/turboderp/Qwen3-8B-exl3-4.0bpw"
    ) in out
    assert "config.json quant_method exl3, config.json bits 4.0" in out
    assert hf_calls(tmp_path) == [] and not lib.exists()  # a dry run downloads nothing


def test_ask_hub_reads_hfs_own_dry_run_total(tmp_path, capsys, hub):
    hub.repos[("Qwen/Qwen3-8B-AWQ", "main")] = awq_files()
    assert (
        main(["models", "--format", "awq", "--dry-run", "--ask-hub", "--library", str(tmp_path / "m")]) == 0
    )
    out = capsys.readouterr().out
    assert "hub today: 12 files (out of 12) totalling 0.0G (as listed)" in out
    assert hf_calls(tmp_path)[-1][-1] == "--dry-run"
    assert download_table.parse_hf_dry_run(
        "[dry-run] Will download 15 files (out of 15) totalling 16.4G."
    ) == {
        "files": 15,
        "out_of": 15,
        "total": "16.4G",
    }


def test_gguf_is_downloaded_into_the_layout_verified_and_recorded_then_not_fetched_again(
    tmp_path, capsys, hub
):
    hub.repos[("unsloth/Qwen3-8B-GGUF", "main")] = {"Qwen3-8B-Q4_K_M.gguf": GGUF_BYTES, "README.md": b"card"}
    lib, nb = tmp_path / "models", tmp_path / "labbook.md"
    args = ["models", "--format", "gguf", "--library", str(lib), "--labbook", str(nb)]
    assert main(args) == 0
    out = capsys.readouterr().out
    path = lib / "unsloth" / "Qwen3-8B-GGUF" / "Qwen3-8B-Q4_K_M.gguf"
    assert path.read_bytes() == GGUF_BYTES
    assert hf_calls(tmp_path) == [
        [
            "download",
            "unsloth/Qwen3-8B-GGUF",
            "Qwen3-8B-Q4_K_M.gguf",
            "--local-dir",
            str(lib / "unsloth" / "Qwen3-8B-GGUF"),
        ]
    ]
    sha = hashlib.sha256(GGUF_BYTES).hexdigest()
    assert f"expected sha256 {sha}" in out and "the hub now publishes a different checksum" in out
    assert main(args) == 0
    assert "already present and verified" in capsys.readouterr().out
    assert len(hf_calls(tmp_path)) == 1
    recs = read_records(nb, "model-fetch", lambda o: o.get("record") == "model-fetch").records
    assert [(r["downloaded"], r["sha256"], r["sha256_from"], r["bytes"], r["path"]) for r in recs] == [
        (True, sha, "hub", len(GGUF_BYTES), str(path)),
        (False, sha, "hub", len(GGUF_BYTES), str(path)),
    ]
    assert recs[0]["repo"] == "unsloth/Qwen3-8B-GGUF" and recs[0]["file"] == "Qwen3-8B-Q4_K_M.gguf"


def test_checksum_mismatch_fails_moves_the_file_aside_and_records_nothing(tmp_path, capsys, hub):
    hub.repos[("unsloth/Qwen3-8B-GGUF", "main")] = {"Qwen3-8B-Q4_K_M.gguf": GGUF_BYTES}
    hub.published["Qwen3-8B-Q4_K_M.gguf"] = "0" * 64
    lib, nb = tmp_path / "models", tmp_path / "labbook.md"
    assert main(["models", "--format", "gguf", "--library", str(lib), "--labbook", str(nb)]) == 1
    out = capsys.readouterr().out
    got = hashlib.sha256(GGUF_BYTES).hexdigest()
    bad = lib / "unsloth" / "Qwen3-8B-GGUF" / "Qwen3-8B-Q4_K_M.gguf.corrupt"
    assert (
        f"FAIL checksum mismatch for Qwen3-8B-Q4_K_M.gguf: expected {'0' * 64}, got {got}; the download "
        f"is "
        f"kept as {bad} for inspection: delete it and run again"
    ) in out
    assert bad.is_file() and not bad.with_suffix("").exists()
    assert not nb.exists()


def test_without_the_hub_the_tables_checksum_is_used_and_says_so(tmp_path, capsys, monkeypatch, hub):
    lib = tmp_path / "models"
    path = lib / "unsloth" / "Qwen3-8B-GGUF" / "Qwen3-8B-Q4_K_M.gguf"
    path.parent.mkdir(parents=True)
    path.write_bytes(GGUF_BYTES)  # present, but not the real file: must not pass
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    assert main(["models", "--format", "gguf", "--library", str(lib)]) == 1
    out = capsys.readouterr().out
    assert "checking against the table's SHA-256" in out
    assert "does not match" in out and "moved aside to Qwen3-8B-Q4_K_M.gguf.corrupt" in out
    assert "FAIL hf download unsloth/Qwen3-8B-GGUF Qwen3-8B-Q4_K_M.gguf failed (exit 1)" in out


def test_multi_file_formats_checked_by_count_shards_and_config(tmp_path, capsys, hub):
    hub.repos[("Qwen/Qwen3-8B-AWQ", "main")] = awq_files()
    exl3 = {f"model-{i}.safetensors": b"x" for i in range(8)}
    exl3["config.json"] = json.dumps(
        {"quantization_config": {"quant_method": "exl3", "bits": 4.0, "head_bits": 6}}
    ).encode()
    exl3["README.md"] = b"card"
    hub.repos[("turboderp/Qwen3-8B-exl3", "4.0bpw")] = exl3
    lib, nb = tmp_path / "models", tmp_path / "labbook.md"
    assert (
        main(
            [
                "models",
                "--track",
                "n",
                "--format",
                "exl3",
                "--format",
                "awq",
                "--library",
                str(lib),
                "--labbook",
                str(nb),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "pass: 10 files (listed 10)" in out and "pass: config.json: quant_method exl3, bits 4.0" in out
    assert [
        "download",
        "turboderp/Qwen3-8B-exl3",
        "--revision",
        "4.0bpw",
        "--local-dir",
        str(lib / "turboderp" / "Qwen3-8B-exl3-4.0bpw"),
    ] in hf_calls(tmp_path)
    recs = read_records(nb, "model-fetch", lambda o: o.get("record") == "model-fetch").records
    assert [(r["format"], r["files"], r["revision"]) for r in recs] == [
        ("exl3", 10, "4.0bpw"),
        ("awq", 12, "main"),
    ]
    assert recs[1]["bytes"] == sum(len(b) for b in awq_files().values())
    # the wrong quantisation in config.json fails, naming what it found
    hub.repos[("Qwen/Qwen3-8B-AWQ", "main")] = awq_files(method="gptq")
    assert main(["models", "--format", "awq", "--library", str(tmp_path / "other")]) == 1
    assert 'config.json: "quant_method": "awq" not found (found \'gptq\')' in capsys.readouterr().out


def test_bf16_needs_its_five_shards(tmp_path, capsys, hub):
    files = {f"model-0000{i}-of-00004.safetensors": b"w" for i in range(1, 5)}
    files.update({f"f{i}.json": b"{}" for i in range(11)})
    hub.repos[("Qwen/Qwen3-8B", "main")] = files
    assert main(["models", "--format", "bf16", "--library", str(tmp_path / "m")]) == 1
    assert "4 safetensors shards (expected 5)" in capsys.readouterr().out


def test_unknown_repository_and_missing_cli_are_one_line_errors(tmp_path, capsys, monkeypatch, hub):
    assert main(["models", "--format", "mlx", "--library", str(tmp_path / "m")]) == 1
    out = capsys.readouterr().out
    assert "FAIL hf download mlx-community/Qwen3-8B-4bit failed (exit 1): Repository Not Found" in out
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["models", "--format", "awq", "--library", str(tmp_path / "m")]) == 1
    assert "FAIL hf is not on PATH: install the Hugging Face CLI" in capsys.readouterr().out
    assert main(["models", "--format", "nope", "--dry-run"]) == 2
    assert "unknown format 'nope'" in capsys.readouterr().err


FAKE_LEMONADE_PULL = """#!{python}
import json, os, sys
state = os.path.join(os.environ["TMPDIR_FOR_FAKE"], "lemonade-models.json")
models = json.load(open(state)) if os.path.exists(state) else []
with open(os.path.join(os.environ["TMPDIR_FOR_FAKE"], "lemonade.log"), "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1] == "pull":
    models.append(sys.argv[2])
    json.dump(models, open(state, "w"))
    print("downloading ... done")
elif sys.argv[1] == "list":
    for m in ["Qwen3-8B-GGUF"] + models:
        print(m)
"""


def test_lemonade_registers_the_exact_variant_under_a_user_name(tmp_path, capsys, monkeypatch):
    install_fake(tmp_path, monkeypatch, "lemonade", FAKE_LEMONADE_PULL)
    nb = tmp_path / "labbook.md"
    assert main(["models", "--format", "lemonade", "--labbook", str(nb)]) == 0
    calls = [json.loads(x) for x in (tmp_path / "lemonade.log").read_text().splitlines()]
    assert calls == [
        [
            "pull",
            "user.Qwen3-8B-Q4_K_M",
            "--checkpoint",
            "main",
            "unsloth/Qwen3-8B-GGUF:Q4_K_M",
            "--recipe",
            "llamacpp",
        ],
        ["list", "--downloaded"],
    ]
    rec = read_records(nb, "model-fetch", lambda o: o.get("record") == "model-fetch").records[0]
    assert rec["source"] == "lemonade" and rec["path"] == "user.Qwen3-8B-Q4_K_M"
    assert "user.Qwen3-8B-Q4_K_M listed among the downloaded models" in capsys.readouterr().out
