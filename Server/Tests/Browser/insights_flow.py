"""A product's Insights page in a real browser, on a history of 30 days.

Run by KeylightCLITests/InsightsBrowserTests against a live `keylight serve` on the SQLite file
KEYLIGHT_DB (admin token in KEYLIGHT_ADMIN_TOKEN, a dashboard user KEYLIGHT_EMAIL/KEYLIGHT_PASSWORD).
The past is written into the database as the server itself would have (one `device_days` row per
device and day, the funnel's cohort counts, converted installs); today comes through the SDK API as
the hosted clients send it. The page's roll-up turns the past into its daily series. With
KEYLIGHT_SCREENSHOTS set, it saves docs/screenshots/insights.png. Exits non-zero on the first
failed check.
"""
import csv
import io
import json
import os
import signal
import sqlite3
import sys
import time
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import browser_support
from browser_support import check, shot

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
EMAIL = os.environ["KEYLIGHT_EMAIL"]
PASSWORD = os.environ["KEYLIGHT_PASSWORD"]
DB = os.environ["KEYLIGHT_DB"]
DAY = 86400


def admin(method, path, body=None):
    return browser_support.admin(BASE, TOKEN, method, path, body)


def sdk(action, body, sdk_key):
    request = urllib.request.Request(BASE + "/acme/notes/" + action, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json; charset=utf-8", "X-Keylight-SDK-Key": sdk_key})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def seed_history(today):
    """30 days of devices: 2.0 fading as 2.1 arrives, then 2.2; macOS versions; keyless installs."""
    with sqlite3.connect(DB, timeout=30) as db:
        rows = []
        for back in range(30, 0, -1):
            day = today - back
            for device in range(40):
                if (device + back) % 3 == 0:
                    continue  # not every device every day
                version = "2.0" if back > 20 - device % 10 else ("2.1" if back > 8 else "2.2")
                os_version = ["14.7", "15.1", "15.2"][device % 3]
                kind = "keyless" if device >= 30 else "licensed"
                rows.append(("acme", "notes", day, kind, "hist-%d" % device, version, "0.12.1", "swift", "macOS", os_version,
                             "arm64" if device % 4 else "x86_64", "5-8", "16-32GB"))
        db.executemany("INSERT INTO device_days (tenant_id, product_id, day, kind, device_id, app_version, sdk_version, sdk, platform, "
                       "os_version, arch, cpu_cores, memory) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        # The funnel's cohorts: 6 installs a day, 4 of them trials; 5 conversions of those cohorts.
        db.executemany("INSERT INTO insights_funnel_daily (tenant_id, product_id, day, keyless_installs, trials) VALUES (?,?,?,?,?)",
                       [("acme", "notes", today - back, 6, 4) for back in range(29, 0, -1)])
        db.executemany("INSERT INTO keyless_installs (tenant_id, product_id, instance_id, state, first_seen_at, last_seen_at, converted_license_id, "
                       "converted_at) VALUES (?,?,?,?,?,?,?,?)",
                       [("acme", "notes", "conv-%d" % n, "trial", (today - 20 + n) * DAY, (today - 20 + n) * DAY, "lic", (today - 20 + n) * DAY + (n + 2) * DAY)
                        for n in range(5)])


def main():
    signal.signal(signal.SIGALRM, lambda *_: (print("FAILED: timed out", file=sys.stderr), os._exit(2)))
    signal.alarm(180)
    admin("POST", "/tenants", {"id": "acme", "name": "Acme Software"})
    sdk_key = admin("POST", "/tenants/acme/products", {"id": "notes", "name": "Notes", "key_prefix": "NOTE", "trial_duration_days": 14, "free_tier_enabled": True})["sdk_key"]
    admin("POST", "/tenants/acme/products/notes/key-types", {"id": "pro", "display_name": "Pro", "activation_limit": 3, "duration_days": None, "fallback_access": False, "entitlements": ["pro"]})
    today = int(time.time()) // DAY
    seed_history(today)
    # Today, through the SDK API: the C# client on Windows, the Swift SDK on macOS, a keyless beacon, and one
    # license whose device went quiet 40 days ago.
    key = admin("POST", "/tenants/acme/products/notes/licenses", {"key_type_id": "pro", "customer_email": "ada@example.com"})["license_key"]
    sdk("activate", {"license_key": key, "instance_name": "DESKTOP-7Q", "app_version": "2.2", "sdk_version": "0.5.0", "platform": "windows", "sdk": "csharp",
                     "cpu_cores": "5-8", "memory": "16-32GB", "os_version": "10.0.22631", "arch": "x86_64", "sdk_trial_duration_days": 14}, sdk_key)
    sdk("activate", {"license_key": key, "instance_name": "Studio", "machine_hash": "m-studio", "app_version": "2.2", "sdk_version": "0.12.1", "sdk": "swift",
                     "platform": "macOS", "os_version": "15.2", "arch": "arm64", "cpu_cores": "9-16", "memory": "32-64GB", "free_tier_instance_id": "beacon-1"}, sdk_key)
    sdk("keyless", {"instance_id": "beacon-2", "state": "trial", "app_version": "2.2", "platform": "macOS", "sdk": "swift", "os_version": "15.2"}, sdk_key)
    quiet = admin("POST", "/tenants/acme/products/notes/licenses", {"key_type_id": "pro", "customer_email": "quiet@example.com"})
    sdk("activate", {"license_key": quiet["license_key"], "instance_name": "Old Mac", "machine_hash": "m-old"}, sdk_key)
    with sqlite3.connect(DB, timeout=30) as db:
        db.execute("UPDATE instances SET activated_at = ?, last_validated_at = ? WHERE machine_hash = 'm-old'", ((today - 40) * DAY, (today - 40) * DAY))
    time.sleep(2)  # the activity buffer writes once a second

    driver = browser_support.browser(downloads=os.path.join(os.environ["KEYLIGHT_WORKDIR"], "downloads"))
    try:
        driver.get(BASE + "/dashboard/login")
        form = driver.find_element(By.CSS_SELECTOR, "form[method=post][action$='/dashboard/login']")
        form.find_element(By.NAME, "email").send_keys(EMAIL)
        form.find_element(By.NAME, "password").send_keys(PASSWORD)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: driver.current_url.rstrip("/").endswith("/dashboard"), "signed in")

        driver.get(BASE + "/dashboard/t/acme/p/notes")
        driver.find_element(By.ID, "insights-link").click()
        check(lambda: driver.current_url.split("?")[0].endswith("/dashboard/t/acme/p/notes/insights"), "Insights opens from the product page")
        table = lambda section: [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
                                 for row in driver.find_elements(By.CSS_SELECTOR, "#%s tbody tr" % section)]
        # 40 devices of the history, the two activated today, today's beacon and the quiet license's device.
        check(lambda: sum(int(row[1]) for row in table("devices")) == 40 + 2 + 1 + 1, "each device counted once over the 30 days")
        # Each by the version it sent last: every device of the history has moved to 2.2.
        check(lambda: [row[:2] for row in table("devices")] == [["2.2", "43"], ["(not sent)", "1"]], "devices are listed by the app version they run now")
        chart = driver.find_element(By.CSS_SELECTOR, "#devices svg.stacked")
        legend = [text.text for text in chart.find_elements(By.CSS_SELECTOR, "text.legend")]
        check(lambda: set(legend) >= {"2.0", "2.1", "2.2"}, "the series over the month is stacked by version, with a legend")
        fills = {rect.get_attribute("fill") for rect in chart.find_elements(By.CSS_SELECTOR, "rect[fill^='url(']")}
        check(lambda: len(fills) >= 3, "each version has a fill of its own (a pattern, not only a colour)")
        check(lambda: len(chart.find_elements(By.CSS_SELECTOR, "rect title")) > 30, "bars for the days, each with its count")
        funnel = {row[0]: row[1] for row in table("funnel")}
        check(lambda: funnel["Keyless installs"] == str(29 * 6 + 2) and funnel["Trials"] == str(29 * 4 + 1), "the funnel counts the cohorts' installs and trials")
        check(lambda: funnel["Conversions"] == "6", "conversions: five from the history and the activation naming its install today")
        check(lambda: funnel["Median days to convert"] == "3.5", "the median time to convert (0, 2, 3, 4, 5 and 6 days)")
        quiet_rows = table("quiet")
        check(lambda: len(quiet_rows) == 1 and quiet_rows[0][1] == "quiet@example.com", "the license whose device went quiet is listed")
        shot(driver, "insights")

        # By OS version, over the last week, through the form.
        Select(driver.find_element(By.NAME, "by")).select_by_value("os_version")
        Select(driver.find_element(By.NAME, "window")).select_by_value("1")
        driver.find_element(By.CSS_SELECTOR, "#insights-range button[type=submit]").click()
        check(lambda: "by=os_version" in driver.current_url and "window=1" in driver.current_url, "the form asks again by OS version")
        check(lambda: {row[0] for row in table("devices")} >= {"14.7", "15.1", "15.2", "10.0.22631"}, "devices are listed by OS version")
        check(lambda: "(not sent)" in {row[0] for row in table("devices")}, "a device that sent no OS version is counted as not sent")

        # The CSV of the same table.
        csv_url = driver.find_element(By.CSS_SELECTOR, "#devices a[href*='table=devices']").get_attribute("href")
        cookies = "; ".join("%s=%s" % (c["name"], c["value"]) for c in driver.get_cookies())
        with urllib.request.urlopen(urllib.request.Request(csv_url, headers={"Cookie": cookies}), timeout=10) as response:
            rows = list(csv.reader(io.StringIO(response.read().decode())))
        page = {row[0]: row[1] for row in table("devices")}
        check(lambda: rows[0] == ["os_version", "devices", "licensed", "keyless"] and {row[0] or "(not sent)": row[1] for row in rows[1:]} == page,
              "the CSV export has the page's rows")

        # A range the other way round is refused, and says why.
        driver.get(BASE + "/dashboard/t/acme/p/notes/insights?from=2026-11-20&to=2026-11-01")
        check(lambda: "from must not be after to" in driver.page_source, "a reversed range is refused with its reason")
    finally:
        driver.quit()
    print("insights flow passed")


if __name__ == "__main__":
    main()
