"""The customer portal in a real browser, end to end with the SDK on an offline machine.

Run by KeylightCLITests/PortalBrowserTests against a live `keylight serve` (KEYLIGHT_URL, its
admin token in KEYLIGHT_ADMIN_TOKEN) with the `keylight` binary in KEYLIGHT_BIN and a scratch
directory in KEYLIGHT_WORKDIR. With KEYLIGHT_SCREENSHOTS set, it saves screenshots of the portal.

Flow: the offline machine (`keylight client` pointed at a dead address) makes its request file;
in the portal the customer enters the key, uploads the file and downloads the response; the
offline machine imports it and is licensed without the network; it makes a deactivation proof;
the customer pastes it in the portal and the seat is free again. Exits non-zero on the first
failed check.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import urllib.request

from selenium.webdriver.common.by import By

import browser_support
from browser_support import check, shot

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
BIN = os.environ["KEYLIGHT_BIN"]
WORK = os.environ["KEYLIGHT_WORKDIR"]
DOWNLOADS = os.path.join(WORK, "downloads")


def browser():
    return browser_support.browser(downloads=DOWNLOADS)


def admin(method, path, body=None):
    return browser_support.admin(BASE, TOKEN, method, path, body)


def client(server, store, *arguments):
    """`keylight client …`; answers (exit status, stdout, stderr)."""
    command = [BIN, "client", "--server", server, "--tenant", "acme", "--product", "notes", "--sdk-key", SDK_KEY,
               "--keys", os.path.join(WORK, "keys.json"), "--store", os.path.join(WORK, store)] + list(arguments)
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def main():
    global SDK_KEY
    signal.signal(signal.SIGALRM, lambda *_: (print("FAILED: timed out", file=sys.stderr), os._exit(2)))
    signal.alarm(180)
    os.makedirs(DOWNLOADS, exist_ok=True)
    admin("POST", "/tenants", {"id": "acme", "name": "Acme Software"})
    SDK_KEY = admin("POST", "/tenants/acme/products", {"id": "notes", "name": "Notes", "key_prefix": "NOTE"})["sdk_key"]
    admin("POST", "/tenants/acme/products/notes/key-types", {
        "id": "pro", "display_name": "Pro (2 Macs)", "activation_limit": 2, "fallback_access": False, "entitlements": ["pro"],
    })
    key = admin("POST", "/tenants/acme/products/notes/licenses", {"key_type_id": "pro"})["license_key"]
    license_id = admin("GET", "/tenants/acme/products/notes/licenses")["licenses"][0]["id"]
    with urllib.request.urlopen(BASE + "/acme/.well-known/keylight-keys", timeout=10) as response:
        open(os.path.join(WORK, "keys.json"), "wb").write(response.read())
    # One Mac activated online, so the portal has a device to show.
    status, out, err = client(BASE, "office", "activate", key)
    check(lambda: status == 0 and json.loads(out)["state"] == "licensed", "an online Mac activated: " + err)

    # The offline machine: its server address is dead, it never reaches the server.
    dead = "http://127.0.0.1:9"
    request_path = os.path.join(WORK, "request.txt")
    status, _, err = client(dead, "lab", "offline-request", "--out", request_path)
    check(lambda: status == 0 and "BEGIN KEYLIGHT ACTIVATION REQUEST" in open(request_path).read(), "the offline Mac wrote its request file " + err)

    driver = browser()
    try:
        driver.get(BASE + "/portal/acme/notes")
        check(lambda: "Enter your license key" in driver.page_source, "the portal asks for the key")
        shot(driver, "portal-sign-in")
        field = driver.find_element(By.NAME, "license_key")
        field.send_keys(key)
        field.submit()
        check(lambda: "1 of 2 in use" in driver.page_source, "the portal lists the license's one device")
        check(lambda: key not in driver.page_source and key[-4:] in driver.page_source, "the key is shown masked only")
        shot(driver, "portal-devices")

        upload = driver.find_element(By.CSS_SELECTOR, "form[action$='/offline/activate']")
        upload.find_element(By.NAME, "request_file").send_keys(request_path)
        upload.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        files = lambda: [f for f in glob.glob(os.path.join(DOWNLOADS, "keylight-activation-*.txt")) if os.path.getsize(f) > 0]
        check(lambda: len(files()) == 1, "the response file downloaded", timeout=20)
        response_path = files()[0]
        check(lambda: open(response_path).read().startswith("-----BEGIN KEYLIGHT ACTIVATION-----"), "it is an activation response")

        # Back on the offline Mac: import, no network.
        status, out, err = client(dead, "lab", "offline-import", "--response", response_path, key)
        check(lambda: status == 0 and json.loads(out)["state"] == "licensed", "the offline Mac is licensed from the file: " + out + err)
        check(lambda: json.loads(out)["entitlements"] == ["pro"], "with the key type's entitlements")
        status, out, _ = client(dead, "lab", "status")
        check(lambda: json.loads(out)["state"] == "licensed", "and stays licensed at its next launch, still offline")

        driver.get(BASE + "/portal/acme/notes")
        check(lambda: "2 of 2 in use" in driver.page_source and "(offline activation)" in driver.page_source, "the portal shows the offline Mac")
        shot(driver, "portal-offline-device")

        proof_path = os.path.join(WORK, "proof.txt")
        status, _, err = client(dead, "lab", "offline-deactivate", "--out", proof_path)
        check(lambda: status == 0 and "BEGIN KEYLIGHT DEACTIVATION" in open(proof_path).read(), "the offline Mac made its deactivation proof " + err)
        status, out, _ = client(dead, "lab", "status")
        check(lambda: json.loads(out)["state"] != "licensed", "and no longer uses the license")

        paste = driver.find_element(By.CSS_SELECTOR, "form[action$='/offline/deactivate']")
        paste.find_element(By.NAME, "proof").send_keys(open(proof_path).read())
        paste.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "The offline device was freed." in driver.page_source and "1 of 2 in use" in driver.page_source, "the pasted proof frees the seat")
        detail = admin("GET", "/tenants/acme/products/notes/licenses/" + license_id)
        check(lambda: sum(1 for i in detail["instances"] if i["active"]) == 1, "the server agrees: one device left")

        # Free the online Mac from the portal too.
        driver.find_element(By.CSS_SELECTOR, "form[action*='/devices/'] button").click()
        check(lambda: "The device was freed." in driver.page_source and "0 of 2 in use" in driver.page_source, "a device freed with one click")
        shot(driver, "portal-freed")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
