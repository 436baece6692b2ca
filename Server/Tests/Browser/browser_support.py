"""What the browser flows share: headless Chromium, polled checks, screenshots, the admin API.

Imported by dashboard_flow.py, portal_flow.py and mail_flow.py (Python puts a script's own
folder first on its import path)."""
import email
import email.policy
import glob
import json
import os
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

SHOTS = os.environ.get("KEYLIGHT_SCREENSHOTS")


def browser(downloads=None):
    """Headless Chromium; with `downloads`, files it downloads are saved there."""
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000", "--disable-gpu"]:
        options.add_argument(argument)
    if downloads:
        options.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
    binary = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
    if os.path.exists(binary):
        options.binary_location = binary
    driver = webdriver.Chrome(service=Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    if downloads:
        # Headless Chromium saves downloads only when told where.
        driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    return driver


def check(condition, message, timeout=10.0):
    """`condition` is a function, polled until true: a submitted form navigates asynchronously.
    Exits the flow on the first check that stays false."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                break
        except Exception:  # the page may be mid-navigation
            pass
        if time.monotonic() > deadline:
            print("FAILED: " + message, file=sys.stderr)
            sys.exit(1)
        time.sleep(0.1)
    print("ok: " + message)


def shot(driver, name, height=None):
    """A full-page screenshot into KEYLIGHT_SCREENSHOTS, when it is set."""
    if not SHOTS:
        return
    os.makedirs(SHOTS, exist_ok=True)
    full = height or driver.execute_script("return Math.min(document.body.scrollHeight, 2400)")
    driver.set_window_size(1280, max(700, full))
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))
    driver.set_window_size(1280, 1000)


def admin(base, token, method, path, body=None):
    """One admin API call; the answer's JSON."""
    request = urllib.request.Request(
        base + "/admin/v1" + path, data=json.dumps(body).encode() if body is not None else None, method=method,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"{}")


def mails(folder):
    """The mails the test SMTP server received into `folder`, oldest first: (envelope, parsed message)."""
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "*.eml"))):
        with open(path, "rb") as f:
            message = email.message_from_bytes(f.read(), policy=email.policy.default)
        with open(path[:-4] + ".json") as f:
            found.append((json.load(f), message))
    return found


def post_form(driver, action_suffix, within=None):
    """The POST form whose action ends with `action_suffix` (in `within`, or the page)."""
    from selenium.webdriver.common.by import By
    return (within or driver).find_element(By.CSS_SELECTOR, "form[method=post][action$='%s']" % action_suffix)
