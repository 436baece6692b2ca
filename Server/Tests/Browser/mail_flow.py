"""Mail to buyers in a real browser, against a real SMTP server (aiosmtpd).

Run by KeylightCLITests/MailBrowserTests against a live `keylight serve` that mails through
aiosmtpd (KEYLIGHT_URL, KEYLIGHT_ADMIN_TOKEN, a dashboard user in KEYLIGHT_EMAIL and
KEYLIGHT_PASSWORD, the folder aiosmtpd writes messages to in KEYLIGHT_MAIL_FOLDER).

Flow: the developer opens the tenant's mail editor, previews a draft (not saved), is shown a
broken template beside what they typed, saves; mints a license with "Mail the key" ticked and
the buyer's mail arrives as written; the license page lists the mail as sent and mails the key
again to a corrected address. The buyer, key lost, asks the portal for it and gets it; a
stranger asking about an unknown address sees the same answer and no mail is sent. Exits
non-zero on the first failed check.
"""
import os
import signal
import sys
import time

from selenium.webdriver.common.by import By

import browser_support
from browser_support import browser, check, shot

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
EMAIL = os.environ["KEYLIGHT_EMAIL"]
PASSWORD = os.environ["KEYLIGHT_PASSWORD"]
MAIL = os.environ["KEYLIGHT_MAIL_FOLDER"]


def admin(method, path, body=None):
    return browser_support.admin(BASE, TOKEN, method, path, body)


def mails():
    return browser_support.mails(MAIL)


def text_of(message):
    return message.get_body(("plain",)).get_content()


def fill(driver, form, values):
    for name, value in values.items():
        field = form.find_element(By.NAME, name)
        if field.get_attribute("type") == "checkbox":
            if bool(value) != field.is_selected():
                field.click()
        else:
            field.clear()
            # A textarea takes the text as typed; set it directly (send_keys would be slow on long templates).
            driver.execute_script("arguments[0].value = arguments[1]", field, value)


def post_form(driver, action_suffix):
    return driver.find_element(By.CSS_SELECTOR, "form[method=post][action$='%s']" % action_suffix)


def in_preview(driver, find):
    """Runs `find` inside the preview frame, then comes back to the page."""
    driver.switch_to.frame(driver.find_element(By.ID, "mail-preview"))
    try:
        return find()
    finally:
        driver.switch_to.default_content()


def main():
    signal.signal(signal.SIGALRM, lambda *_: (print("FAILED: timed out", file=sys.stderr), os._exit(2)))
    signal.alarm(200)
    admin("POST", "/tenants", {"id": "acme", "name": "Acme Software"})
    admin("POST", "/tenants/acme/products", {"id": "app", "name": "Notes", "key_prefix": "NOTE", "trial_duration_days": 14, "free_tier_enabled": False})
    admin("POST", "/tenants/acme/products/app/key-types", {"id": "pro", "display_name": "Pro", "activation_limit": 3, "duration_days": None, "fallback_access": False, "entitlements": []})
    driver = browser()
    try:
        driver.get(BASE + "/dashboard/login")
        form = post_form(driver, "/dashboard/login")
        form.find_element(By.NAME, "email").send_keys(EMAIL)
        form.find_element(By.NAME, "password").send_keys(PASSWORD)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: driver.current_url.rstrip("/").endswith("/dashboard"), "signed in")

        # The editor, reached from the tenant page, previews the defaults.
        driver.get(BASE + "/dashboard/t/acme")
        driver.find_element(By.ID, "edit-mail").click()
        check(lambda: driver.current_url.endswith("/dashboard/t/acme/mail"), "the mail editor opens from the tenant page")
        check(lambda: in_preview(driver, lambda: driver.find_element(By.ID, "preview-subject").text) == "Your Notes license key",
              "the preview shows the default subject with the tenant's product")
        check(lambda: "NOTE-" in in_preview(driver, lambda: driver.find_element(By.ID, "preview-text").text), "the preview's text part holds a sample key")

        # A draft is previewed, not saved.
        form = post_form(driver, "/dashboard/t/acme/mail")
        fill(driver, form, {"sender_name": "Acme Café", "reply_to": "Acme Support <support@acme.example>", "subject_template": "{{product_name}} — your license",
                            "html_template": "<p id=\"x\">{{product_name}}</p><script>document.getElementById('x').textContent = 'script ran'</script>"})
        driver.find_element(By.ID, "preview-button").click()
        check(lambda: in_preview(driver, lambda: driver.find_element(By.ID, "preview-subject").text) == "Notes — your license", "Preview shows the draft's subject")
        check(lambda: "Acme Café" in in_preview(driver, lambda: driver.find_element(By.ID, "preview-from").text), "and its sender name")

        def html_part():
            driver.switch_to.frame(driver.find_element(By.ID, "mail-preview"))
            driver.switch_to.frame(driver.find_element(By.CSS_SELECTOR, "iframe[sandbox]"))
            try:
                return driver.find_element(By.ID, "x").text
            finally:
                driver.switch_to.default_content()
        check(lambda: html_part() == "Notes", "the HTML part renders in a sandbox where its script does not run")
        check(lambda: admin("GET", "/tenants/acme/mail")["subject_template"] is None, "the draft was not saved")
        shot(driver, "mail-editor")

        # A broken template is shown beside what was typed, and nothing is saved.
        form = post_form(driver, "/dashboard/t/acme/mail")
        fill(driver, form, {"html_template": "<p>{{#license_key}} never closed</p>"})
        form.find_element(By.CSS_SELECTOR, "button[type=submit]:not([formaction])").click()
        check(lambda: "is not a valid Mustache template" in driver.page_source, "a broken template is refused with its line")
        check(lambda: driver.find_element(By.NAME, "subject_template").get_attribute("value") == "{{product_name}} — your license", "what was typed is kept")
        check(lambda: admin("GET", "/tenants/acme/mail")["sender_name"] is None, "nothing was saved")
        defaults = admin("GET", "/tenants/acme/mail")["defaults"]
        form = post_form(driver, "/dashboard/t/acme/mail")
        fill(driver, form, {"html_template": defaults["html_template"]})
        form.find_element(By.CSS_SELECTOR, "button[type=submit]:not([formaction])").click()
        check(lambda: "Mail settings saved." in driver.page_source, "saved")
        stored = admin("GET", "/tenants/acme/mail")
        check(lambda: stored["sender_name"] == "Acme Café" and stored["subject_template"] == "{{product_name}} — your license", "the settings are stored")
        check(lambda: stored["html_template"] is None and stored["text_template"] is None, "templates left as the defaults are stored as the defaults")

        # Mint with "Mail the key": the buyer's mail arrives as written.
        driver.get(BASE + "/dashboard/t/acme/p/app/licenses")
        form = post_form(driver, "/dashboard/t/acme/p/app/licenses")
        form.find_element(By.NAME, "customer_email").send_keys("ada@example.com")
        form.find_element(By.NAME, "send_email").click()
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "License key (shown once)" in driver.page_source, "license minted")
        key = driver.find_element(By.CSS_SELECTOR, "code.key").text.strip()
        check(lambda: len(mails()) == 1, "the buyer's mail arrives", timeout=20)
        envelope, message = mails()[0]
        check(lambda: envelope["rcpt_tos"] == ["ada@example.com"], "to the buyer")
        check(lambda: message["From"].addresses[0].display_name == "Acme Café", "from the tenant's sender name (RFC 2047)")
        check(lambda: str(message["Reply-To"]) == "Acme Support <support@acme.example>", "with its reply-to")
        check(lambda: str(message["Subject"]) == "Notes — your license", "with the tenant's subject")
        check(lambda: key in text_of(message) and key in message.get_body(("html",)).get_content(), "and the key in both parts")
        license_url = driver.current_url
        if "/licenses/" not in license_url:
            license_url = BASE + driver.find_element(By.CSS_SELECTOR, "form[action$='/email']").get_attribute("action").rsplit("/email", 1)[0].replace(BASE, "")

        # The license page lists the mail, and mails the key again to a corrected address.
        driver.get(license_url)
        check(lambda: "mail-sent" in driver.page_source, "the license page lists the mail as sent")
        form = post_form(driver, "/email")
        field = form.find_element(By.NAME, "customer_email")
        field.clear()
        field.send_keys("ada.new@example.com")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "The key is queued to ada.new@example.com" in driver.page_source, "resend queued")
        check(lambda: len(mails()) == 2, "the second mail arrives", timeout=20)
        check(lambda: mails()[1][0]["rcpt_tos"] == ["ada.new@example.com"] and key in text_of(mails()[1][1]), "to the corrected address, with the same key")
        driver.get(license_url)
        check(lambda: driver.page_source.count("mail-sent") == 2, "both mails are listed")
        shot(driver, "license-mail")

        # The buyer lost the key: the portal mails it. A stranger learns nothing.
        driver.delete_all_cookies()
        driver.get(BASE + "/portal/acme/app")
        form = post_form(driver, "/lost-key")
        form.find_element(By.NAME, "email").send_keys("Ada.New@example.com")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "is on its way there now" in driver.page_source, "the portal says the key is on its way")
        known = driver.find_element(By.CSS_SELECTOR, "[role=status]").text.replace("ada.new@example.com", "ADDRESS")
        shot(driver, "portal-lost-key")
        check(lambda: len(mails()) == 3, "the lost-key mail arrives", timeout=20)
        check(lambda: mails()[2][0]["rcpt_tos"] == ["ada.new@example.com"] and key in text_of(mails()[2][1]), "with the key")
        form = post_form(driver, "/lost-key")
        form.find_element(By.NAME, "email").send_keys("stranger@example.com")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: "is on its way there now" in driver.page_source, "an unknown address gets an answer")
        unknown = driver.find_element(By.CSS_SELECTOR, "[role=status]").text.replace("stranger@example.com", "ADDRESS")
        check(lambda: unknown == known, "the same answer as a known address")
        time.sleep(4)  # the outbox polls every 2 s: a mail would have gone by now
        check(lambda: len(mails()) == 3, "and no mail is sent for it")
    finally:
        driver.quit()


main()
