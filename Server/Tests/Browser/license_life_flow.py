"""A license's life after the sale in a real browser: the dashboard's edit and renew forms, then
the buyer's account page in the portal (issue 49).

Run by KeylightCLITests/LicenseLifeBrowserTests against a live `keylight serve` that mails
through aiosmtpd and has a public URL (KEYLIGHT_URL, KEYLIGHT_ADMIN_TOKEN, a dashboard user in
KEYLIGHT_EMAIL and KEYLIGHT_PASSWORD, the folder aiosmtpd writes messages to in
KEYLIGHT_MAIL_FOLDER, the server's --public-url in KEYLIGHT_PUBLIC_URL). With KEYLIGHT_SCREENSHOTS
set, it saves screenshots of the pages.

Flow: a license on two Macs (SDK API) is moved in the dashboard to another key type with a limit
of one device, an add-on, metadata, a note and an updates date; the page warns that it is over
its limit and the admin API agrees; it is renewed by 30 days from today. The buyer opens the
account with the app's upgrade link (the key leaves the URL at once), sees the license over its
limit with the new key type's prices, and frees a device. Signed out, the buyer asks for a
sign-in link, gets the mail through aiosmtpd, signs in with it once, sees only their own
licenses, and the same link does not work a second time. Exits non-zero on the first failed
check; never prints a license key.
"""
import json
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import browser_support
from browser_support import browser, check, post_form, shot

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
EMAIL = os.environ["KEYLIGHT_EMAIL"]
PASSWORD = os.environ["KEYLIGHT_PASSWORD"]
MAIL = os.environ["KEYLIGHT_MAIL_FOLDER"]
PUBLIC = os.environ["KEYLIGHT_PUBLIC_URL"].rstrip("/")
BUYER = "ada@example.com"
DAY = 86400


def admin(method, path, body=None):
    return browser_support.admin(BASE, TOKEN, method, path, body)


def sdk_activate(sdk_key, key, machine):
    """An SDK activation; (HTTP status, answer)."""
    request = urllib.request.Request(
        BASE + "/acme/notes/activate", method="POST",
        data=json.dumps({"license_key": key, "instance_name": "Ada's " + machine.title(), "machine_hash": machine}).encode(),
        headers={"Content-Type": "application/json", "X-Keylight-SDK-Key": sdk_key},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def mails():
    return browser_support.mails(MAIL)


def facts(driver, scope="dl.facts"):
    """The first facts list on the page as {dt: dd}."""
    dl = driver.find_element(By.CSS_SELECTOR, scope)
    return dict(zip([e.text for e in dl.find_elements(By.TAG_NAME, "dt")], [e.text for e in dl.find_elements(By.TAG_NAME, "dd")]))


def text(driver, selector):
    found = driver.find_elements(By.CSS_SELECTOR, selector)
    return found[0].text if found else ""


def day(unix):
    return time.strftime("%Y-%m-%d", time.gmtime(unix))


def main():
    signal.signal(signal.SIGALRM, lambda *_: (print("FAILED: timed out", file=sys.stderr), os._exit(2)))
    signal.alarm(150)
    admin("POST", "/tenants", {"id": "acme", "name": "Acme Software"})
    sdk_key = admin("POST", "/tenants/acme/products", {"id": "notes", "name": "Notes", "key_prefix": "NOTE"})["sdk_key"]
    for key_type in [("team", "Team", 3, ["core"]), ("solo", "Solo", 2, ["core"]), ("pro", "Pro", 5, ["core", "pro"])]:
        admin("POST", "/tenants/acme/products/notes/key-types", {
            "id": key_type[0], "display_name": key_type[1], "activation_limit": key_type[2], "fallback_access": False, "entitlements": key_type[3],
        })
    # What a Solo license may buy later: sold through Paddle, so the account page shows prices as text.
    admin("PUT", "/tenants/acme/products/notes/key-types/solo/offers", {
        "upgrades": [{"to": "pro", "price_label": "$29", "paddle_price_id": "pri_01upgradeproaaaaaaaaaaaaaa"}],
        "renewal": {"price_label": "$19", "paddle_price_id": "pri_01renewalaaaaaaaaaaaaaaaa"},
    })
    minted = admin("POST", "/tenants/acme/products/notes/licenses", {"key_type_id": "team", "customer_email": BUYER})
    key, license_id = minted["license_key"], minted["id"]
    other = admin("POST", "/tenants/acme/products/notes/licenses", {"key_type_id": "team", "customer_email": "grace@example.com"})["id"]
    license_path = "/tenants/acme/products/notes/licenses/" + license_id
    activated = [sdk_activate(sdk_key, key, machine) for machine in ["studio", "laptop"]]
    check(lambda: all(status == 200 and reply.get("activated") for status, reply in activated), "the license is active on two Macs over the SDK API")

    driver = browser()
    try:
        # The developer, in the dashboard.
        driver.get(BASE + "/dashboard/login")
        form = post_form(driver, "/dashboard/login")
        form.find_element(By.NAME, "email").send_keys(EMAIL)
        form.find_element(By.NAME, "password").send_keys(PASSWORD)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: driver.current_url.rstrip("/").endswith("/dashboard"), "signed in to the dashboard")
        page = BASE + "/dashboard/t/acme/p/notes/licenses/" + license_id
        driver.get(page)
        check(lambda: facts(driver)["Seats"] == "2 of 3 devices", "the license page shows two of three devices in use")

        edit = driver.find_element(By.CSS_SELECTOR, "section#edit")
        form = post_form(driver, "/edit", within=edit)
        Select(form.find_element(By.NAME, "key_type_id")).select_by_value("solo")
        limit = form.find_element(By.NAME, "activation_limit")
        limit.clear()
        limit.send_keys("1")
        updates_until = int(time.time()) + 400 * DAY
        # A date input takes typed digits in the browser's locale order; set the value it posts instead.
        driver.execute_script("arguments[0].value = arguments[1]", form.find_element(By.NAME, "updates_until_on"), day(updates_until))
        form.find_element(By.NAME, "entitlements_added").send_keys("export")
        form.find_element(By.NAME, "note").send_keys("Moved to Solo after the team shrank (ticket 812).")
        driver.execute_script("arguments[0].value = arguments[1]", form.find_element(By.NAME, "metadata"), "crm_id=AC-4711\nchannel=reseller")
        shot(driver, "license-edit")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: text(driver, "p.flash").startswith("License saved."), "the edit form saves")
        check(lambda: "over the new limit of 1" in text(driver, "p.flash") and "none was freed" in text(driver, "p.flash"),
              "the flash says two devices are over the new limit and none was freed")
        check(lambda: "2 devices are in use, over this license's limit of 1" in text(driver, "section#edit p.warning"),
              "the edit card warns that the license is over its limit")
        check(lambda: facts(driver)["Key type"] == "solo" and facts(driver)["Seats"] == "2 of 1 devices"
              and facts(driver)["Updates"] == "until " + day(updates_until), "the facts show the new key type, limit and updates date")
        check(lambda: Select(driver.find_element(By.CSS_SELECTOR, "section#edit select[name=key_type_id]")).first_selected_option.get_attribute("value") == "solo"
              and driver.find_element(By.CSS_SELECTOR, "section#edit textarea[name=metadata]").get_attribute("value") == "channel=reseller\ncrm_id=AC-4711",
              "the form shows what was saved")
        shot(driver, "license-over-limit")
        stored = admin("GET", license_path)
        check(lambda: stored["key_type_id"] == "solo" and stored["activation_limit"] == 1 and stored["activation_limit_override"] == 1
              and stored["over_limit"] is True and stored["active_instances"] == 2, "the admin API shows key type solo, limit 1, over_limit")
        check(lambda: stored["entitlements_added"] == ["export"] and sorted(stored["entitlements"]) == ["core", "export"]
              and stored["metadata"] == {"crm_id": "AC-4711", "channel": "reseller"} and stored["note"] == "Moved to Solo after the team shrank (ticket 812)."
              and day(stored["updates_until"]) == day(updates_until), "with the add-on, the metadata, the note and the updates date")
        check(lambda: True, "the license edit form moved the license and lowered its limit")
        status, reply = sdk_activate(sdk_key, key, "office")
        check(lambda: status >= 400 and not reply.get("activated"), "a third Mac is refused while the license is over its limit (%d %s)" % (status, reply.get("code") or reply.get("error", {}).get("code", "")))

        renew = post_form(driver, "/renew", within=driver.find_element(By.CSS_SELECTOR, "section#edit"))
        days = renew.find_element(By.NAME, "days")
        days.clear()
        days.send_keys("30")
        Select(renew.find_element(By.NAME, "field")).select_by_value("expires_at")
        Select(renew.find_element(By.NAME, "basis")).select_by_value("from_now")
        before = int(time.time())
        renew.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: text(driver, "p.flash") == "Renewed: expires %s." % day(before + 30 * DAY) or text(driver, "p.flash") == "Renewed: expires %s." % day(int(time.time()) + 30 * DAY),
              "the renew form answers with the new expiry")
        expires_at = admin("GET", license_path)["expires_at"]
        check(lambda: expires_at is not None and before + 30 * DAY - 5 <= expires_at <= int(time.time()) + 30 * DAY + 5, "the renewal moved the expiry")
        check(lambda: facts(driver)["Expires"].startswith(day(expires_at)), "the license facts show the new expiry")
        check(lambda: driver.find_element(By.CSS_SELECTOR, "section#edit input[name=expires_on]").get_attribute("value") == day(expires_at),
              "the edit form shows the new expiry date")
        post_form(driver, "/edit", within=driver.find_element(By.CSS_SELECTOR, "section#edit")).find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: text(driver, "p.flash") == "Nothing changed.", "saving the form untouched changes nothing")
        check(lambda: admin("GET", license_path)["expires_at"] == expires_at, "and keeps the expiry to the second")

        # The buyer, from the app's upgrade link: the key is traded for a session at once.
        driver.get(BASE + "/dashboard")
        driver.find_element(By.CSS_SELECTOR, "form.logout button").click()
        check(lambda: "/dashboard/login" in driver.current_url, "the developer signed out")
        driver.get(BASE + "/t/acme/license/" + key + "/upgrade")
        check(lambda: driver.current_url == BASE + "/portal/acme/account" and key not in driver.current_url,
              "the upgrade link opened the account without the key in the URL")
        check(lambda: "Opened with your license key." in driver.page_source, "the account says the key opened it")
        card = lambda: driver.find_element(By.CSS_SELECTOR, "section.license#license-" + license_id)
        check(lambda: key not in driver.page_source and key[-4:] in card().find_element(By.TAG_NAME, "code").text, "the account shows the key masked only")
        check(lambda: "Solo" in card().find_element(By.TAG_NAME, "h2").text and card().find_element(By.CSS_SELECTOR, ".seats").text == "2 of 1 in use",
              "the account shows the new key type and 2 of 1 in use")
        check(lambda: card().find_element(By.CSS_SELECTOR, ".expires").text == day(expires_at)
              and card().find_element(By.CSS_SELECTOR, ".updates").text == "until " + day(updates_until), "and the renewed expiry and the updates date")
        offers = lambda: card().find_element(By.CSS_SELECTOR, ".offers").text
        check(lambda: "Upgrade to Pro · $29" in offers() and "Renew · $19" in offers() and "(from the seller)" in offers()
              and not card().find_elements(By.CSS_SELECTOR, ".offers button"), "the upgrade and renewal prices appear (Paddle prices, as text)")
        check(lambda: not driver.find_elements(By.CSS_SELECTOR, "#license-" + other), "only the license the key opened is shown")
        shot(driver, "account-from-key")
        buttons = card().find_elements(By.XPATH, ".//button[normalize-space()='Free this device']")
        check(lambda: len(buttons) == 2, "each device has a Free this device button")
        buttons[0].click()
        check(lambda: "The device was freed." in text(driver, "p.flash") and card().find_element(By.CSS_SELECTOR, ".seats").text == "1 of 1 in use",
              "the account page shows 1 of 1 in use")
        stored = admin("GET", license_path)
        check(lambda: stored["active_instances"] == 1 and stored["over_limit"] is False, "a device freed from the account page")
        shot(driver, "account-freed")

        # Signed out, the buyer asks for a sign-in link by mail.
        post_form(driver, "/sign-out").find_element(By.TAG_NAME, "button").click()
        check(lambda: driver.find_elements(By.CSS_SELECTOR, "section#request-link form"), "signed out, the account asks for an address")
        form = post_form(driver, "/request-link")
        form.find_element(By.NAME, "email").send_keys(BUYER)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "a sign-in link is on its way" in text(driver, "p.flash"), "the account says a link is on its way")
        check(lambda: len(mails()) == 1, "the sign-in mail arrives", timeout=20)
        envelope, message = mails()[0]
        body = message.get_body(("plain",)).get_content()
        found = re.search(r"(\S+)/portal/acme/account/sign-in\?token=([A-Za-z0-9_-]{43})", body)
        check(lambda: envelope["rcpt_tos"] == [BUYER] and found is not None and found.group(1) == PUBLIC, "to the buyer, with a link on the public URL")
        check(lambda: key not in body, "the sign-in mail does not hold the key")
        link = BASE + "/portal/acme/account/sign-in?token=" + found.group(2)
        driver.get(link)
        check(lambda: driver.find_element(By.ID, "use-link").text == "Sign in" and "Signed in as" not in driver.page_source,
              "opening the link only shows a Sign in button")
        shot(driver, "account-sign-in")
        driver.find_element(By.ID, "use-link").click()
        check(lambda: driver.current_url == BASE + "/portal/acme/account"
              and driver.find_element(By.CSS_SELECTOR, "section.card p b").text == BUYER and "Signed in as" in driver.page_source,
              "the account says Signed in as the buyer")
        check(lambda: card().find_element(By.CSS_SELECTOR, ".seats").text == "1 of 1 in use" and not driver.find_elements(By.CSS_SELECTOR, "#license-" + other),
              "it lists the buyer's license and not another buyer's")
        shot(driver, "account-signed-in")
        driver.get(link)
        driver.find_element(By.ID, "use-link").click()
        check(lambda: "This sign-in link has expired or was used already." in text(driver, "p.error"), "a used link is refused")
        check(lambda: True, "the mailed link signed in once")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
