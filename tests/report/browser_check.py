#!/usr/bin/python3
"""Opens hpdl report pages in a real headless browser (Debian's chromium through
chromedriver) from file:// URLs and checks what a reader would see: no console error, no
network request beyond the page itself, every chart drew marks, the table rows expected,
and a whole-page screenshot that is not blank.

Usage: browser_check.py PAGE.html [--layers N] [--charts NAME,NAME...] [--text TEXT]...
                        [--zoom] [--screenshot OUT.png]
Every chart on the page must have drawn marks; --charts names those that must be there.
Prints one line per check; exit 1 on the first failure, 77 when no browser is installed.
"""
import argparse
import json
import os
import shutil
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--layers", type=int, help="rows the per-layer table must have")
    ap.add_argument("--charts", default="", help="chart names that must be drawn")
    ap.add_argument("--text", action="append", default=[], help="text the page must show")
    ap.add_argument("--zoom", action="store_true",
                    help="the timeline's zoom in / out / whole window buttons move its range")
    ap.add_argument("--screenshot")
    a = ap.parse_args()
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not os.path.exists(driver_path):
        print("SKIP: no chromedriver (apt install chromium chromium-driver python3-selenium)")
        sys.exit(77)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--no-first-run", "--disable-extensions"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        url = "file://" + os.path.abspath(a.page)
        driver.get(url)
        ready = driver.execute_script("return document.body.dataset.ready")
        errors = driver.execute_script("return document.body.dataset.errors")
        console = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        if console:
            fail("console errors: " + "; ".join(e["message"] for e in console))
        if errors or ready != "1":
            fail("the page's script did not finish (ready=%s, errors=%s)" % (ready, errors))
        print("ok: loaded from %s with no console error" % url)
        requests = []
        for entry in driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg.get("method") == "Network.requestWillBeSent":
                requests.append(msg["params"]["request"]["url"])
        other = [u for u in requests if u != url and not u.startswith("data:")]
        if other:
            fail("network requests besides the page: " + ", ".join(other[:5]))
        print("ok: no request besides the page itself (%d seen)" % len(requests))
        marks = driver.execute_script(
            "return [...document.querySelectorAll('[data-chart]')]"
            ".map(e => [e.dataset.chart, +e.dataset.marks])")
        if not marks and a.charts:
            fail("no chart on the page")
        empty = [n for n, m in marks if m <= 0]
        if empty:
            fail("charts without marks: " + ", ".join(empty))
        names = {n for n, _ in marks}
        for want in filter(None, a.charts.split(",")):
            if want not in names:
                fail("chart '%s' is not on the page (it has: %s)" % (want, ", ".join(sorted(names))))
        print("ok: %d charts drew marks: %s" % (len(marks), ", ".join("%s %d" % (n, m) for n, m in marks)))
        if a.layers is not None:
            rows = driver.execute_script(
                "const s = document.querySelector('#layers table'); "
                "return s ? s.querySelectorAll('tbody tr').length : -1")
            if rows != a.layers:
                fail("the per-layer table has %d rows, the model %d layers" % (rows, a.layers))
            print("ok: the per-layer table has a row for each of the %d layers" % rows)
        if a.zoom:
            rng = ("const c = Chart.getChart(document.querySelector('[data-chart=timeline] canvas'));"
                   " return [c.scales.x.min, c.scales.x.max];")
            click = "document.querySelectorAll('#timeline .controls button')[%d].click();"
            whole = driver.execute_script(rng)
            driver.execute_script(click % 0)
            zoomed = driver.execute_script(rng)
            driver.execute_script(click % 2)
            back = driver.execute_script(rng)
            w0, w1 = whole[1] - whole[0], zoomed[1] - zoomed[0]
            if not (abs(w1 - w0 / 2) < 1e-6 * w0 and back == whole):
                fail("the timeline's zoom: %s, zoomed in %s, whole again %s" % (whole, zoomed, back))
            print("ok: the timeline zooms in (%.3f -> %.3f ms wide) and back" % (w0, w1))
        body = driver.execute_script("return document.body.innerText")
        for t in a.text:
            if t not in body:
                fail("the page does not say '%s'" % t)
            print("ok: the page says '%s'" % t)
        if a.screenshot:
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1280, min(max(height, 900), 12000))
            driver.save_screenshot(a.screenshot)
            from PIL import Image
            img = Image.open(a.screenshot).convert("L")
            lo, hi = img.getextrema()
            colours = len(img.getcolors(1 << 16) or [])
            if hi - lo < 64 or colours < 16:
                fail("the screenshot is blank (grey levels %d..%d, %d shades)" % (lo, hi, colours))
            print("ok: screenshot %s, %dx%d, %d shades" % (a.screenshot, img.size[0], img.size[1], colours))
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
