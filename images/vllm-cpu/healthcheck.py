"""The vllm-cpu container's healthcheck. vLLM answers /health before it can serve (a GGUF plugin
once passed /health and died on the first request), so the container counts as healthy only
once a real chat completion has returned tokens; after that first success (remembered per start of
the container) /health alone, so the check adds no requests to a running benchmark.
Standard library only: it runs with the image's Python, beside vLLM."""

import json
import sys
import urllib.request

BASE = "http://127.0.0.1:8000"
MARK = "/tmp/vllm-completed-once"


def container_start() -> str:
    """The start time of the container's first process (field 22 of /proc/1/stat): a restarted
    container must prove itself again."""
    return open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19]


def get(path: str) -> dict:
    with urllib.request.urlopen(BASE + path, timeout=5) as reply:
        return json.loads(reply.read() or b"{}")


def completion() -> int:
    model = get("/v1/models")["data"][0]["id"]
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 4,
        "temperature": 0,
    }
    request = urllib.request.Request(
        BASE + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=50) as reply:
        return int(json.loads(reply.read())["usage"]["completion_tokens"])


def main() -> int:
    started = container_start()
    try:
        with open(MARK) as f:
            if f.read() == started:
                urllib.request.urlopen(BASE + "/health", timeout=5).close()
                return 0
    except FileNotFoundError:
        pass
    tokens = completion()
    if tokens < 1:
        print("the completion returned no tokens")
        return 1
    with open(MARK, "w") as f:
        f.write(started)
    print(f"a completion returned {tokens} tokens")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # any failure is "not healthy", said in one line in docker inspect
        print(f"not ready: {exc.__class__.__name__}: {exc}")
        sys.exit(1)
