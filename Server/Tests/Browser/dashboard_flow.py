"""The dashboard in a real browser (headless Chromium driven by selenium).

Run by KeylightCLITests/DashboardBrowserTests against a live `keylight serve`; the test passes the
server's URL and a dashboard user in the environment. With KEYLIGHT_SCREENSHOTS set to a
directory, it also saves screenshots of the main pages there (docs/screenshots in the repo).

Flow: sign in, create a tenant, a product and a key type, mint a license, find it by email,
revoke it, and see the revocation in the audit log. Exits non-zero on the first failed check.
"""
import json
import os
import re
import signal
import urllib.request
import sys
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from browser_support import browser, check, shot

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
EMAIL = os.environ["KEYLIGHT_EMAIL"]
PASSWORD = os.environ["KEYLIGHT_PASSWORD"]


def sdk(action, sdk_key, body):
    request = urllib.request.Request(
        BASE + "/acme/notes/" + action, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "X-Keylight-SDK-Key": sdk_key},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def fill(form, values):
    for name, value in values.items():
        field = form.find_element(By.NAME, name)
        if field.tag_name == "select":
            Select(field).select_by_value(value)
        elif field.get_attribute("type") == "checkbox":
            if bool(value) != field.is_selected():
                field.click()
        else:
            field.clear()
            field.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def form(driver, action_suffix):
    return driver.find_element(By.CSS_SELECTOR, "form[method=post][action$='%s']" % action_suffix)


def main():
    # The whole flow takes a few seconds; a wedged browser fails the run instead of stalling it.
    signal.signal(signal.SIGALRM, lambda *_: (print("FAILED: timed out", file=sys.stderr), os._exit(2)))
    signal.alarm(180)
    driver = browser()
    try:
        # Signed out: the dashboard sends us to the sign-in page.
        driver.get(BASE + "/dashboard")
        check(lambda: "/dashboard/login" in driver.current_url, "signed-out visit redirects to sign-in")
        shot(driver, "sign-in", 700)
        fill(form(driver, "/dashboard/login"), {"email": EMAIL, "password": "wrong password!"})
        check(lambda: "Wrong email or password." in driver.page_source, "a wrong password is refused")
        fill(form(driver, "/dashboard/login"), {"email": EMAIL, "password": PASSWORD})
        check(lambda: driver.current_url.rstrip("/").endswith("/dashboard"), "signed in")
        check(lambda: EMAIL in driver.page_source, "the header names the user")

        fill(form(driver, "/dashboard/tenants"), {"id": "acme", "name": "Acme Software"})
        check(lambda: driver.current_url.endswith("/dashboard/t/acme"), "tenant created")
        fill(form(driver, "/dashboard/t/acme/products"), {"id": "notes", "name": "Notes", "key_prefix": "NOTE", "trial_duration_days": "14"})
        check(lambda: "SDK key (shown once)" in driver.page_source, "product created; SDK key shown once")
        check(lambda: re.search(r"kl_sdk_[A-Za-z0-9_-]+", driver.page_source) is not None, "the SDK key is on the page")
        sdk_key = re.search(r"kl_sdk_[A-Za-z0-9_-]+", driver.page_source).group(0)
        fill(form(driver, "/dashboard/t/acme/p/notes/key-types"), {
            "id": "pro", "display_name": "Pro (3 Macs)", "activation_limit": "3", "entitlements": "pro, sync", "fallback_access": True,
        })
        check(lambda: "Key type Pro (3 Macs) created." in driver.page_source, "key type created")
        shot(driver, "product")

        driver.get(BASE + "/dashboard/t/acme/p/notes/licenses")
        fill(form(driver, "/dashboard/t/acme/p/notes/licenses"), {"key_type_id": "pro", "customer_email": "ada@example.com"})
        check(lambda: "License key (shown once)" in driver.page_source, "license minted")
        key = driver.find_element(By.CSS_SELECTOR, "code.key").text.strip()
        check(lambda: re.fullmatch(r"NOTE(-[0-9A-Z]{4}){4}", key) is not None, "the raw key is shown: " + key)
        # The app activates on two Macs and checks in a few times: the charts and the device list show it.
        for machine in ["studio", "laptop"]:
            reply = sdk("activate", sdk_key, {"license_key": key, "instance_name": "Ada's " + machine.title(), "machine_hash": machine})
            for _ in range(3):
                sdk("validate", sdk_key, {"license_key": key, "instance_id": reply["instance_id"]})
        check(lambda: True, "activated on two devices over the SDK API")
        driver.get(BASE + "/dashboard/t/acme/p/notes/licenses")
        fill(form(driver, "/dashboard/t/acme/p/notes/licenses"), {"key_type_id": "pro", "customer_email": "grace@example.com"})
        check(lambda: "grace@example.com" in driver.page_source and "License key (shown once)" in driver.page_source, "a second license minted")

        # Find the first license by email.
        driver.get(BASE + "/dashboard/t/acme/p/notes/licenses")
        search = driver.find_element(By.CSS_SELECTOR, "form[role=search]")
        search.find_element(By.NAME, "email").send_keys("ada@example.com")
        search.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "email=ada%40example.com" in driver.current_url, "searched by email")
        rows = lambda: driver.find_elements(By.CSS_SELECTOR, "table tbody tr td a code")
        check(lambda: len(rows()) == 1 and rows()[0].text.endswith(key[-4:]), "search by email finds exactly that license")
        check(lambda: "grace@example.com" not in driver.page_source, "and not the other one")
        shot(driver, "licenses", 700)
        rows()[0].click()
        check(lambda: "/licenses/" in driver.current_url and "dl" in driver.page_source, "opened the license")
        check(lambda: key not in driver.page_source and key[-4:] in driver.page_source, "the license page shows the key masked only")

        driver.find_element(By.CSS_SELECTOR, "form[action$='/revoke'] button").click()
        check(lambda: "License revoked." in driver.page_source, "license revoked")
        check(lambda: "revoked" in driver.find_element(By.CSS_SELECTOR, "dl.facts dd").text, "its status reads revoked")
        shot(driver, "license", 800)

        driver.get(BASE + "/dashboard/audit")
        cells = lambda: [row.text for row in driver.find_elements(By.CSS_SELECTOR, "table tbody tr")]
        check(lambda: any("license.revoke" in row and ("user:" + EMAIL) in row for row in cells()), "the audit log shows the revocation by this user")
        shot(driver, "audit", 800)

        time.sleep(1.5)  # validation counts are written a second at a time
        driver.get(BASE + "/dashboard")
        check(lambda: driver.find_elements(By.CSS_SELECTOR, "svg.chart.statuses"), "the overview draws the status chart")
        check(lambda: "Activations per day: 2 in 30 days" in driver.page_source, "the activation chart counts both devices")
        shot(driver, "overview")
        driver.get(BASE + "/dashboard/signing-keys")
        shot(driver, "signing-keys", 600)

        driver.find_element(By.CSS_SELECTOR, "form.logout button").click()
        check(lambda: "/dashboard/login" in driver.current_url, "sign-out lands on the sign-in page")
        driver.get(BASE + "/dashboard/audit")
        check(lambda: "/dashboard/login" in driver.current_url, "signed out")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
