"""The Locust web UI in a real browser (headless Chromium driven by Selenium), against practice
servers whose timing and token counts are their own truth.

* In the order a person uses the UI, against a server that fails 20 % of chats with HTTP 500:
  start a test from the form, read the header and the Exact tab while it runs, stop, check the
  Exact tab against the server's own token counter, RESET, run a second (smaller) test with NEW
  and check nothing of the first carried over, and check the notebook holds one record per test.
* START with a wrong model name, a closed port and a web server that is no OpenAI API: refused on
  the form in one line with the reason, fewer than 10 requests reaching the server (counted by a
  proxy in front of it) and no load request; then a good start, the Live charts tab with its
  labelled axes, a change of user count with EDIT (two phases in the Exact tab), and RESET
  emptying the charts.
* A server that goes away during a test: the load stops by itself and the Exact tab says why.

Screenshots are kept under the test's tmp dir (printed). Skipped, with the reason, where
Chromium, chromedriver or selenium are missing.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests

from harness.records.base import is_level
from harness.records.notebook import read_records
from tests.conftest import ROOT, free_port, kit_profile
from tests.integration.deadlines import START_S

pytestmark = pytest.mark.slow

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (pip install -e .[test])"
)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    pytest.skip(
        "no headless Chromium here (apt-get install chromium chromium-driver)", allow_module_level=True
    )

TOKENS = 16  # every reply: fixed length, fixed timing (the server's truth)
TTFT_S, ITL_S = 0.05, 0.01
FAIL_SHARE = 0.2


@pytest.fixture
def browser(tmp_path):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(arg)
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.implicitly_wait(0)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    driver.shot = lambda name: driver.save_screenshot(str(shots / f"{name}.png"))
    yield driver
    driver.shot("last")
    print(f"screenshots: {shots}")
    driver.quit()


def exact_profile(name: str, **changes) -> dict:
    return kit_profile(
        name=name,
        timing={"kind": "fixed", "ttft_s": TTFT_S, "itl_s": ITL_S},
        output={"length": {"kind": "fixed", "tokens": TOKENS}, "thinking_tokens": 0},
        **changes,
    )


def start_web_ui(tmp_path, host: str, *extra: str):
    """Locust's web UI with the harness's users on a free port; (url, process)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "locustfiles/llm_user.py"),
        "--host",
        host,
        "--web-host",
        "127.0.0.1",
        "--web-port",
        str(port),
        "--stop-timeout",
        "30",
        "--max-tokens",
        str(TOKENS),
        *extra,
    ]
    with open(tmp_path / f"locust-{port}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S  # Locust's start on a loaded machine
    while True:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.2)
        assert time.monotonic() < deadline and proc.poll() is None, "the web UI never answered"
    return url, proc


def stop_process(proc) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def web_ui(practice, tmp_path):
    server = practice(exact_profile("fail20", faults={"error_500_share": FAIL_SHARE}))
    book = tmp_path / "labbook.md"
    url, proc = start_web_ui(tmp_path, server.root, "--labbook", str(book), "--label", "ui")
    yield url, server, book
    stop_process(proc)


class CountingProxy:
    """A TCP proxy in front of a server that counts the HTTP requests passing through it."""

    def __init__(self, port: int) -> None:
        self.target, self.requests = port, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src, dst, count: bool) -> None:
        try:
            while data := src.recv(65536):
                if count:
                    with self.lock:
                        self.requests += sum(data.count(m) for m in (b"GET /", b"POST /"))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def web_server(tmp_path):
    """A plain web server (python -m http.server): HTML, and 501 to a POST."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    until(lambda: _answers(url), 15, "the web server")
    yield url
    stop_process(proc)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


def until(condition, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def set_field(driver, name: str, value: str) -> None:
    field = driver.find_element(By.NAME, name)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(value)


def start(driver, users: int) -> int:
    """START with ``users``; the number of proof requests that succeeded (1: START proves the
    endpoint with one request, which a server failing a share of requests may need to retry)."""
    until(lambda: driver.find_elements(By.NAME, "userCount"), what="the start form")
    set_field(driver, "userCount", str(users))
    set_field(driver, "spawnRate", str(users))
    for _ in range(3):
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        time.sleep(1)  # the proof takes a few requests; a refusal replaces the form's last message
        until(lambda: "RUNNING" in header(driver) or "proof request failed" in alert(driver), what="START")
        if "RUNNING" in header(driver):
            return 1
    raise AssertionError(f"START refused three times: {alert(driver)}")


def header(driver) -> str:
    return driver.execute_script("const h=document.querySelector('header');return h?h.innerText:'';")


def header_value(driver, label: str) -> str:
    words = [w.strip() for w in header(driver).split("\n") if w.strip()]
    return words[words.index(label) + 1]


def buttons(driver, text: str) -> int:
    """How many buttons read ``text`` (the UI upper-cases labels with CSS)."""
    script = (
        "return [...document.querySelectorAll('button')]"
        ".filter(b=>b.innerText.trim().toUpperCase()===arguments[0]).length;"
    )
    return driver.execute_script(script, text)


def click(driver, text: str) -> None:
    until(lambda: buttons(driver, text), what=f"the {text} button")
    driver.execute_script(
        "[...document.querySelectorAll('button')].find(b=>b.innerText.trim().toUpperCase()===arguments[0]).click();",
        text,
    )


def exact_tab(driver) -> dict[str, list[str]]:
    """The Exact tab's rows by metric (value, p50, p90, p95, p99, mean), read from the page in one
    script (the table re-renders every refresh, so elements found one by one go stale)."""
    driver.execute_script(
        "const t=[...document.querySelectorAll('[role=tab]')].find(e=>/exact/i.test(e.textContent));"
        "if(t&&t.getAttribute('aria-selected')!=='true')t.click();"
    )
    cells = driver.execute_script(
        "return [...document.querySelectorAll('table tbody tr')]"
        ".map(tr=>[...tr.querySelectorAll('td')].map(td=>td.innerText.trim()));"
    )
    return {row[0]: row[1:] for row in cells if row}


def stable_exact(driver) -> dict[str, list[str]]:
    """Two equal reads in a row (the table refreshes row by row every couple of seconds)."""
    last = None
    for _ in range(30):
        rows = exact_tab(driver)
        if rows and rows == last:
            return rows
        last = rows
        time.sleep(1.0)
    raise AssertionError("the Exact tab kept changing after the test stopped")


def predicted_tokens(server) -> float:
    for line in server.metrics().splitlines():
        if line.startswith("llamacpp:tokens_predicted_total "):
            return float(line.split()[1])
    raise AssertionError("no llamacpp:tokens_predicted_total in /metrics")


def number(cells: list[str]) -> float:
    return float(cells[0])


def finished(rows: dict, at_least: int) -> bool:
    """Whether the Exact tab counts ``at_least`` finished requests (its cells may still be empty)."""
    cells = rows.get("samples (finished requests)") or [""]
    return cells[0].replace(".", "", 1).isdigit() and float(cells[0]) >= at_least


def settled(rows: dict, browser) -> bool:
    """Whether the test has run 8 s by the Exact tab's wall clock and the header shows an RPS."""
    wall = (rows.get("wall clock (s)") or [""])[0]
    rps = header_value(browser, "RPS")
    return wall.replace(".", "", 1).isdigit() and float(wall) >= 8 and float(rps or 0) > 0


def test_web_ui_exact_tab_header_reset_and_records(browser, web_ui):
    url, server, book = web_ui
    tokens_before = predicted_tokens(server)
    browser.get(url)
    browser.shot("0-form")
    form_names = {e.get_attribute("name") for e in browser.find_elements(By.CSS_SELECTOR, "input, select")}
    assert not form_names & {"ttftP95Max", "failRatioMax", "labbook", "label"}, form_names

    # test 1: 8 users; the header's RPS and failure share against the chat requests only
    proofs = start(browser, 8)
    # 100 finished requests over at least 8 s of the test's own wall clock (Locust's header RPS is a
    # rolling figure that reads 0 for its first seconds): waited for, not slept
    rows = until(
        lambda: (r := exact_tab(browser)) and finished(r, 100) and settled(r, browser) and r,
        120,
        "100 finished requests and a header RPS",
    )
    rps, failures = float(header_value(browser, "RPS")), float(header_value(browser, "Failures").rstrip("%"))
    browser.shot("1-running")
    stats = requests.get(url + "/stats/requests", timeout=5).json()
    chat = next(s for s in stats["stats"] if s["name"] == "chat")
    assert stats["fail_ratio"] == pytest.approx(chat["num_failures"] / chat["num_requests"])
    assert abs(failures - 100 * chat["num_failures"] / chat["num_requests"]) <= 2, (failures, chat)
    done = number(rows["samples (finished requests)"])
    rate = done / number(rows["wall clock (s)"])
    assert 0.6 * rate <= rps <= 1.4 * rate, (rps, rate)  # the METRIC rows would make it about 2.6x

    click(browser, "STOP")
    until(lambda: buttons(browser, "NEW"), 40, "NEW after Stop")
    first = stable_exact(browser)
    browser.shot("2-stopped-exact")
    n, ok, failed = (int(number(first[k])) for k in ("samples (finished requests)", "succeeded", "failed"))
    assert n == ok + failed and n >= 100
    # the server's truth: every token it sent was counted, its timing was read back
    # (and START's one proof request, whose tokens the server counted too)
    proved = int(number(first["output tokens"])) + proofs * TOKENS
    assert (
        int(number(first["output tokens"])) == ok * TOKENS
        and proved == predicted_tokens(server) - tokens_before
    )
    ttft_p50, tpot_p50 = float(first["TTFT (s)"][1]), float(first["TPOT (s)"][1])
    # The server's own timing (0.05 s, then 0.01 s a token) read back in seconds. The bounds allow
    # a loaded machine's client (8 users and Chromium on 2 cores) tenths of a second, and are far
    # from what a wrong cell would read: milliseconds (50, 10), or another column's figure (TTFT
    # 0.05 in TPOT's place, a whole answer's 0.2 s).
    assert TTFT_S <= ttft_p50 < TTFT_S + 0.5 and ITL_S * 0.8 <= tpot_p50 < ITL_S * 3
    share = failed / n
    assert abs(share - FAIL_SHARE) <= 3 * math.sqrt(FAIL_SHARE * (1 - FAIL_SHARE) / n), share
    assert number(first["failed: HTTP 500"]) == failed
    assert float(first["output tokens/s"][0]) > 0

    # RESET empties the Exact tab; the next test (NEW, 2 users) shows only its own samples
    click(browser, "RESET")
    until(lambda: exact_tab(browser).get("samples (finished requests)", ["x"])[0] == "0", what="an empty tab")
    click(browser, "NEW")
    start(browser, 2)
    until(lambda: finished(exact_tab(browser), 10), 60, "the second test's first requests")
    click(browser, "STOP")
    until(lambda: buttons(browser, "NEW"), 40, "NEW after Stop")
    second = stable_exact(browser)
    browser.shot("3-second-test")
    chat = next(
        s for s in requests.get(url + "/stats/requests", timeout=5).json()["stats"] if s["name"] == "chat"
    )
    n2 = int(number(second["samples (finished requests)"]))
    assert 0 < n2 == chat["num_requests"] < n

    records = read_records(book, "level", select=is_level).records
    assert [(r["concurrency"], r["requests"]) for r in records] == [(8, n), (2, n2)]
    assert all(r["base_url"] == server.root for r in records)
    assert records[0]["mean_in_flight"] <= 8.05 and records[1]["mean_in_flight"] <= 2.05


def open_parameters(driver) -> None:
    """Unfold the form's folded sections (the harness's options are under "Custom parameters")."""
    until(lambda: driver.find_elements(By.NAME, "userCount"), what="the start form")
    driver.execute_script("[...document.querySelectorAll('[aria-expanded=false]')].forEach(e=>e.click())")
    until(lambda: driver.find_element(By.NAME, "model").is_displayed(), what="the model field")


def submit(driver, users: int) -> None:
    set_field(driver, "userCount", str(users))
    set_field(driver, "spawnRate", str(users))
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def alert(driver) -> str:
    return driver.execute_script(
        "return [...document.querySelectorAll('[role=alert]')].map(e=>e.innerText).join(' | ');"
    )


def refusal(driver, words: str) -> str:
    return until(lambda: words in alert(driver) and alert(driver), 30, f"the form's refusal ({words})")


def chat_requests(url: str) -> int:
    stats = requests.get(url + "/stats/requests", timeout=5).json()["stats"]
    return sum(s["num_requests"] for s in stats if s["name"] == "chat")


def live_charts(driver) -> dict:
    """The Live charts tab as drawn: charts, drawn series, axis labels, y tick labels, empty note."""
    driver.execute_script(
        "const t=[...document.querySelectorAll('[role=tab]')].find(e=>e.textContent.trim()==='Live charts');"
        "if(t&&t.getAttribute('aria-selected')!=='true')t.click();"
    )
    return driver.execute_script(
        "const e=document.getElementById('harness-live-charts');if(!e)return null;"
        "return {charts:[...e.querySelectorAll('svg')].map(s=>s.dataset.chart),"
        "series:[...e.querySelectorAll('path.series')].map(p=>p.dataset.series),"
        "x:[...e.querySelectorAll('.axis-label.x')].map(t=>t.textContent),"
        "y:[...e.querySelectorAll('.axis-label.y')].map(t=>t.textContent),"
        "yticks:[...e.querySelectorAll('.tick.y')].map(t=>t.textContent),"
        "empty:!!e.querySelector('.harness-empty')};"
    )


def test_start_refuses_a_bad_endpoint_then_live_charts_phases_and_reset(
    browser, practice, web_server, tmp_path
):
    server = practice(exact_profile("exact"))
    proxy = CountingProxy(server.port)
    host = f"http://127.0.0.1:{proxy.port}"
    labbook = tmp_path / "labbook.md"
    url, proc = start_web_ui(tmp_path, host, "--labbook", str(labbook), "--label", "ui-phases")
    try:
        browser.get(url)
        open_parameters(browser)
        browser.shot("0-form")

        # a wrong model name: the server's own reason on the form, a handful of requests, no load
        set_field(browser, "model", "no-such-model")
        submit(browser, 2)
        said = refusal(browser, "does not exist")
        browser.shot("1-wrong-model")
        assert "The model `no-such-model` does not exist" in said and "no load was sent" in said
        assert 0 < proxy.requests < 10, proxy.requests
        assert "RUNNING" not in header(browser)
        # a closed port, then a web server that is no OpenAI API: refused the same way
        set_field(browser, "host", f"http://127.0.0.1:{free_port()}")
        submit(browser, 2)
        assert "start the server or fix the Host field" in refusal(browser, "nothing answers at")
        set_field(browser, "host", web_server + "/v1")
        submit(browser, 2)
        refusal(browser, "not an OpenAI-compatible server")
        browser.shot("2-not-openai")
        assert chat_requests(url) == 0 and "RUNNING" not in header(browser)

        # a good start (the host given with /v1), 4 users; the charts tab draws with units
        set_field(browser, "host", host + "/v1")
        set_field(browser, "model", "local-chat")
        submit(browser, 4)
        until(lambda: "RUNNING" in header(browser), what="RUNNING in the header")
        drawn = until(lambda: (c := live_charts(browser)) and "ttft_p95_s" in c["series"] and c, 30, "charts")
        browser.shot("3-live-charts")
        assert drawn["charts"] == ["tokens", "in_flight", "ttft", "tpot", "itl"]
        assert drawn["x"] == ["time since the test started (s)"] * 5
        assert drawn["y"] == ["tokens/s", "requests", "s", "s", "s"]
        assert float(drawn["yticks"][2]) > 0 and not drawn["empty"]  # the tokens/s axis' top tick
        assert {"output_tokens_per_s", "in_flight", "tpot_p50_s", "itl_p50_s"} <= set(drawn["series"])
        rows = exact_tab(browser)
        assert rows["chat URL"][0] == f"{host}/v1/chat/completions"  # not /v1/v1

        # EDIT to 2 users: the Exact tab shows both phases
        click(browser, "EDIT")
        until(lambda: buttons(browser, "UPDATE"), what="the EDIT form")
        field = next(f for f in browser.find_elements(By.NAME, "userCount") if f.is_displayed())
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.DELETE)
        field.send_keys("2")
        click(browser, "UPDATE")
        second = "phase 2 (2 users): samples (finished requests)"
        rows = until(
            lambda: (r := exact_tab(browser)).get(second, ["0"])[0] not in ("0", "") and r, 40, "2 phases"
        )
        browser.shot("4-two-phases")
        assert int(number(rows["phase 1 (4 users): samples (finished requests)"])) > 0
        assert "phase 2 (2 users): TTFT (s)" in rows and "samples (finished requests)" not in rows

        # STOP: the notebook gets one level record per phase, each at its own user count
        click(browser, "STOP")
        until(lambda: buttons(browser, "NEW"), 40, "NEW after Stop")
        (first, second_level) = until(
            lambda: labbook.is_file() and len(r := read_records(labbook, "level").records) == 2 and r, 20
        )
        assert (first["label"], first["concurrency"], second_level["concurrency"]) == ("ui-phases", 4, 2)
        assert first["requests"] > 0 and second_level["requests"] > 0
        # RESET: the charts empty (the Exact tab too)
        click(browser, "RESET")
        empty = until(
            lambda: (c := live_charts(browser)) and c["empty"] and not c["series"] and c, 20, "empty"
        )
        browser.shot("5-reset-charts")
        assert empty["charts"] == ["tokens", "in_flight", "ttft", "tpot", "itl"]  # axes still drawn
        assert exact_tab(browser).get("samples (finished requests)", ["x"])[0] == "0"
    finally:
        stop_process(proc)
        proxy.close()


def test_the_load_stops_by_itself_when_every_request_fails(browser, practice, tmp_path):
    server = practice(exact_profile("exact"))
    url, proc = start_web_ui(tmp_path, server.root)
    try:
        browser.get(url)
        start(browser, 4)
        until(lambda: chat_requests(url) > 0, 30, "the first requests")
        server.stop()  # the server goes away: every request is refused from now on
        until(lambda: buttons(browser, "NEW"), 30, "the test stopping by itself")
        rows = exact_tab(browser)
        browser.shot("6-stopped-by-itself")
        why = rows["stopped because"][0]
        assert why.startswith("stopped sending: the last ") and "Connection refused" in why, why
        failed = int(number(rows["failed"]))
        assert 10 <= failed < 1000, failed  # not thousands: it stopped within a few hundred
        time.sleep(2)
        assert int(number(stable_exact(browser)["failed"])) == failed  # and sent nothing more
        logs = requests.get(url + "/logs", timeout=5).json()["master"]  # the Logs tab says it too
        assert any(why in line for line in logs), logs[-5:]
    finally:
        stop_process(proc)
