"""App Store purchases exchanged for licenses, from outside, held to Apple's own verdicts.

Run by KeylightCLITests/AppStoreScriptTests against a `keylight serve --appstore-root-cert ROOT`
whose ROOT is the test root appstore_cases.py made (CASES is that script's JSON):

    KEYLIGHT_URL=… KEYLIGHT_ADMIN_TOKEN=… CASES=cases.json python3 appstore_exchange.py

For each signed transaction, Apple's app-store-server-library (SignedDataVerifier, the same root)
and the server must agree: accepted by both, or refused by both, with the code that names Apple's
reason; a refusal changes nothing. Then: the answer's license_key activates like any key, 50
concurrent exchanges of one purchase mint one license, a renewal extends the same license, and
unmapped, revoked and expired transactions are refused with their own codes.
"""
import base64
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

BASE = os.environ["KEYLIGHT_URL"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
DATA = json.load(open(os.environ["CASES"]))
# Apple's reason → the server's code for the same refusal.
CODES = {
    "INVALID_APP_IDENTIFIER": {"APPSTORE_BUNDLE_MISMATCH"},
    "INVALID_ENVIRONMENT": {"APPSTORE_ENVIRONMENT_REFUSED"},
    "VERIFICATION_FAILURE": {"APPSTORE_SIGNATURE_INVALID", "APPSTORE_CHAIN_UNTRUSTED"},
    "INVALID_CHAIN_LENGTH": {"APPSTORE_CHAIN_UNTRUSTED"},
    "INVALID_CERTIFICATE": {"APPSTORE_CHAIN_UNTRUSTED"},
}
EXPECTED_CODE = {"tampered payload": "APPSTORE_SIGNATURE_INVALID", "wrong root": "APPSTORE_CHAIN_UNTRUSTED",
                 "leaf without marker": "APPSTORE_CHAIN_UNTRUSTED", "intermediate without marker": "APPSTORE_CHAIN_UNTRUSTED",
                 "leaf expired at signedDate": "APPSTORE_CHAIN_UNTRUSTED"}


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def ok(message):
    print(f"ok: {message}", flush=True)


def call(method, path, body=None, headers=None):
    request = urllib.request.Request(BASE + path, data=json.dumps(body).encode() if body is not None else None, method=method)
    request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text else {}


def admin(method, path, body=None, expect=200):
    status, answer = call(method, "/admin/v1" + path, body, {"Authorization": f"Bearer {TOKEN}"})
    if status != expect:
        fail(f"{method} {path} answered {status} {answer}, expected {expect}")
    return answer


admin("POST", "/tenants", {"id": "store", "name": "Store"}, expect=201)
sdk_key = admin("POST", "/tenants/store/products", {"id": "app", "name": "App", "key_prefix": "STOR"}, expect=201)["sdk_key"]
product = admin("PATCH", "/tenants/store/products/app", {"appstore_bundle_id": "com.acme.app"})
if product.get("appstore_environments") != ["Production"]:
    fail(f"default environments: {product}")
admin("POST", "/tenants/store/products/app/key-types", {"id": "pro", "display_name": "Pro", "activation_limit": 3, "fallback_access": False, "entitlements": ["pro"]}, expect=201)
admin("PATCH", "/tenants/store/products/app/key-types/pro", {"appstore_product_id": "com.acme.app.pro"})
SDK = {"X-Keylight-SDK-Key": sdk_key}


def exchange(jws, machine="mac-1"):
    return call("POST", "/store/app/appstore/activate", {"signed_transaction": jws, "instance_name": "Mac", "machine_hash": machine}, SDK)


def license_count():
    return len(admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"])


agreed = 0
for case in DATA["cases"]:
    before = license_count()
    status, answer = exchange(case["jws"])
    if case["apple"] == "ok":
        if status != 200 or answer.get("activated") is not True or not answer.get("license_key"):
            fail(f"{case['name']}: Apple accepts it, the server answered {status} {answer}")
    else:
        codes = CODES.get(case["apple"], set())
        if status != 422 or answer.get("code") not in codes:
            fail(f"{case['name']}: Apple refuses it ({case['apple']}), the server answered {status} {answer}")
        if case["name"] in EXPECTED_CODE and answer["code"] != EXPECTED_CODE[case["name"]]:
            fail(f"{case['name']}: answered {answer['code']}, expected {EXPECTED_CODE[case['name']]}")
        if license_count() != before:
            fail(f"{case['name']}: a refused exchange changed the licenses")
    agreed += 1
ok(f"the server and Apple's app-store-server-library agree on all {agreed} signed transactions: " + ", ".join(f"{c['name']} ({c['apple']})" for c in DATA["cases"]))

# Accepting Sandbox changes the environment verdict, and only it.
sandbox = next(c for c in DATA["cases"] if c["name"] == "sandbox")
admin("PATCH", "/tenants/store/products/app", {"appstore_environments": ["Production", "Sandbox"]})
status, answer = exchange(sandbox["jws"])
if status != 200:
    fail(f"sandbox accepted by the product, still refused: {status} {answer}")
admin("PATCH", "/tenants/store/products/app", {"appstore_environments": None})
ok("a product that accepts Sandbox takes the sandbox transaction")

# The key the answer carries is a license key like any other.
valid = next(c for c in DATA["cases"] if c["name"] == "valid")
status, answer = exchange(valid["jws"])
key = answer["license_key"]
if answer.get("appstore", {}).get("original_transaction_id") != valid["original_transaction_id"]:
    fail(f"appstore origin missing: {answer}")
# Protocol 6.9: the license pane's two, as activate answers them (the App Store gives no address: null).
if answer.get("key_type_name") != "Pro" or "customer_email" not in answer or answer["customer_email"] is not None:
    fail(f"the exchange's answer lacks key_type_name or customer_email: {answer}")
status, direct = call("POST", "/store/app/activate", {"license_key": key, "instance_name": "PC", "machine_hash": "pc-1"}, SDK)
if status != 200:
    fail(f"the exchanged license_key does not activate directly: {status} {direct}")
found = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == valid["original_transaction_id"]]
if len(found) != 1 or found[0]["payment_source"] != "appstore":
    fail(f"the purchase's license: {found}")
ok("the answer's license_key activates in a direct build; the license names appstore and the original transaction; the answer names the key type")

# The exchange activates as activate does: the key type's cap (3 devices: mac-1, pc-1, mac-3), and a signed
# answer when the app asks for one.
nonce = base64.b64encode(os.urandom(12)).decode()
request = urllib.request.Request(BASE + "/store/app/appstore/activate", method="POST", data=json.dumps(
    {"signed_transaction": valid["jws"], "instance_name": "Mac", "machine_hash": "mac-3"}).encode())
for name, value in dict(SDK, **{"Content-Type": "application/json", "X-Keylight-Nonce": nonce}).items():
    request.add_header(name, value)
with urllib.request.urlopen(request, timeout=60) as response:
    signed_headers = {name.lower(): value for name, value in response.headers.items()}
    third = json.loads(response.read())
if third.get("activated") is not True or not all(h in signed_headers for h in ("x-keylight-signature", "x-keylight-signature-kid", "x-keylight-request-time")):
    fail(f"a third device, asking for a signed answer: {third} {signed_headers}")
before = license_count()
status, full = exchange(valid["jws"], machine="mac-4")
if status != 409 or full.get("code") != "ACTIVATION_LIMIT_REACHED" or full.get("activated") is not False or license_count() != before:
    fail(f"a fourth device on a 3-device license answered {status} {full}")
ok("the exchange keeps the key type's cap (409 on the fourth device) and signs its answer when asked (X-Keylight-Nonce)")

# 50 concurrent exchanges of one purchase: one license.
results = []
def race():
    results.append(exchange(DATA["extra"]["race"], machine="racer"))
threads = [threading.Thread(target=race) for _ in range(50)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
statuses = sorted({status for status, _ in results})
keys = {answer.get("license_key") for _, answer in results}
if statuses != [200] or len(keys) != 1:
    fail(f"race: statuses {statuses}, {len(keys)} distinct keys")
race_original = json.loads(__import__("base64").urlsafe_b64decode(DATA["extra"]["race"].split(".")[1] + "==")).get("originalTransactionId")
minted = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == race_original]
if len(minted) != 1:
    fail(f"race minted {len(minted)} licenses")
ok("50 concurrent exchanges of one purchase mint one license and answer one key")

for name, code in (("unmapped", "APPSTORE_PRODUCT_UNMAPPED"), ("revoked", "APPSTORE_TRANSACTION_REVOKED"), ("expired_subscription", "APPSTORE_TRANSACTION_EXPIRED")):
    before = license_count()
    status, answer = exchange(DATA["extra"][name])
    if status != 422 or answer.get("code") != code or license_count() != before:
        fail(f"{name}: {status} {answer}")
ok("unmapped, revoked and expired transactions are refused by name and change nothing")

status, first = exchange(DATA["extra"]["subscription"], machine="sub")
status2, second = exchange(DATA["extra"]["subscription_renewed"], machine="sub")
if status != 200 or status2 != 200 or first["license_key"] != second["license_key"] or not second["license_expires_at"] > first["license_expires_at"]:
    fail(f"renewal: {status} {first} / {status2} {second}")
ok("a renewed subscription's transaction extends the same license")
status, bad = call("POST", "/store/app/appstore/activate", {"instance_name": "Mac"}, SDK)
if status != 400:
    fail(f"a body without signed_transaction answered {status} {bad}")


# MARK: App Store Server Notifications V2
N = DATA["notifications"]
V = DATA["notification_verdicts"]


def notify(jws):
    return call("POST", "/appstore/notifications/store", {"signedPayload": jws})


# Every refusal is Apple's too, with the code that says why, and changes nothing.
before_licenses = admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"]
refusals = {
    "tampered": ("APPSTORE_SIGNATURE_INVALID",), "wrong_root": ("APPSTORE_CHAIN_UNTRUSTED",),
    "leaf_without_marker": ("APPSTORE_CHAIN_UNTRUSTED",), "intermediate_without_marker": ("APPSTORE_CHAIN_UNTRUSTED",),
    "expired_leaf": ("APPSTORE_CHAIN_UNTRUSTED",), "sandbox": ("APPSTORE_ENVIRONMENT_REFUSED",),
}
for name, codes in refusals.items():
    status, answer = notify(N[name])
    if V[name] == "ok" or status != 422 or answer.get("code") not in codes:
        fail(f"notification {name}: Apple {V[name]}, server {status} {answer}")
# The outer JWS is Apple's, the transaction inside is not: Apple's library refuses that transaction, and so does the server.
status, answer = notify(N["foreign_transaction"])
if V["foreign_transaction"] != "ok" or DATA["nested_verdicts"]["foreign_transaction"] == "ok" or status != 422 or answer.get("code") != "APPSTORE_CHAIN_UNTRUSTED":
    fail(f"a notification around a foreign transaction: Apple {V['foreign_transaction']}/{DATA['nested_verdicts']['foreign_transaction']}, server {status} {answer}")
if admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] != before_licenses:
    fail("a refused notification changed a license")
for name in ("did_renew", "refund_valid", "refund_early", "expired", "revoke", "grace_expired"):
    if V[name] != "ok":
        fail(f"Apple's library refused the notification {name}: {V[name]}")
if DATA["nested_verdicts"]["did_renew"] != "ok":
    fail(f"Apple's library refused a renewal's transaction: {DATA['nested_verdicts']['did_renew']}")
ok("notifications: Apple's library and the server accept the signed ones and refuse the same ones (tampered, foreign root, a marker missing, an expired leaf, sandbox, a foreign transaction inside), changing nothing")

# REVOKE (Family Sharing) revokes; GRACE_PERIOD_EXPIRED lapses the subscription now.
def by_original(jws):
    original = json.loads(base64.urlsafe_b64decode(jws.split(".")[1] + "=="))["originalTransactionId"]
    return [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == original]
for key in ("revokable", "grace"):
    status, answer = exchange(DATA["extra"][key], machine=key)
    if status != 200:
        fail(f"exchange of {key}: {status} {answer}")
status, answer = notify(N["revoke"])
if status != 200 or answer.get("outcome") != "revoked" or [l["status"] for l in by_original(DATA["extra"]["revokable"])] != ["revoked"]:
    fail(f"REVOKE: {status} {answer} {by_original(DATA['extra']['revokable'])}")
status, answer = notify(N["grace_expired"])
lapsed = by_original(DATA["extra"]["grace"])
if status != 200 or answer.get("outcome") != "expired" or len(lapsed) != 1 or lapsed[0]["expires_at"] is None or lapsed[0]["expires_at"] > time.time() + 1:
    fail(f"GRACE_PERIOD_EXPIRED: {status} {answer} {lapsed}")
ok("notifications: REVOKE revokes its purchase's license, GRACE_PERIOD_EXPIRED lapses it now")

status, answer = notify(N["did_renew"])
if status != 200 or answer.get("outcome") != "renewed":
    fail(f"DID_RENEW: {status} {answer}")
if notify(N["did_renew"])[1].get("outcome") != "duplicate":
    fail("a repeated notification was applied again")
renewed = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == DATA["subscription_original"]]
if len(renewed) != 1 or renewed[0]["expires_at"] != DATA["renewed_expires"]:
    fail(f"DID_RENEW did not move the subscription's license to {DATA['renewed_expires']}: {renewed}")
status, answer = notify(N["refund_valid"])
if status != 200 or answer.get("outcome") != "revoked":
    fail(f"REFUND: {status} {answer}")
valid_license = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == DATA["valid_original"]]
if [l["status"] for l in valid_license] != ["revoked"]:
    fail(f"REFUND left {valid_license}")
status, answer = notify(N["refund_early"])
if status != 200 or answer.get("outcome") != "no_license":
    fail(f"REFUND before the exchange: {status} {answer}")
status, answer = exchange(DATA["early"], machine="early")
if status != 422 or answer.get("code") != "APPSTORE_TRANSACTION_REVOKED":
    fail(f"an exchange after its purchase's REFUND answered {status} {answer}")
status, answer = notify(N["expired"])
ended = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == DATA["subscription_original"]]
if status != 200 or answer.get("outcome") != "expired" or ended[0]["expires_at"] > time.time() + 1:
    fail(f"EXPIRED: {status} {answer} {ended}")
# Apple keeps the original transaction id when a customer resubscribes: the license comes back.
status, answer = notify(N["resubscribed"])
back = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == DATA["subscription_original"]]
if status != 200 or answer.get("outcome") != "renewed" or back[0]["expires_at"] != DATA["resubscribed_expires"]:
    fail(f"SUBSCRIBED after EXPIRED: {status} {answer} {back}")
status, answer = notify(N["late_expired"])
if status != 200 or answer.get("outcome") != "stale":
    fail(f"an EXPIRED about an older period, arriving late: {status} {answer}")
status, answer = notify(N["refund_reversed"])
valid_license = [l for l in admin("GET", "/tenants/store/products/app/licenses?limit=500")["licenses"] if l["payment_order_id"] == DATA["valid_original"]]
if status != 200 or answer.get("outcome") != "reinstated" or valid_license[0]["status"] != "active":
    fail(f"REFUND_REVERSED: {status} {answer} {valid_license}")
status, answer = notify(N["other_app"])
if status != 200 or answer.get("outcome") != "ignored" or notify(N["other_app"])[1].get("outcome") != "duplicate":
    fail(f"a notification for an app no product sells: {status} {answer}")
audit = admin("GET", "/audit-log?tenant=store&limit=500")["entries"]
if sum(1 for e in audit if e["action"] == "appstore.notification") != 10:
    fail(f"each notification is audited once: {sum(1 for e in audit if e['action'] == 'appstore.notification')}")
ok("notifications: DID_RENEW extends once (a repeat is a duplicate), REFUND revokes (before an exchange too), EXPIRED lapses, SUBSCRIBED after it reopens, a late EXPIRED is stale, REFUND_REVERSED reinstates, another app's is ignored; each audited")
ok("every App Store exchange and notification path holds")
