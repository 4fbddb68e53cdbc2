"""The Locust web UI in a real browser (headless Chromium driven by Selenium), against a practice
server that fails 20 % of chats with HTTP 500 and whose output token count is its own truth.

One test, in the order a person uses the UI: start a test from the form, read the header and the
Exact tab while it runs, stop, check the Exact tab against the server's own token counter, RESET,
run a second (smaller) test with NEW and check nothing of the first carried over, and check the
notebook holds one record per test. Screenshots are kept under the test's tmp dir (printed).
Skipped, with the reason, where Chromium, chromedriver or selenium are missing.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import time

import pytest
import requests

from harness.core.records import is_level
from harness.io.notebook import read_records
from tests.conftest import ROOT, free_port, kit_profile

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


@pytest.fixture
def web_ui(practice, tmp_path):
    profile = kit_profile(
        name="fail20",
        timing={"kind": "fixed", "ttft_s": TTFT_S, "itl_s": ITL_S},
        output={"length": {"kind": "fixed", "tokens": TOKENS}, "thinking_tokens": 0},
        faults={"error_500_share": FAIL_SHARE},
    )
    server = practice(profile)
    port = free_port()
    book = tmp_path / "labbook.md"
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "locustfiles/llm_user.py"),
        "--host",
        server.root,
        "--web-host",
        "127.0.0.1",
        "--web-port",
        str(port),
        "--stop-timeout",
        "30",
        "--max-tokens",
        str(TOKENS),
        "--labbook",
        str(book),
        "--label",
        "ui",
    ]
    with open(tmp_path / "locust.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=1).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.2)
    yield url, server, book
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


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


def start(driver, users: int) -> None:
    until(lambda: driver.find_elements(By.NAME, "userCount"), what="the start form")
    set_field(driver, "userCount", str(users))
    set_field(driver, "spawnRate", str(users))
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    until(lambda: "RUNNING" in header(driver), what="RUNNING in the header")


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


def test_web_ui_exact_tab_header_reset_and_records(browser, web_ui):
    url, server, book = web_ui
    tokens_before = predicted_tokens(server)
    browser.get(url)
    browser.shot("0-form")
    form_names = {e.get_attribute("name") for e in browser.find_elements(By.CSS_SELECTOR, "input, select")}
    assert not form_names & {"ttftP95Max", "failRatioMax", "labbook", "label"}, form_names

    # test 1: 8 users; the header's RPS and failure share against the chat requests only
    start(browser, 8)
    time.sleep(12)
    rows = exact_tab(browser)
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
    assert int(number(first["output tokens"])) == ok * TOKENS == predicted_tokens(server) - tokens_before
    ttft_p50, tpot_p50 = float(first["TTFT (s)"][1]), float(first["TPOT (s)"][1])
    assert TTFT_S <= ttft_p50 <= TTFT_S + 0.04 and ITL_S * 0.8 <= tpot_p50 <= ITL_S + 0.004
    share = failed / n
    assert abs(share - FAIL_SHARE) <= 3 * math.sqrt(FAIL_SHARE * (1 - FAIL_SHARE) / n), share
    assert number(first["failed: HTTP 500"]) == failed
    assert float(first["output tokens/s"][0]) > 0

    # RESET empties the Exact tab; the next test (NEW, 2 users) shows only its own samples
    click(browser, "RESET")
    until(lambda: exact_tab(browser).get("samples (finished requests)", ["x"])[0] == "0", what="an empty tab")
    click(browser, "NEW")
    start(browser, 2)
    time.sleep(4)
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
