"""The run report of a real run: a small track plan against the practice server (a baseline curve at
two levels, a prefix pair, the probe, summarise, compare, check, report), run by `harness track` in
its own process. ``report.md`` must render as a report with a Markdown renderer (tables as tables,
every image link a file beside it), and ``report.html`` must open in headless Chromium with its
tables present and its charts loaded from the file itself (the charts folder is moved away first).
The browser half is skipped, with the reason, where Chromium, chromedriver or selenium are missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from markdown_it import MarkdownIt

from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.slow

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report-run")
    plan = {
        "schema_version": 1,
        "name": "report-practice",
        "title": "Report from a practice-server run",
        "variables": {"PROMISE_S": 2.0, "HOST_DESC": "the test machine"},
        "sweep": {"requests": 8, "max_tokens": 16, "slo_ttft": 2.0, "slo_tpot": 0.1, "timeout": 60},
        "stages": [
            {
                "id": "practice",
                "engine": "practice",
                "settings": {"profile": "kit", "port": free_port()},
                "record": {"quant": "made-up (practice kit)", "context_length": 4096, "server_slots": 8},
                "steps": [
                    {"sweep": {"label": "practice-baseline", "concurrency": "1,4", "prompt_set": "mixed"}},
                    {"prefix-pair": {"label_prefix": "practice", "concurrency": "1", "requests": 3}},
                    "probe",
                    {"admission": {"from": "practice-baseline", "label": "practice-admission"}},
                ],
            },
            {"summarise": {"labels": ["practice-baseline"], "promise": "${PROMISE_S}"}},
            {"compare": [["practice-prefix-unique", "practice-prefix-shared"]]},
            {"check": {"allow_cpu": True}},
            "report",
        ],
    }
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    out = tmp / "run"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "track", str(path), "--run-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert (out / "report.md").is_file(), done.stdout + done.stderr
    print(f"run directory: {out}")
    return out


def steps(run_dir) -> dict[str, dict]:
    return {s["id"]: s for s in json.loads((run_dir / "manifest.json").read_text())["steps"]}


def test_report_md_of_a_real_run_renders_as_a_report(run_dir):
    text = (run_dir / "report.md").read_text()
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert "```" not in text and "<pre>" not in html  # nothing left as a terminal dump
    # headline, curve, comparison, single-user speed and features, validation, steps at least
    assert html.count("<table>") >= 7
    sections = re.findall(r"^## (.+)$", text, flags=re.M)
    assert sections[0] == "Headline"
    images = re.findall(r'<img src="([^"]+)" alt="([^"]*)"', html)
    assert {src for src, _ in images} >= {
        "charts/crowd.png",
        "charts/pareto.png",
        "charts/practice-baseline-tpot.png",
        "charts/practice-baseline-latency.png",
        "charts/practice-baseline-over-time.png",
    }
    assert all((run_dir / src).is_file() and not src.startswith("/") for src, _ in images)
    for leak in ("None", "['", "{'", "Traceback"):
        assert leak not in text, leak
    # the figures are the run's own: the headline's peak is the curve table's largest out tok/s
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| ")]
    peak = next(r for r in rows if r[0] == "practice-baseline")[2]
    curve = [r for r in rows if re.fullmatch(r"\d+", r[0]) and re.fullmatch(r"\d+/\d+", r[1])]
    assert [r[0] for r in curve] == ["1", "4"] and peak == max(curve, key=lambda r: float(r[2]))[2]
    # the tables state ITL and end-to-end tails, with units; the admission outcome is in the headline
    head = next(r for r in rows if r[:3] == ["c", "ok", "out tok/s"])
    assert {"ITL p50 (s)", "ITL p99 (s)", "e2e p50 (s)", "e2e p99 (s)", "TTFT p99 (s)"} <= set(head)
    admission = next(r for r in rows if r[0] == "practice-baseline")[6]
    assert re.match(r"c=\d+ \(mixed-long\): (within|breaks) the 2 s promise \(p95 TTFT \d", admission), (
        admission
    )
    assert "within the goodput objective" in admission
    assert sections.index("The course's lab sections") > sections.index("Curves, knees and operating points")
    # every step's final status, the report's own included
    report_row = next(r for r in rows if r[0] == "report")
    assert report_row[1] == "passed"
    assert not [r for r in rows if len(r) > 1 and r[1] == "running"]  # no step left running
    assert steps(run_dir)["practice/sweep:practice-baseline"]["status"] == "passed"


def open_in_chromium(html_file, shot) -> dict:
    """Open ``html_file`` in headless Chromium; what a reader sees: title, first heading, the
    tables (count, the first one's first cell), and each image's natural width (0: not loaded).
    Skips the calling test, with the reason, where Chromium or selenium are missing."""
    if not (CHROMIUM and DRIVER):
        pytest.skip("no headless Chromium here (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        driver.get(html_file.as_uri())
        tables = driver.find_elements(By.TAG_NAME, "table")
        seen = {
            "title": driver.title,
            "h1": driver.find_element(By.TAG_NAME, "h1").text,
            "tables": len(tables),
            "first_cell": tables[0].find_element(By.CSS_SELECTOR, "tbody tr td").text if tables else None,
            "image_widths": [
                driver.execute_script("return arguments[0].complete ? arguments[0].naturalWidth : 0", img)
                for img in driver.find_elements(By.TAG_NAME, "img")
            ],
        }
        driver.save_screenshot(str(shot))
        print(f"screenshot: {shot}")
        return seen
    finally:
        driver.quit()


def test_report_html_opens_in_a_browser_with_its_charts(run_dir, tmp_path):
    # the HTML file alone: copied away from its run directory, so nothing can load from charts/
    alone = tmp_path / "report.html"
    shutil.copy(run_dir / "report.html", alone)
    seen = open_in_chromium(alone, tmp_path / "report.png")
    assert seen["title"] == seen["h1"] == "Report from a practice-server run"
    md_tables = [x for x in (run_dir / "report.md").read_text().splitlines() if x.startswith("|--")]
    assert seen["tables"] == len(md_tables) >= 7
    assert seen["first_cell"] == "practice-baseline"  # the headline table comes first
    assert len(seen["image_widths"]) >= 2 and all(w > 0 for w in seen["image_widths"])


def test_the_admission_recommendation_is_its_own_record(run_dir):
    """Serving lab Task 8: the admission step's level written as its own record (schema-valid), and
    shown by summarise (--list, --label, --check), harness check and the report."""
    from harness.records.notebook import read_records

    notebook = run_dir / "labbook.md"
    recs = read_records(notebook, "admission", select=lambda o: o.get("record") == "admission").records
    assert len(recs) == 1, recs
    rec = recs[0]
    assert rec["label"] == "practice-admission" and rec["from"] == "practice-baseline"
    assert rec["method"] == "operating point" and rec["source_levels"] == [1, 4]
    step = steps(run_dir)["practice/admission:practice-admission"]
    if step["status"] == "skipped":  # no level met the objective on a loaded machine: said so
        assert rec["level"] is None and rec["verdict"] == "none" and rec["why"] == step["reason"]
    else:
        assert rec["level"] == step["result"]["admission_level"] in (1, 4)
        seen = rec["confirmed"]
        assert seen["concurrency"] == rec["level"] and seen["prompt_set"] == "mixed-long"
        assert rec["verdict"] == ("recommended" if seen["within_objective"] else "not confirmed")
        assert step["result"]["recommendation"] == rec["recommendation"]
        assert rec["recommendation"].startswith(
            f"admit at most {rec['level']} request(s) at once on the server"
        )

    def harness(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "harness.cli", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    listed = harness("summarise", "--labbook", str(notebook), "--list").stdout
    assert (
        "==> admission recommendation" in listed and f"practice-admission: {rec['recommendation']}" in listed
    )
    curve = harness("summarise", "--labbook", str(notebook), "--label", "practice-baseline").stdout
    assert rec["recommendation"] in curve
    check = harness("summarise", "--labbook", str(notebook), "--check").stdout
    verdict = "PASS" if rec["verdict"] == "recommended" else "WARN"
    assert re.search(rf"^    {verdict}\s+practice-admission: ", check, flags=re.M), check
    speed = harness("check", "--labbook", str(notebook), "--base-url", f"http://127.0.0.1:{free_port()}/v1")
    assert f"admission:   practice-admission: {rec['recommendation']}" in speed.stdout, speed.stdout
    text = (run_dir / "report.md").read_text()
    assert "## Admission recommendation" in text and rec["recommendation"] in text


def test_the_hand_over_after_the_stop_is_recorded_and_reported(run_dir):
    """The engines lab's hand-over: after the practice server's stop the runner read whether its
    memory came back (its processes gone, the machine's MemAvailable against before its start)."""
    engine = json.loads((run_dir / "manifest.json").read_text())["engines"]["practice"]
    found = engine["memory_release"]
    own = found["readings"][0]
    assert (own["source"], own["alive"], own["released"]) == ("engine", 0, True)
    assert "mem_available_mb" in {r["source"] for r in found["readings"]}
    assert found["held_mb"] == engine["memory_mb_at_stop"] and found["tolerance_mb"] >= 512
    text = (run_dir / "report.md").read_text()
    assert "After each stop (the hand-over to the next engine):" in text
    assert (
        "- practice: memory released (" if found["released"] else "- practice: **WARN** memory not"
    ) in text
