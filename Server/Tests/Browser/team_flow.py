"""Team access in a real browser (issue 50): an invitation mailed through aiosmtpd, accepted in a
second browser; the invited support member turns on a second factor with a code pyotp computes,
signs in with it and with a recovery code (once), and cannot open the webhook page.

Run by KeylightCLITests/TeamBrowserTests against a live `keylight serve` that mails through
aiosmtpd and has a public URL (KEYLIGHT_URL, KEYLIGHT_ADMIN_TOKEN, the tenant's owner, a dashboard
user, in KEYLIGHT_EMAIL and KEYLIGHT_PASSWORD, the folder aiosmtpd writes messages to in
KEYLIGHT_MAIL_FOLDER, the server's --public-url in KEYLIGHT_PUBLIC_URL). With KEYLIGHT_SCREENSHOTS
set, it saves screenshots of the pages. Needs pyotp (PyPI), an authenticator app's arithmetic
written by someone else.

Flow: the owner invites support@example.com as Support on the team page; the mail carries the
link on the public URL; a second browser opens its path on the real port, chooses a password and
lands on the tenant. There the member sets up a second factor (the typed key and the QR code's
URL agree; pyotp's code turns it on; ten recovery codes appear once), signs out and in again with
a later pyotp code (a code of a time step already used is refused), then with a recovery code,
which is refused the second time. As support, the webhook page answers 403 naming
webhooks:read, the tenant page has no link to it, and the product's licenses open. Exits non-zero
on the first failed check; never prints a secret.
"""
import os
import re
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pyotp
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import browser_support
from browser_support import browser, check, post_form, shot

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
OWNER = os.environ["KEYLIGHT_EMAIL"]
OWNER_PASSWORD = os.environ["KEYLIGHT_PASSWORD"]
MAIL = os.environ["KEYLIGHT_MAIL_FOLDER"]
PUBLIC = os.environ["KEYLIGHT_PUBLIC_URL"].rstrip("/")
MEMBER = "support@example.com"
MEMBER_PASSWORD = "support member passphrase"
TENANT = BASE + "/dashboard/t/acme"


def admin(method, path, body=None):
    return browser_support.admin(BASE, TOKEN, method, path, body)


def mails():
    return browser_support.mails(MAIL)


def text(driver, selector):
    found = driver.find_elements(By.CSS_SELECTOR, selector)
    return found[0].text if found else ""


def path(driver):
    return urllib.parse.urlsplit(driver.current_url).path.rstrip("/")


def sign_in(driver, address, password):
    driver.get(BASE + "/dashboard/login")
    form = post_form(driver, "/dashboard/login")
    form.find_element(By.NAME, "email").send_keys(address)
    form.find_element(By.NAME, "password").send_keys(password)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def sign_out(driver):
    driver.get(BASE + "/dashboard")
    driver.find_element(By.CSS_SELECTOR, "form.logout button").click()


def submit_code(driver, code):
    form = post_form(driver, "/dashboard/login/second-factor")
    field = form.find_element(By.NAME, "code")
    field.clear()
    field.send_keys(code)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def member_row(driver, address):
    rows = [row for row in driver.find_elements(By.CSS_SELECTOR, "section.card tbody tr") if row.find_elements(By.TAG_NAME, "td")
            and row.find_elements(By.TAG_NAME, "td")[0].text.split(" ")[0] == address]
    return [cell.text for cell in rows[0].find_elements(By.TAG_NAME, "td")] if rows else None


def status_with_cookies(driver, url):
    """The HTTP status of `url` fetched with the browser's cookies (selenium does not show it)."""
    cookies = "; ".join("%s=%s" % (c["name"], c["value"]) for c in driver.get_cookies())
    request = urllib.request.Request(url, headers={"Cookie": cookies})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def main():
    signal.signal(signal.SIGALRM, lambda *_: (print("FAILED: timed out", file=sys.stderr), os._exit(2)))
    signal.alarm(170)
    admin("POST", "/tenants", {"id": "acme", "name": "Acme"})
    admin("POST", "/tenants/acme/products", {"id": "app", "name": "App", "key_prefix": "ACME"})
    admin("POST", "/tenants/acme/products/app/key-types", {
        "id": "std", "display_name": "Standard", "activation_limit": 2, "fallback_access": False, "entitlements": [],
    })
    license_id = admin("POST", "/tenants/acme/products/app/licenses", {"key_type_id": "std", "customer_email": "ada@example.com"})["id"]
    try:
        admin("POST", "/tenants/acme/webhooks", {"url": "https://hooks.example.com/x"})
        webhook = True
    except urllib.error.HTTPError as error:
        # A server that checks that the address is public may not resolve hooks.example.com here.
        print("note: no webhook endpoint (%d %s)" % (error.code, error.read()[:200].decode(errors="replace")))
        webhook = False

    owner = browser()
    member = None
    try:
        # The owner invites a support member.
        sign_in(owner, OWNER, OWNER_PASSWORD)
        check(lambda: path(owner) == "/dashboard", "the owner signed in to the dashboard")
        owner.get(TENANT + "/team")
        check(lambda: (member_row(owner, OWNER) or [""])[0] == OWNER + " (you)" and member_row(owner, OWNER)[1].startswith("Owner"),
              "the team page lists the owner as Owner")
        form = post_form(owner, "/dashboard/t/acme/team/invite")
        form.find_element(By.NAME, "email").send_keys(MEMBER)
        Select(form.find_element(By.NAME, "role")).select_by_value("support")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: text(owner, "p.once").startswith("Invitation mailed to %s." % MEMBER), "the team page says the invitation was mailed")
        check(lambda: not owner.find_elements(By.ID, "invite-link") and "/dashboard/invite/" not in owner.page_source,
              "the mailed link is not shown to the inviter")
        check(lambda: (member_row(owner, MEMBER) or [])[:3] == [MEMBER, "Support", "user:" + OWNER], "the open invitation is listed as Support, by the owner")
        shot(owner, "team-invited")

        check(lambda: len(mails()) == 1, "the invitation mail arrives", timeout=20)
        envelope, message = mails()[0]
        body = message.get_body(("plain",)).get_content()
        found = re.search(r"(\S+)/dashboard/invite/([A-Za-z0-9_-]{43})\b", body)
        check(lambda: envelope["rcpt_tos"] == [MEMBER] and message["Subject"] == "You are invited to Acme on Keylight",
              "the invitation is mailed to the member: You are invited to Acme on Keylight")
        check(lambda: found is not None and found.group(1) == PUBLIC, "the mail holds the link on the public URL")
        html = message.get_body(("html",)).get_content()
        check(lambda: 'href="%s"' % found.group(0) in html, "the HTML part links to it too")
        invite_path = "/dashboard/invite/" + found.group(2)

        # The member, in a browser of their own.
        member = browser()
        member.get(BASE + invite_path)
        check(lambda: text(member, "h1") == "Join Acme" and "You are invited as Support with %s." % MEMBER in member.page_source,
              "the invitation page names the tenant, the role and the address")
        shot(member, "invitation")
        form = post_form(member, invite_path)
        form.find_element(By.NAME, "password").send_keys(MEMBER_PASSWORD)
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: member.current_url == TENANT and text(member, "header .who") == MEMBER,
              "accepting with a new password signs the member in on the tenant page")
        check(lambda: True, "the invitation was accepted in a second browser")
        member.get(BASE + invite_path)
        check(lambda: "This invitation was used, withdrawn or has expired." in text(member, "p.error"), "the invitation link works once")
        owner.get(TENANT + "/team")
        check(lambda: (member_row(owner, MEMBER) or ["", ""])[1] == "Support" and member_row(owner, MEMBER)[2] == "off"
              and "No open invitations." in owner.page_source, "the team page lists the member as Support, without a second factor")

        # The member turns on a second factor, with the code an independent TOTP implementation computes.
        member.get(BASE + "/dashboard/account")
        member.find_element(By.XPATH, "//button[normalize-space()='Set up a second factor']").click()
        check(lambda: member.find_element(By.ID, "totp-key").text.strip() != "", "the account page shows the key to type")
        typed = member.find_element(By.ID, "totp-key").text
        key = typed.replace(" ", "")
        check(lambda: re.fullmatch(r"[A-Z2-7]{4}( [A-Z2-7]{1,4})+", typed) is not None and len(key) == 52, "the key is base 32 in groups of four")
        url = member.find_element(By.ID, "totp-url").get_attribute("data-url")
        scanned = pyotp.parse_uri(url)
        check(lambda: member.find_elements(By.CSS_SELECTOR, ".qr svg") and scanned.secret.rstrip("=") == key and scanned.issuer == "Keylight"
              and scanned.name == MEMBER and scanned.digits == 6 and scanned.interval == 30, "the QR code's URL holds the same key for Keylight:" + MEMBER)
        shot(member, "two-factor-setup")
        totp = pyotp.TOTP(key)
        now = time.time()
        used_step = int(now) // 30
        form = post_form(member, "/two-factor/enable")
        form.find_element(By.NAME, "code").send_keys(totp.at(now))
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        check(lambda: text(member, "p.flash").startswith("Second factor on."), "the pyotp code turns the second factor on")
        codes = member.find_element(By.ID, "recovery-codes").text.split()
        check(lambda: len(codes) == 10 and len(set(codes)) == 10 and all(re.fullmatch(r"[a-z2-7]{5}-[a-z2-7]{5}", c) for c in codes),
              "ten recovery codes appear")
        check(lambda: True, "TOTP set up with a pyotp code")
        shot(member, "recovery-codes")
        member.get(BASE + "/dashboard/account")
        check(lambda: not member.find_elements(By.ID, "recovery-codes") and "10 unused recovery code(s) left." in text(member, "section.card p"),
              "the recovery codes are shown once")
        owner.get(TENANT + "/team")
        check(lambda: member_row(owner, MEMBER)[2] == "on", "the team page shows the member's second factor on")

        # Signing in again asks for a code after the password; a code works once per time step.
        sign_out(member)
        check(lambda: path(member) == "/dashboard/login", "the member signed out")
        sign_in(member, MEMBER, MEMBER_PASSWORD)
        check(lambda: path(member) == "/dashboard/login/second-factor" and member.find_elements(By.NAME, "code"), "after the password the page asks for the code")
        submit_code(member, totp.at(used_step * 30))
        check(lambda: "That code is not right (or was used already)." in text(member, "p.error"), "the code that turned it on is refused (its time step was used)")
        member.get(BASE + "/dashboard/account")
        check(lambda: path(member) == "/dashboard/login/second-factor" and not member.find_elements(By.CSS_SELECTOR, "header .who"),
              "without a code the account page leads back to the code step")
        # A later time step's code: wait for the step to change (at most 31 seconds).
        deadline = time.time() + 31
        while int(time.time()) // 30 <= used_step and time.time() < deadline:
            time.sleep(0.2)
        now = time.time()
        check(lambda: int(now) // 30 > used_step, "a new time step began")
        submit_code(member, totp.at(now))
        check(lambda: path(member) == "/dashboard" and text(member, "header .who") == MEMBER, "sign-in with TOTP")
        shot(member, "signed-in-with-totp")

        # A recovery code works once.
        sign_out(member)
        sign_in(member, MEMBER, MEMBER_PASSWORD)
        check(lambda: path(member) == "/dashboard/login/second-factor", "the password step, for a recovery code")
        submit_code(member, codes[3])
        check(lambda: path(member) == "/dashboard" and text(member, "header .who") == MEMBER, "a recovery code signs the member in")
        member.get(BASE + "/dashboard/account")
        check(lambda: "9 unused recovery code(s) left." in text(member, "section.card p"), "the account counts 9 recovery codes left")
        sign_out(member)
        sign_in(member, MEMBER, MEMBER_PASSWORD)
        check(lambda: path(member) == "/dashboard/login/second-factor", "the password step, for the same recovery code")
        submit_code(member, codes[3].upper())
        check(lambda: "That code is not right (or was used already)." in text(member, "p.error") and path(member) == "/dashboard/login/second-factor",
              "the used recovery code is refused")
        check(lambda: True, "a recovery code works once")
        submit_code(member, codes[4])
        check(lambda: path(member) == "/dashboard", "another recovery code signs the member in")

        # What support may not open.
        member.get(TENANT + "/webhooks")
        check(lambda: text(member, "h1") == "403" and "This needs the webhooks:read permission" in text(member, "p.error") and "Error 403" in member.title,
              "the webhook page is a 403 page naming webhooks:read")
        check(lambda: status_with_cookies(member, TENANT + "/webhooks") == 403, "with HTTP status 403")
        shot(member, "webhooks-forbidden")
        member.get(TENANT)
        check(lambda: text(member, "h1").startswith("Acme") and member.find_elements(By.CSS_SELECTOR, "a[href='/dashboard/t/acme/p/app/licenses']"),
              "the tenant page opens for support, with the product's licenses")
        check(lambda: not member.find_elements(By.CSS_SELECTOR, "a[href$='/webhooks']") and not member.find_elements(By.CSS_SELECTOR, "a[href$='/team']"),
              "the tenant page has no link to webhooks or the team")
        member.get(TENANT + "/team")
        check(lambda: text(member, "h1") == "403" and "users:manage" in text(member, "p.error"), "the team page is a 403 page for support")
        member.get(TENANT + "/p/app/licenses")
        check(lambda: text(member, "h1") == "Licenses · App" and member.find_elements(By.CSS_SELECTOR, "a[href$='/licenses/%s']" % license_id),
              "the product's licenses open for support")
        check(lambda: status_with_cookies(member, TENANT + "/p/app/licenses") == 200, "with HTTP status 200")
        check(lambda: True, "support cannot open the webhook page")

        owner.get(TENANT + "/webhooks")
        check(lambda: text(owner, "h1") != "403" and (not webhook or "hooks.example.com" in owner.page_source), "the owner opens the webhook page")
        owner.get(TENANT)
        check(lambda: owner.find_elements(By.CSS_SELECTOR, "a[href='/dashboard/t/acme/webhooks']"), "the owner's tenant page links to it")
    finally:
        owner.quit()
        if member:
            member.quit()


if __name__ == "__main__":
    main()
