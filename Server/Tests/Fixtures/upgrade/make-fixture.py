#!/usr/bin/env python3
"""Makes the upgrade fixture: a database written by an old `keylight serve`, through its public
interfaces only, holding every kind of row its schema has; then its SQL dump, its master key, and
what that server answered (expected.json), for the upgrade test to hold today's server to.

    python3 Server/Tests/Fixtures/upgrade/make-fixture.py --binary PATH --out DIR

PATH is the old release's `keylight` binary (for 63ae57f: `git worktree add /tmp/old 63ae57f &&
swift build --package-path /tmp/old/Server --product keylight`); DIR receives keylight.sql,
master-key and expected.json (e.g. Server/Tests/Fixtures/upgrade/63ae57f).

Everything goes through what the release offered: the admin API (/admin/v1), the SDK API (protocol.md,
/{tenant}/{product}/…), the dashboard's and the customer portal's forms, Stripe, Paddle, Lemon Squeezy,
Polar and App Store deliveries signed the way each provider signs them (Stripe's own library,
standardwebhooks for Polar, the documented HMACs for Paddle and Lemon Squeezy, an ES256 JWS on a
test chain for the App Store, the server being given that chain's root), and the binary's own
CLI (`admin create-user`, `client` for offline activation and an SDK activation). Its outbound
webhooks, mails, Stripe Checkout calls and Paddle customer look-ups reach small servers run here.
No row is written by hand.

Three runs of the server on one database, each stopped with SIGTERM (which flushes its buffered
writes): A the catalogue, licenses, devices and keyless installs; B updates, a trial's conversion,
signing-key rotations, revoke/suspend/remint, idempotent POSTs; C the money paths, mail, portal,
dashboard, offline and floating seats, and the answers. Then the dump is loaded into a new file,
the old binary is started on it, and every validate must answer as before (expected.json holds
those answers).

Time. The server stamps rows with its own clock. The insights roll-ups (`insights_daily`,
`insights_rollups`) cover only days that are over, so runs A and B happen on the two previous
days: the binary runs under libfaketime (`LD_PRELOAD`, its clock started at 10:00 UTC of that day;
`--faketime-lib`, or the library inside the `libfaketime` pip package, `pip install libfaketime`,
which is only looked up, not imported). With `--no-backdate` every run is today's and those two
tables stay empty (the summary says so). Expiry dates the API takes are fixed (2036 in the future,
2021 in the past).

Stdlib, plus `cryptography` (the App Store chain), `stripe` (Stripe's signatures) and
`standardwebhooks` (Polar's). Takes about a minute.
"""
import argparse
import base64
import datetime
import email.utils
import hashlib
import hmac
import http.server
import importlib.util
import json
import os
import re
import shutil
import signal
import socketserver
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import stripe
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.x509.oid import NameOID
from standardwebhooks import Webhook

DAY = 86_400
FUTURE = 2_082_758_400          # 2036-01-01T00:00:00Z
FUTURE_UPDATES = 1_924_992_000  # 2031-01-01T00:00:00Z
PAST = 1_609_459_200            # 2021-01-01T00:00:00Z
NS = uuid.UUID("6f0c2a52-7d6e-4c57-9a43-3d0f7e2b9a10")
PASSWORD = "fixture-password-0123"


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


RUNNING = []  # servers started and not yet stopped: killed if the script ends early


def fail(message):
    print(f"FAIL: {message}", flush=True)
    raise SystemExit(1)


def kill_running():
    for process in RUNNING:
        if process.poll() is None:
            process.kill()
            process.wait()


def did(name):
    """A deterministic id (keyless installs, machine hashes)."""
    return str(uuid.uuid5(NS, name))


def machine(name):
    return hashlib.sha256(f"fixture-machine-{name}".encode()).hexdigest()


def iso(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def telemetry(app, os_version="15.1", platform="macOS", arch="arm64", cores="9-16", memory="16-32GB", sdk="swift", sdk_version="1.1.0"):
    return {"app_version": app, "sdk_version": sdk_version, "sdk": sdk, "platform": platform, "os_version": os_version,
            "arch": arch, "cpu_cores": cores, "memory": memory}


# MARK: HTTP

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def json(self):
        try:
            value = json.loads(self.body) if self.body else {}
        except ValueError:
            return {"raw": self.body.decode("utf-8", "replace")}
        return value

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def cookies(self):
        found = {}
        for header in self.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            found[name.strip()] = rest.split(";")[0]
        return found


def request(method, url, body=None, headers=None, raw=None, form=None):
    data = raw
    headers = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
    req = urllib.request.Request(url, data=data, method=method)
    for name, value in headers.items():
        req.add_header(name, value)
    try:
        with OPENER.open(req, timeout=60) as response:
            return Answer(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read())


# MARK: what the server talks to: webhook receivers, an SMTP sink, fake Stripe and Paddle APIs

class Receivers:
    """Outbound webhooks (`/ok` 200, `/fail` 500, `/gone` 410), Stripe's Checkout API and Paddle's
    customer API, on one local HTTP server."""

    def __init__(self):
        self.events = []
        self.lock = threading.Lock()
        self.paddle_customers = {}
        self.stripe_sessions = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length)
                if self.path == "/v1/checkout/sessions":
                    with outer.lock:
                        n = len(outer.stripe_sessions) + 1
                        session = {"id": f"cs_test_fixture_{n:04d}", "url": f"https://checkout.stripe.com/c/pay/cs_test_fixture_{n:04d}",
                                   "form": urllib.parse.parse_qs(data.decode())}
                        outer.stripe_sessions.append(session)
                    return self.answer(200, {"id": session["id"], "url": session["url"], "object": "checkout.session"})
                try:
                    event = json.loads(data)
                except ValueError:
                    event = None
                with outer.lock:
                    outer.events.append({"path": self.path, "event": event, "signature": self.headers.get("Keylight-Signature")})
                if self.path.startswith("/ok"):
                    return self.answer(200, {"ok": True})
                if self.path.startswith("/gone"):
                    return self.answer(410, {"gone": True})
                return self.answer(500, {"error": "receiver down"})

            def do_GET(self):
                match = re.fullmatch(r"/customers/([A-Za-z0-9_]+)", self.path)
                address = outer.paddle_customers.get(match.group(1)) if match else None
                if address:
                    return self.answer(200, {"data": {"id": match.group(1), "email": address, "status": "active"}, "meta": {"request_id": "r"}})
                return self.answer(404, {"error": {"type": "request_error", "code": "not_found"}})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def license_keys(self):
        """license id -> raw key, from every `license.created` delivered."""
        keys = {}
        with self.lock:
            for item in self.events:
                event = item["event"] or {}
                if event.get("type") == "license.created":
                    data = event.get("data", {})
                    if data.get("license_key"):
                        keys[data["license"]["id"]] = data["license_key"]
        return keys


class SMTPSink:
    """A minimal SMTP server: takes every mail except to addresses with `softbounce` (451 at
    RCPT: retried later) or `hardbounce` (550: final)."""

    def __init__(self):
        self.messages = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def say(self, line):
                self.wfile.write(line.encode() + b"\r\n")
                self.wfile.flush()

            def handle(self):
                self.say("220 fixture-sink ESMTP")
                recipients = []
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    command = line.decode("utf-8", "replace").strip()
                    upper = command.upper()
                    if upper.startswith("EHLO"):
                        self.say("250-fixture-sink")
                        self.say("250-8BITMIME")
                        self.say("250 SMTPUTF8")
                    elif upper.startswith("HELO"):
                        self.say("250 fixture-sink")
                    elif upper.startswith("MAIL FROM"):
                        recipients = []
                        self.say("250 2.1.0 ok")
                    elif upper.startswith("RCPT TO"):
                        if "softbounce" in command.lower():
                            self.say("451 4.3.0 mailbox busy, try later")
                        elif "hardbounce" in command.lower():
                            self.say("550 5.1.1 no such user")
                        else:
                            recipients.append(command.split(":", 1)[1].strip().strip("<>"))
                            self.say("250 2.1.5 ok")
                    elif upper == "DATA":
                        self.say("354 go ahead")
                        lines = []
                        while True:
                            data = self.rfile.readline()
                            if not data or data in (b".\r\n", b".\n"):
                                break
                            lines.append(data[1:] if data.startswith(b"..") else data)
                        outer.messages.append({"to": recipients, "message": b"".join(lines)})
                        self.say("250 2.0.0 queued")
                    elif upper in ("RSET", "NOOP"):
                        self.say("250 ok")
                    elif upper == "QUIT":
                        self.say("221 bye")
                        return
                    else:
                        self.say("502 5.5.2 not implemented")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# MARK: App Store signed data (a test chain shaped like Apple's)

LEAF_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")
INTERMEDIATE_MARKER = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")


class AppStoreChain:
    def __init__(self):
        def name(text):
            return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Keylight Fixture")])

        def certificate(subject, key, issuer, issuer_key, ca, marker=None):
            now = datetime.datetime.now(datetime.timezone.utc)
            builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer)).public_key(key.public_key())
                       .serial_number(x509.random_serial_number())
                       .not_valid_before(now - datetime.timedelta(days=30)).not_valid_after(now + datetime.timedelta(days=3650))
                       .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False, data_encipherment=False,
                                                    key_agreement=False, key_cert_sign=ca, crl_sign=ca, encipher_only=False, decipher_only=False), critical=True)
                       .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
            if issuer_key is not key:
                builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
            if marker is not None:
                builder = builder.add_extension(x509.UnrecognizedExtension(marker, b"\x05\x00"), critical=False)
            return builder.sign(issuer_key, hashes.SHA256())

        self.root_key = ec.generate_private_key(ec.SECP256R1())
        self.root = certificate("Fixture Root", self.root_key, "Fixture Root", self.root_key, ca=True)
        self.intermediate_key = ec.generate_private_key(ec.SECP256R1())
        self.intermediate = certificate("Fixture WWDR", self.intermediate_key, "Fixture Root", self.root_key, ca=True, marker=INTERMEDIATE_MARKER)
        self.leaf_key = ec.generate_private_key(ec.SECP256R1())
        self.leaf = certificate("Fixture StoreKit", self.leaf_key, "Fixture WWDR", self.intermediate_key, ca=False, marker=LEAF_MARKER)

    def root_pem(self):
        return self.root.public_bytes(serialization.Encoding.PEM)

    def sign(self, payload):
        header = {"alg": "ES256", "x5c": [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode() for c in (self.leaf, self.intermediate, self.root)]}
        encode = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        signing_input = encode(json.dumps(header).encode()) + "." + encode(json.dumps(payload).encode())
        r, s = decode_dss_signature(self.leaf_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    @staticmethod
    def transaction(bundle, product, original, transaction_id=None, expires_ms=None):
        now_ms = int(time.time() * 1000)
        payload = {
            "transactionId": transaction_id or original, "originalTransactionId": original, "bundleId": bundle, "productId": product,
            "purchaseDate": now_ms - 60_000, "originalPurchaseDate": now_ms - 60_000, "quantity": 1,
            "type": "Auto-Renewable Subscription" if expires_ms else "Non-Consumable", "inAppOwnershipType": "PURCHASED",
            "signedDate": now_ms, "environment": "Production", "transactionReason": "PURCHASE",
            "storefront": "USA", "storefrontId": "143441", "price": 9990, "currency": "USD",
        }
        if expires_ms:
            payload["expiresDate"] = expires_ms
            payload["webOrderLineItemId"] = str(int(original) + 7)
        return payload

    def notification(self, bundle, kind, signed_transaction, uuid_text):
        return self.sign({"notificationType": kind, "notificationUUID": uuid_text, "version": "2.0", "signedDate": int(time.time() * 1000),
                          "data": {"bundleId": bundle, "appAppleId": 1234567890, "environment": "Production", "signedTransactionInfo": signed_transaction}})


# MARK: the old server

class OldServer:
    def __init__(self, binary, workdir, db, args=(), faketime_lib=None, fake_start=None, env_extra=None, label="server", token=None):
        """`token` None: the first start on a new database, which makes the admin token, stores
        its hash in `settings` and prints it once; later starts read the stored hash."""
        self.binary, self.workdir, self.db = binary, workdir, db
        env = {k: v for k, v in os.environ.items() if not k.startswith("KEYLIGHT_") and k not in ("LD_PRELOAD", "FAKETIME")}
        env.update({"TZ": "UTC"})
        if fake_start is not None:
            env.update({"LD_PRELOAD": faketime_lib, "FAKETIME": "@" + time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(fake_start)),
                        "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
        env.update(env_extra or {})
        self.env = env
        self.log_path = os.path.join(workdir, f"{label}.log")
        self.log = open(self.log_path, "ab")
        self.process = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", "0", "--db", db, *args],
                                        cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=self.log)
        RUNNING.append(self.process)
        self.lines = []
        ready = threading.Event()
        told = threading.Event()

        def read():
            for raw in self.process.stdout:
                line = raw.decode("utf-8", "replace")
                self.lines.append(line)
                if "listening on" in line:
                    ready.set()
                if "Admin API token" in line:
                    told.set()
            ready.set()
            told.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(120) or self.process.poll() is not None:
            fail(f"{label} did not start: {''.join(self.lines)} (log {self.log_path})")
        match = re.search(r"http://127\.0\.0\.1:(\d+)", "".join(self.lines))
        if not match:
            fail(f"{label}: no port in {self.lines}")
        self.base = f"http://127.0.0.1:{match.group(1)}"
        self.label = label
        if token is None:
            told.wait(30)
            found = re.search(r"Admin API token \(shown once; store it now\): (\S+)", "".join(self.lines))
            if not found:
                fail(f"{label}: the first start printed no admin token: {self.lines}")
            token = found.group(1)
        self.token = token

    def stop(self):
        """SIGTERM: the server drains, flushes its buffered writes and closes the database."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(90)
        except subprocess.TimeoutExpired:
            self.process.kill()
            fail(f"{self.label} did not stop within 90 s of SIGTERM")
        self.log.close()
        if code != 0:
            fail(f"{self.label} exited {code} after SIGTERM (log {self.log_path})")

    # The APIs.

    def admin(self, method, path, body=None, expect=200, headers=None):
        answer = request(method, self.base + "/admin/v1" + path, body=body, headers={"Authorization": f"Bearer {self.token}", **(headers or {})})
        if expect is not None and answer.status != expect:
            fail(f"{method} /admin/v1{path} answered {answer.status} {answer.text[:500]}, expected {expect}")
        return answer.json

    def sdk(self, tenant, product, action, body, sdk_key=None, nonce=False):
        headers = {}
        if sdk_key:
            headers["X-Keylight-SDK-Key"] = sdk_key
        if nonce:
            headers["X-Keylight-Nonce"] = base64.b64encode(os.urandom(12)).decode()
        return request("POST", f"{self.base}/{tenant}/{product}/{action}", body=body, headers=headers)


# MARK: the fixture

class Fixture:
    def __init__(self, args):
        self.args = args
        self.binary = os.path.abspath(args.binary)
        self.workdir = tempfile.mkdtemp(prefix="keylight-fixture-")
        self.db = os.path.join(self.workdir, "keylight.sqlite")
        self.receivers = Receivers()
        self.smtp = SMTPSink()
        self.chain = AppStoreChain()
        self.root_pem = os.path.join(self.workdir, "appstore-root.pem")
        with open(self.root_pem, "wb") as f:
            f.write(self.chain.root_pem())
        self.server = None
        self.token = None
        self.sdk_keys = {}      # "tenant/product" -> SDK key
        self.licenses = {}      # name -> {tenant, product, id, key, key_type_id, instances: [...], validate_without_key: bool}
        self.validated_at_creation = {}
        self.secrets = {}       # known plaintexts of sealed secrets, by context
        self.faketime_lib = self.find_faketime()
        self.phase_clocks = []

    def find_faketime(self):
        if self.args.no_backdate:
            return None
        if self.args.faketime_lib:
            if not os.path.isfile(self.args.faketime_lib):
                fail(f"--faketime-lib {self.args.faketime_lib}: no such file")
            return os.path.abspath(self.args.faketime_lib)
        spec = importlib.util.find_spec("libfaketime")
        if spec and spec.submodule_search_locations:
            path = os.path.join(list(spec.submodule_search_locations)[0], "vendor", "libfaketime", "src", "libfaketime.so.1")
            if os.path.exists(path):
                return path
        fail("libfaketime not found: `pip install libfaketime`, or --faketime-lib PATH, or --no-backdate (insights_daily and insights_rollups then stay empty)")

    def server_args(self):
        return ["--rate-limit-address", "0", "--rate-limit-license", "0", "--webhook-allow-private", "--webhook-poll-interval", "1",
                "--stripe-api-base", self.receivers.base, "--paddle-api-base", self.receivers.base,
                "--appstore-root-cert", self.root_pem,
                "--smtp-url", f"smtp://127.0.0.1:{self.smtp.port}?tls=none", "--mail-from", "Acme Sales <sales@acme.example>",
                "--mail-retry-seconds", "20", "--log-level", "info"]

    def start(self, label, fake_start=None):
        self.server = OldServer(self.binary, self.workdir, self.db, self.server_args(), self.faketime_lib, fake_start, label=label, token=self.token)
        self.token = self.server.token
        clock = request("GET", self.server.base + "/healthz").headers.get("Date")
        if fake_start is not None and abs(email.utils.parsedate_to_datetime(clock).timestamp() - fake_start) > 120:
            fail(f"{label}: the server's clock says {clock}, not {iso(fake_start)}: is {self.faketime_lib} libfaketime?")
        self.phase_clocks.append({"phase": label, "server_clock_at_start": clock,
                                  "faked": fake_start is not None,
                                  "fake_start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(fake_start)) if fake_start else None})
        log(f"{label}: old server at {self.server.base}, its clock says {clock}")
        return self.server

    def stop(self):
        self.server.stop()
        log(f"{self.server.label}: stopped gracefully (SIGTERM)")
        self.server = None

    # Helpers on the running server.

    @property
    def s(self):
        return self.server

    def mint(self, name, tenant, product, key_type, expect=201, headers=None, **fields):
        body = {"key_type_id": key_type, **fields}
        answer = self.s.admin("POST", f"/tenants/{tenant}/products/{product}/licenses", body, expect=expect, headers=headers)
        self.licenses[name] = {"tenant": tenant, "product": product, "id": answer["id"], "key": answer["license_key"],
                               "key_type_id": key_type, "instances": []}
        return self.licenses[name]

    def adopt(self, name, tenant, product, license_id, key, key_type):
        self.licenses[name] = {"tenant": tenant, "product": product, "id": license_id, "key": key, "key_type_id": key_type, "instances": []}
        return self.licenses[name]

    def sdk_key(self, lic):
        return self.sdk_keys[f"{lic['tenant']}/{lic['product']}"]

    def activate(self, name, device, tele, expect=200, nonce=False, with_sdk_key=True, **extra):
        lic = self.licenses[name]
        body = {"license_key": lic["key"], "instance_name": device, "machine_hash": machine(f"{name}/{device}"), **tele, **extra}
        answer = self.s.sdk(lic["tenant"], lic["product"], "activate", body, self.sdk_key(lic) if with_sdk_key else None, nonce=nonce)
        if answer.status != expect:
            fail(f"activate {name} on {device}: {answer.status} {answer.text[:400]}, expected {expect}")
        if expect == 200:
            instance = {"instance_id": answer.json["instance_id"], "device": device, "machine_hash": body["machine_hash"], "tele": tele}
            known = next((i for i in lic["instances"] if i["instance_id"] == instance["instance_id"]), None)
            if known:
                known["tele"] = tele
                return known
            lic["instances"].append(instance)
            return instance
        return answer.json

    def validate_body(self, lic, instance, tele=None):
        body = {"license_key": lic["key"], "instance_id": instance["instance_id"]}
        if instance.get("machine_hash"):
            body["machine_hash"] = instance["machine_hash"]
        body.update(tele or {})
        return body

    def validate(self, name, instance, tele, expect=200, nonce=False):
        lic = self.licenses[name]
        key = None if lic.get("no_sdk_key") else self.sdk_key(lic)
        answer = self.s.sdk(lic["tenant"], lic["product"], "validate", self.validate_body(lic, instance, tele), key, nonce=nonce)
        instance["tele"] = tele
        if expect is not None and answer.status != expect:
            fail(f"validate {name} {instance['instance_id']}: {answer.status} {answer.text[:400]}, expected {expect}")
        return answer

    def keyless(self, tenant, product, install, state, tele, nonce=False):
        answer = self.s.sdk(tenant, product, "keyless", {"instance_id": did(install), "state": state, "machine_hash": machine(install), **tele},
                            self.sdk_keys[f"{tenant}/{product}"], nonce=nonce)
        if answer.status != 200:
            fail(f"keyless {install}: {answer.status} {answer.text[:300]}")

    def key_of(self, license_id, seconds=30):
        """A license's key, from its `license.created` webhook (money paths give the key to no one else)."""
        self.wait_for(f"license.created of {license_id}", lambda: license_id in self.receivers.license_keys(), seconds)
        return self.receivers.license_keys()[license_id]

    def wait_for(self, what, predicate, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if predicate():
                return
            time.sleep(0.5)
        fail(f"timed out waiting for {what}")

    # MARK: phase A: the catalogue, the first licenses, devices and keyless installs (two days ago)

    def phase_a(self):
        s = self.s
        s.admin("POST", "/tenants", {"id": "acme", "name": "Acme Software"}, expect=201)
        s.admin("POST", "/tenants", {"id": "globex", "name": "Globex Corporation"}, expect=201)
        for tenant, product, body in (
            ("acme", "notes", {"id": "notes", "name": "Acme Notes", "key_prefix": "NOTE", "trial_duration_days": 14, "free_tier_enabled": True}),
            ("acme", "studio", {"id": "studio", "name": "Acme Studio", "key_prefix": "STUD", "trial_duration_days": 0, "free_tier_enabled": False,
                                "portal_enabled": False, "sdk_key_required": False}),
            ("globex", "tool", {"id": "tool", "name": "Globex Tool", "key_prefix": "GLBX", "trial_duration_days": 7, "free_tier_enabled": False}),
        ):
            answer = s.admin("POST", f"/tenants/{tenant}/products", body, expect=201)
            self.sdk_keys[f"{tenant}/{product}"] = answer["sdk_key"]
        s.admin("PATCH", "/tenants/acme/products/notes", {"name": "Acme Notes Pro", "trial_duration_days": 21})
        notes_types = [
            {"id": "perpetual", "display_name": "Perpetual", "activation_limit": 3, "duration_days": None, "fallback_access": True,
             "entitlements": ["pro", "export"], "lease_ttl_seconds": 259_200},
            {"id": "annual", "display_name": "Annual", "activation_limit": 2, "duration_days": 365, "fallback_access": True, "entitlements": ["pro", "sync"]},
            {"id": "strict", "display_name": "Annual, no fallback", "activation_limit": 2, "duration_days": 365, "fallback_access": False, "entitlements": ["pro"]},
            {"id": "seats", "display_name": "Team (5 seats, +20 %)", "activation_limit": 5, "fallback_access": False, "entitlements": ["pro", "team"], "overage": 0.2},
            {"id": "offline", "display_name": "Offline-capable", "activation_limit": 2, "fallback_access": False, "entitlements": ["pro"], "offline_lease_days": 30},
            {"id": "updates", "display_name": "A year of updates", "activation_limit": 2, "fallback_access": True, "entitlements": ["pro"], "updates_days": 365},
            {"id": "lifetime", "display_name": "Lifetime (sold)", "activation_limit": 2, "fallback_access": True, "entitlements": ["pro"],
             "stripe_price_id": "price_fixture_lifetime", "stripe_mode": "payment"},
            {"id": "subscription", "display_name": "Monthly (sold)", "activation_limit": 2, "duration_days": 30, "fallback_access": False,
             "entitlements": ["pro", "sync"], "stripe_price_id": "price_fixture_monthly", "stripe_mode": "subscription"},
        ]
        for body in notes_types:
            s.admin("POST", "/tenants/acme/products/notes/key-types", body, expect=201)
        s.admin("POST", "/tenants/acme/products/studio/key-types", {
            "id": "floating", "display_name": "Studio (2 floating seats)", "activation_limit": 2, "fallback_access": False,
            "entitlements": ["render"], "floating": True, "heartbeat_seconds": 10, "overage": 0.5}, expect=201)
        s.admin("POST", "/tenants/globex/products/tool/key-types", {
            "id": "standard", "display_name": "Standard", "activation_limit": 1, "duration_days": None, "fallback_access": False, "entitlements": ["basic"]}, expect=201)
        s.admin("POST", "/tenants/globex/products/tool/key-types", {
            "id": "pro", "display_name": "Pro", "activation_limit": 3, "duration_days": 30, "fallback_access": True, "entitlements": ["basic", "pro"],
            "stripe_price_id": "price_globex_pro", "stripe_mode": "payment"}, expect=201)
        # Outbound webhooks: one that takes everything, one that fails (retried), one that is gone (disabled by its 410).
        e1 = s.admin("POST", "/tenants/acme/webhooks", {"url": f"{self.receivers.base}/ok/acme"}, expect=201)
        e2 = s.admin("POST", "/tenants/acme/webhooks", {"url": f"{self.receivers.base}/fail/acme", "events": ["license.created", "license.revoked"]}, expect=201)
        e3 = s.admin("POST", "/tenants/acme/webhooks", {"url": f"{self.receivers.base}/gone/acme", "events": ["instance.activated"]}, expect=201)
        e4 = s.admin("POST", "/tenants/globex/webhooks", {"url": f"{self.receivers.base}/ok/globex"}, expect=201)
        self.endpoints = {"acme_ok": e1["id"], "acme_fail": e2["id"], "acme_gone": e3["id"], "globex_ok": e4["id"]}
        for key, answer in (("acme_ok", e1), ("acme_fail", e2), ("acme_gone", e3), ("globex_ok", e4)):
            self.secrets[f"keylight.webhook.endpoint.{answer['id']}"] = answer["secret"]

        old = telemetry("1.0.0", os_version="14.6")
        self.mint("perpetual", "acme", "notes", "perpetual", customer_email="ada@buyer.example")
        self.mint("annual", "acme", "notes", "annual", customer_email="grace@buyer.example", expires_at=FUTURE)
        self.mint("expired_fallback", "acme", "notes", "annual", customer_email="linus@buyer.example", expires_at=PAST)
        self.mint("revoked", "acme", "notes", "perpetual", customer_email="mallory@buyer.example")
        self.mint("suspended", "acme", "notes", "perpetual", customer_email="oscar@buyer.example")
        self.mint("reminted", "acme", "notes", "perpetual", customer_email="leaky@buyer.example")
        self.mint("seats", "acme", "notes", "seats", customer_email="team@buyer.example", expires_at=FUTURE)
        self.mint("updates", "acme", "notes", "updates", customer_email="upd@buyer.example", updates_until=FUTURE_UPDATES)
        self.mint("imported", "acme", "notes", "perpetual", license_key="NOTE-LEGACY-0001-FIXTURE", customer_email="hosted@buyer.example")
        self.mint("globex_standard", "globex", "tool", "standard", customer_email="homer@globex.example")
        for name, device in (("perpetual", "Ada's MacBook"), ("perpetual", "Ada's iMac"), ("perpetual", "Ada's Mac mini"),
                             ("annual", "Grace's Mac"), ("expired_fallback", "Linus's Mac"), ("revoked", "Mallory's Mac"),
                             ("suspended", "Oscar's Mac"), ("reminted", "Leaky Mac"), ("updates", "Upd Mac"), ("imported", "Hosted Mac"),
                             ("globex_standard", "Homer's PC")):
            tele = old if name != "globex_standard" else telemetry("3.2", platform="Windows", os_version="11", arch="x86_64", sdk="csharp", sdk_version="0.5.0")
            self.activate(name, device, tele, nonce=(device == "Grace's Mac"))
        for n in range(1, 4):
            self.activate("seats", f"Team Mac {n}", telemetry("1.0.0", os_version="15.0"))
        # The expired license with fallback activates (a fallback lease); the no-fallback kind is refused with an expired lease.
        self.mint("strict_expired", "acme", "notes", "strict", customer_email="late@buyer.example", expires_at=PAST)
        refused = self.activate("strict_expired", "Late Mac", old, expect=422)
        if refused.get("code") != "LICENSE_EXPIRED":
            fail(f"activating an expired no-fallback license: {refused}")
        # Keyless installs: trials and a free tier, with telemetry.
        self.keyless("acme", "notes", "install-1", "trial", telemetry("1.0.0", os_version="14.6"), nonce=True)
        self.keyless("acme", "notes", "install-2", "trial", telemetry("1.0.0", os_version="15.0", arch="x86_64", cores="3-4", memory="8-16GB"))
        self.keyless("acme", "notes", "install-3", "free_tier", telemetry("0.9.0", os_version="13.7", arch="x86_64", cores="5-8", memory="8-16GB"))
        self.keyless("globex", "tool", "install-g1", "trial", telemetry("3.1", platform="Windows", os_version="10", arch="x86_64", sdk="cpp", sdk_version="0.1.2"))
        for inst in self.licenses["perpetual"]["instances"][:2] + self.licenses["seats"]["instances"]:
            self.validate("perpetual" if inst in self.licenses["perpetual"]["instances"] else "seats", inst, old)
        self.s.admin("POST", "/tenants/acme/products/notes/licenses/" + self.licenses["perpetual"]["id"] + "/suspend", expect=200)
        self.s.admin("POST", "/tenants/acme/products/notes/licenses/" + self.licenses["perpetual"]["id"] + "/reinstate", expect=200)
        time.sleep(2)

    # MARK: phase B: yesterday: updates, a conversion, key rotations, licence state changes

    def phase_b(self):
        s = self.s
        newer = telemetry("1.1.0", os_version="15.1")
        for name in ("perpetual", "annual", "expired_fallback", "updates", "imported", "seats"):
            for inst in self.licenses[name]["instances"][:2]:
                self.validate(name, inst, newer, nonce=(name == "annual"))
        self.keyless("acme", "notes", "install-2", "expired", telemetry("1.1.0", os_version="15.1", arch="x86_64", cores="3-4", memory="8-16GB"))
        self.keyless("acme", "notes", "install-4", "trial", telemetry("1.1.0", os_version="15.1", platform="iOS", arch="arm64", cores="5-8", memory="4-8GB"))
        self.keyless("globex", "tool", "install-g1", "expired", telemetry("3.1", platform="Windows", os_version="10", arch="x86_64", sdk="cpp", sdk_version="0.1.2"))
        # install-1 buys: its activation names the keyless install (the trial funnel's conversion).
        self.mint("converted", "acme", "notes", "annual", customer_email="convert@buyer.example", expires_at=FUTURE)
        self.activate("converted", "Trial Mac", newer, free_tier_instance_id=did("install-1"))
        # Signing keys: several kids per tenant, in every status.
        acme_keys = s.admin("GET", "/tenants/acme/signing-keys")["keys"]
        k1 = next(k["kid"] for k in acme_keys if k["status"] == "active")
        k2 = s.admin("POST", "/tenants/acme/signing-keys/prepare", expect=201)["kid"]
        s.admin("POST", "/tenants/acme/signing-keys/rotate", {"expected_next_kid": k2}, expect=201)
        s.admin("POST", "/signing-keys/rotate", expect=201)            # every tenant: a new active key each, the old ones grace
        s.admin("POST", f"/tenants/acme/signing-keys/{k1}/retire", expect=200)
        s.admin("POST", "/tenants/acme/signing-keys/prepare", expect=201)  # staged: next
        # License states.
        s.admin("POST", "/tenants/acme/products/notes/licenses/" + self.licenses["revoked"]["id"] + "/revoke", expect=200)
        s.admin("POST", "/tenants/acme/products/notes/licenses/" + self.licenses["suspended"]["id"] + "/suspend", expect=200)
        reminted = s.admin("POST", "/tenants/acme/products/notes/licenses/" + self.licenses["reminted"]["id"] + "/remint", expect=200)
        lic = self.licenses["reminted"]
        self.licenses["reminted_old_key"] = {**lic, "key": lic["key"], "instances": list(lic["instances"]), "replaced": True}
        lic["key"] = reminted["license_key"]
        # An admin POST under an Idempotency-Key, replayed; and a refusal kept under another key.
        first = s.admin("POST", "/tenants/globex/products/tool/licenses", {"key_type_id": "pro", "customer_email": "idem@globex.example"},
                        expect=201, headers={"Idempotency-Key": "fixture-mint-0001"})
        again = s.admin("POST", "/tenants/globex/products/tool/licenses", {"key_type_id": "pro", "customer_email": "idem@globex.example"},
                        expect=201, headers={"Idempotency-Key": "fixture-mint-0001"})
        if again != first:
            fail("an idempotent replay answered differently")
        self.adopt("globex_idempotent", "globex", "tool", first["id"], first["license_key"], "pro")
        s.admin("POST", "/tenants/globex/products/tool/licenses", {"key_type_id": "no-such-type"}, expect=404, headers={"Idempotency-Key": "fixture-refused-0001"})
        self.activate("globex_idempotent", "Marge's PC", telemetry("3.2", platform="Windows", os_version="11", arch="x86_64", sdk="csharp", sdk_version="0.5.0"))
        # The app frees a seat (with the key), the C++ client frees one by instance id alone.
        perpetual = self.licenses["perpetual"]
        answer = s.sdk("acme", "notes", "deactivate", {"license_key": perpetual["key"], "instance_id": perpetual["instances"][1]["instance_id"]}, self.sdk_keys["acme/notes"])
        if answer.status != 200:
            fail(f"deactivate: {answer.status} {answer.text}")
        perpetual["instances"][1]["deactivated"] = "app"
        answer = s.sdk("globex", "tool", "deactivate", {"license_key": "", "instance_id": self.licenses["globex_standard"]["instances"][0]["instance_id"]}, self.sdk_keys["globex/tool"])
        if answer.status != 200:
            fail(f"deactivate by instance id: {answer.status} {answer.text}")
        self.licenses["globex_standard"]["instances"][0]["deactivated"] = "instance id alone"
        self.activate("globex_standard", "Homer's new PC", telemetry("3.2", platform="Windows", os_version="11", arch="x86_64", sdk="csharp", sdk_version="0.5.0"))
        time.sleep(2)

    # MARK: phase C: today: money paths, mail, portal, dashboard, offline, seats, and the answers

    def phase_c(self):
        s = self.s
        today = telemetry("1.2.0", os_version="15.2")
        self.dashboard_users()
        self.mail()
        self.stripe()
        self.merchants()
        self.app_store()
        self.offline()
        self.seats_and_floating(today)
        self.portal()
        self.webhook_admin()
        # Every licensed device checks in today with the current version; one more keyless install.
        for name, lic in self.licenses.items():
            if lic.get("replaced") or lic.get("offline_only"):
                continue
            for inst in lic["instances"]:
                if inst.get("deactivated") or lic.get("floating"):
                    continue
                answer = self.validate(name, inst, today, expect=None, nonce=(name == "perpetual"))
                if answer.status >= 500:
                    fail(f"validate {name}: {answer.status}")
        self.keyless("acme", "notes", "install-5", "trial", telemetry("1.2.0", os_version="15.2", platform="iOS", cores="5-8", memory="4-8GB"))
        self.keyless("acme", "notes", "install-3", "free_tier", telemetry("1.2.0", os_version="15.2", arch="x86_64", cores="5-8", memory="8-16GB"))
        # Insights for every product (this rolls the past days up for good), the CSV too.
        for tenant, product in (("acme", "notes"), ("acme", "studio"), ("globex", "tool")):
            s.admin("GET", f"/tenants/{tenant}/products/{product}/insights?by=app_version&from={self.day(-3)}&to={self.day(0)}")
        answer = request("GET", s.base + f"/admin/v1/tenants/acme/products/notes/insights.csv?by=os_version&table=devices&from={self.day(-3)}&to={self.day(0)}",
                         headers={"Authorization": f"Bearer {self.token}"})
        if answer.status != 200:
            fail(f"insights.csv: {answer.status}")
        # Let mails, webhooks and the Paddle look-up settle: nothing left to send but what cannot be sent.
        self.wait_for("the mail outbox to send what it can", lambda: len(self.smtp.messages) >= 6, 60)
        self.wait_for("deliveries to the endpoints that answer 200", lambda: not any(
            d["status"] == "pending" for e in ("acme_ok",) for d in s.admin("GET", f"/tenants/acme/webhooks/{self.endpoints[e]}/deliveries?limit=500")["deliveries"]), 120)
        # Floating: render nodes 1 and 2 fell silent; their seats are freed once the heartbeat (10 s)
        # has passed (the sweep, every 5 s). Node 3 takes a seat and validates last: held at the dump.
        wait = self.floating_started + 17 - time.time()
        if wait > 0:
            time.sleep(wait)
        held = self.activate("floating", "Render node 3", today, with_sdk_key=False)
        self.validate("floating", held, today)
        # The answers, once the state is final (recorded here, and again on the dump's copy).
        for name, lic in self.licenses.items():
            self.validated_at_creation[name] = [self.recorded_validate(name, inst) for inst in self.validatable(lic)]

    def day(self, offset):
        return time.strftime("%Y-%m-%d", time.gmtime(self.today + offset * DAY))

    def dashboard_users(self):
        for address in ("owner@acme.example", "support@acme.example"):
            result = subprocess.run([self.binary, "admin", "create-user", "--db", self.db, "--email", address], input=PASSWORD + "\n",
                                    capture_output=True, text=True, env=self.s.env, cwd=self.workdir, timeout=120)
            if result.returncode != 0:
                fail(f"admin create-user {address}: {result.stdout} {result.stderr}")
        base = self.s.base
        # A wrong password (counted on the account), then a sign-in: a session row.
        for password in ("wrong-password-000", PASSWORD):
            page = request("GET", base + "/dashboard/login")
            token = page.cookies().get("keylight_login")
            csrf = re.search(r'name="_csrf" value="([^"]+)"', page.text).group(1)
            address = "support@acme.example" if password != PASSWORD else "owner@acme.example"
            answer = request("POST", base + "/dashboard/login", form={"_csrf": csrf, "next": "/dashboard", "email": address, "password": password},
                             headers={"Cookie": f"keylight_login={token}"})
            if password != PASSWORD and answer.status != 401:
                fail(f"a wrong password answered {answer.status}")
        if answer.status not in (302, 303) or "keylight_session" not in answer.cookies():
            fail(f"dashboard sign-in answered {answer.status}: {answer.text[:300]}")
        cookie = f"keylight_session={answer.cookies()['keylight_session']}"
        page = request("GET", base + "/dashboard/t/acme/p/notes/licenses", headers={"Cookie": cookie})
        csrf = re.search(r'name="_csrf" value="([^"]+)"', page.text).group(1)
        minted = request("POST", base + "/dashboard/t/acme/p/notes/licenses", headers={"Cookie": cookie},
                         form={"_csrf": csrf, "key_type_id": "perpetual", "customer_email": "desk@buyer.example"})
        key = re.search(r"\bNOTE-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}\b", minted.text)
        if minted.status != 200 or not key:
            fail(f"minting on the dashboard answered {minted.status}")
        found = self.s.admin("GET", "/tenants/acme/products/notes/licenses?email=desk%40buyer.example")["licenses"]
        self.adopt("dashboard", "acme", "notes", found[0]["id"], key.group(0), "perpetual")
        self.activate("dashboard", "Desk Mac", telemetry("1.2.0", os_version="15.2"))
        self.dashboard_cookie = cookie

    def mail(self):
        s = self.s
        s.admin("PUT", "/tenants/acme/mail", {
            "sender_name": "Acme Sales", "reply_to": "help@acme.example",
            "subject_template": "Your {{product_name}} key",
            "text_template": "Hello,\n\nyour key for {{product_name}} ({{key_type_name}}): {{license_key}}\n\nLost it? {{portal_url}}\n\n{{sender_name}}\n",
            "html_template": "<p>Your key for {{product_name}}: <code>{{license_key}}</code></p>",
        })
        self.mint("mailed", "acme", "notes", "annual", customer_email="mailme@buyer.example", expires_at=FUTURE, send_email=True)
        self.mint("mail_retrying", "acme", "notes", "perpetual", customer_email="softbounce@buyer.example", send_email=True)
        self.mint("mail_failed", "acme", "notes", "perpetual", customer_email="hardbounce@buyer.example", send_email=True)
        s.admin("POST", f"/tenants/acme/products/notes/licenses/{self.licenses['mail_failed']['id']}/email",
                {"customer_email": "fixed@buyer.example"}, expect=202)
        self.activate("mailed", "Mail Mac", telemetry("1.2.0", os_version="15.2"))

    def stripe(self):
        s = self.s
        self.stripe_secret = "whsec_fixture_acme_0123456789abcdef"
        s.admin("PUT", "/tenants/acme/stripe", {"webhook_secret": self.stripe_secret, "secret_key": "sk_test_fixture_acme_0123456789"})
        s.admin("PUT", "/tenants/globex/stripe", {"webhook_secret": "whsec_fixture_globex_0123456789abcd"})
        self.secrets["keylight.stripe.webhook.acme"] = self.stripe_secret
        self.secrets["keylight.stripe.secret.acme"] = "sk_test_fixture_acme_0123456789"
        self.secrets["keylight.stripe.webhook.globex"] = "whsec_fixture_globex_0123456789abcd"
        checkout_key = s.admin("POST", "/tenants/acme/checkout-key", expect=201)["checkout_key"]
        s.admin("POST", "/tenants/globex/checkout-key", expect=201)
        # A checkout made through Keylight (Stripe's API is the local fake), then paid.
        made = request("POST", s.base + "/api/acme/checkout", body={
            "product_id": "notes", "key_type_id": "lifetime", "success_url": "https://shop.acme.example/thanks", "cancel_url": "https://shop.acme.example/cart",
            "customer_email": "checkout@buyer.example"}, headers={"Authorization": f"Bearer {checkout_key}", "Idempotency-Key": "fixture-checkout-1"})
        if made.status != 200:
            fail(f"POST /api/acme/checkout: {made.status} {made.text}")
        session_id = made.json["session_id"]

        def send(event, tenant="acme", secret=None):
            payload = json.dumps(event)
            header = stripe.WebhookSignature.generate_signature_header(payload, secret or self.stripe_secret)
            return request("POST", f"{s.base}/stripe/webhook/{tenant}", raw=payload.encode(), headers={"Stripe-Signature": header, "Content-Type": "application/json"})

        def event(kind, obj, n):
            return {"id": f"evt_fixture_{n:04d}", "object": "event", "type": kind, "created": int(time.time()), "livemode": False, "data": {"object": obj}}

        def session(sid, key_type, status, buyer, subscription=None, pi=None):
            obj = {"id": sid, "object": "checkout.session", "payment_status": status, "customer": f"cus_{sid[-8:]}",
                   "payment_intent": pi or f"pi_{sid[-12:]}", "customer_details": {"email": buyer},
                   "metadata": {"tenant_id": "acme", "product_id": "notes", "key_type_id": key_type},
                   "success_url": "https://shop.acme.example/thanks?session_id={CHECKOUT_SESSION_ID}"}
            if subscription:
                obj["subscription"] = subscription
            return obj

        def expect(answer, outcome, what, status=200):
            if answer.status != status or (outcome and answer.json.get("outcome") != outcome):
                fail(f"Stripe {what}: {answer.status} {answer.text[:300]}, expected {status} {outcome}")

        expect(send(event("checkout.session.completed", session(session_id, "lifetime", "paid", "checkout@buyer.example"), 1)), "minted", "paid checkout")
        picked = request("GET", f"{s.base}/api/acme/checkout/{session_id}/license")
        if picked.status != 200:
            fail(f"pick-up: {picked.status} {picked.text}")
        self.adopt("stripe_checkout", "acme", "notes", picked.json["license_id"], picked.json["license_key"], "lifetime")
        # A delayed payment: awaiting, then paid (the key left uncollected, sealed on the session).
        delayed = "cs_test_fixture_delayed_0001"
        expect(send(event("checkout.session.completed", session(delayed, "lifetime", "unpaid", "sepa@buyer.example"), 2)), "awaiting_payment", "unpaid")
        expect(send(event("checkout.session.async_payment_succeeded", session(delayed, "lifetime", "paid", "sepa@buyer.example"), 3)), "minted", "async paid")
        expect(send(event("checkout.session.async_payment_succeeded", session(delayed, "lifetime", "paid", "sepa@buyer.example"), 3)), "duplicate", "repeat")
        # A failed delayed payment.
        failed = "cs_test_fixture_failed_0001"
        expect(send(event("checkout.session.completed", session(failed, "lifetime", "unpaid", "broke@buyer.example"), 4)), "awaiting_payment", "unpaid 2")
        expect(send(event("checkout.session.async_payment_failed", session(failed, "lifetime", "unpaid", "broke@buyer.example"), 5)), "payment_failed", "failed")
        # A subscription: minted, then renewed by an invoice.
        sub = "sub_fixture_0001"
        subs = "cs_test_fixture_sub_0001"
        expect(send(event("checkout.session.completed", session(subs, "subscription", "paid", "subscriber@buyer.example", subscription=sub), 6)), "minted", "subscription")
        now = int(time.time())
        expect(send(event("invoice.paid", {"id": "in_fixture_0001", "object": "invoice", "subscription": sub,
                                           "lines": {"object": "list", "data": [{"period": {"start": now, "end": now + 60 * DAY}}]}}, 7)), "renewed", "invoice")
        # A second subscription that ended: its license expired (no fallback).
        sub2, subs2 = "sub_fixture_0002", "cs_test_fixture_sub_0002"
        expect(send(event("checkout.session.completed", session(subs2, "subscription", "paid", "lapsed@buyer.example", subscription=sub2), 8)), "minted", "subscription 2")
        # A refund revokes a paid license.
        refunded = "cs_test_fixture_refund_0001"
        expect(send(event("checkout.session.completed", session(refunded, "lifetime", "paid", "refund@buyer.example", pi="pi_fixture_refund_0001"), 9)), "minted", "to refund")
        # An event for a key type the tenant lacks: 422, kept sealed for a retry.
        expect(send(event("checkout.session.completed", session("cs_test_fixture_unknown_0001", "not-yet", "paid", "early@buyer.example"), 10)), None, "unknown", status=422)
        # The other tenant's Stripe: a paid checkout there (the same event id as ours: deduplicated per tenant).
        globex_session = {"id": "cs_test_fixture_globex_0001", "object": "checkout.session", "payment_status": "paid", "customer": "cus_globex",
                          "payment_intent": "pi_globex_0001", "customer_details": {"email": "bart@globex.example"},
                          "metadata": {"tenant_id": "globex", "product_id": "tool", "key_type_id": "pro"}}
        expect(send(event("checkout.session.completed", globex_session, 1), tenant="globex", secret="whsec_fixture_globex_0123456789abcd"), "minted", "globex")
        for name, email_address, key_type in (("stripe_delayed", "sepa@buyer.example", "lifetime"), ("stripe_subscription", "subscriber@buyer.example", "subscription"),
                                              ("stripe_lapsed", "lapsed@buyer.example", "subscription"), ("stripe_refunded", "refund@buyer.example", "lifetime")):
            found = s.admin("GET", "/tenants/acme/products/notes/licenses?email=" + urllib.parse.quote(email_address))["licenses"]
            self.adopt(name, "acme", "notes", found[0]["id"], self.key_of(found[0]["id"]), key_type)
        found = s.admin("GET", "/tenants/globex/products/tool/licenses?email=bart%40globex.example")["licenses"]
        self.adopt("stripe_globex", "globex", "tool", found[0]["id"], self.key_of(found[0]["id"]), "pro")
        for name, device in (("stripe_checkout", "Checkout Mac"), ("stripe_subscription", "Subscriber Mac"), ("stripe_lapsed", "Lapsed Mac"),
                             ("stripe_refunded", "Refund Mac"), ("stripe_delayed", "SEPA Mac")):
            self.activate(name, device, telemetry("1.2.0", os_version="15.2"))
        self.activate("stripe_globex", "Bart's PC", telemetry("3.2", platform="Windows", os_version="11", arch="x86_64", sdk="csharp", sdk_version="0.5.0"))
        expect(send(event("customer.subscription.deleted", {"id": sub2, "object": "subscription", "status": "canceled", "ended_at": now - 60}, 11)), "expired", "ended")
        expect(send(event("charge.refunded", {"id": "ch_fixture_0001", "object": "charge", "payment_intent": "pi_fixture_refund_0001"}, 12)), "revoked", "refund")

    def merchants(self):
        s = self.s
        ids = {
            "lifetime": {"paddle_price_id": "pri_01fixturelifetime000001", "lemonsqueezy_variant_id": "101001", "polar_product_id": "7f0a1d4e-0001-4000-8000-000000000001"},
            "subscription": {"paddle_price_id": "pri_01fixturemonthly0000001", "lemonsqueezy_variant_id": "101002", "polar_product_id": "7f0a1d4e-0002-4000-8000-000000000002"},
        }
        for key_type, body in ids.items():
            s.admin("PATCH", f"/tenants/acme/products/notes/key-types/{key_type}", body)
        s.admin("PATCH", "/tenants/globex/products/tool/key-types/pro", {"paddle_price_id": "pri_01fixturelifetime000001"})
        paddle_secret = "pdl_ntfset_01fixture0000000000000000_fixturesecret000000000000"
        paddle_api_key = "pdl_live_apikey_fixture_0123456789"
        lemon_secret = "ls-fixture-signing-secret-0001"
        polar_secret = "whsec_fixture_polar_legacy_0123456789abcdefghij"
        globex_paddle = "pdl_ntfset_01fixtureglobex00000000000_fixtureglobex00000000000"
        s.admin("PUT", "/tenants/acme/paddle", {"webhook_secret": paddle_secret, "api_key": paddle_api_key, "environment": "production"})
        s.admin("PUT", "/tenants/acme/lemonsqueezy", {"webhook_secret": lemon_secret, "accept_test_mode": True})
        s.admin("PUT", "/tenants/acme/polar", {"webhook_secret": polar_secret})
        s.admin("PUT", "/tenants/globex/paddle", {"webhook_secret": globex_paddle})
        self.secrets.update({"keylight.paddle.webhook.acme": paddle_secret, "keylight.paddle.apikey.acme": paddle_api_key,
                             "keylight.lemonsqueezy.webhook.acme": lemon_secret, "keylight.polar.webhook.acme": polar_secret,
                             "keylight.paddle.webhook.globex": globex_paddle})
        counter = iter(range(1, 1000))

        def paddle(event, tenant="acme", secret=paddle_secret):
            body = json.dumps(event)
            ts = int(time.time())
            h1 = hmac.new(secret.encode(), f"{ts}:{body}".encode(), hashlib.sha256).hexdigest()
            return request("POST", f"{s.base}/paddle/webhook/{tenant}", raw=body.encode(), headers={"Paddle-Signature": f"ts={ts};h1={h1}", "Content-Type": "application/json"})

        def paddle_event(kind, data):
            return {"event_id": f"evt_fixture_paddle_{next(counter):04d}", "event_type": kind, "occurred_at": iso(time.time()),
                    "notification_id": f"ntf_fixture_{next(counter):04d}", "data": data}

        def paddle_txn(txn, price, buyer=None, customer=None, subscription=None, ends=None, origin="web"):
            return paddle_event("transaction.completed", {
                "id": txn, "status": "completed", "customer_id": customer or f"ctm_{txn[-10:]}", "address_id": "add_fixture", "business_id": None,
                "custom_data": {"email": buyer} if buyer else None, "subscription_id": subscription, "origin": origin,
                "collection_mode": "automatic", "currency_code": "USD", "invoice_id": f"inv_{txn[-10:]}", "invoice_number": "325-10566",
                "billing_period": {"starts_at": iso(time.time()), "ends_at": iso(ends)} if ends else None,
                "items": [{"price": {"id": price, "product_id": "pro_fixture", "billing_cycle": None}, "quantity": 1, "proration": None}],
                "details": {"totals": {"grand_total": "1000", "currency_code": "USD"}}, "payments": [{"status": "captured"}],
                "created_at": iso(time.time()), "updated_at": iso(time.time()), "billed_at": iso(time.time())})

        def expect(answer, outcome, what):
            if answer.status != 200 or answer.json.get("outcome") != outcome:
                fail(f"{what}: {answer.status} {answer.text[:300]}, expected outcome {outcome}")

        lifetime, monthly = ids["lifetime"]["paddle_price_id"], ids["subscription"]["paddle_price_id"]
        expect(paddle(paddle_txn("txn_fixture_0001", lifetime, buyer="paddle@buyer.example")), "minted", "Paddle purchase")
        # No address: the customer is looked up with the API key (the fake Paddle API knows them).
        self.receivers.paddle_customers["ctm_fixture_lookup01"] = "looked-up@buyer.example"
        expect(paddle(paddle_txn("txn_fixture_0002", lifetime, customer="ctm_fixture_lookup01")), "minted", "Paddle address-less")
        # No address and unknown to Paddle: the look-up stays pending/failed.
        expect(paddle(paddle_txn("txn_fixture_0003", lifetime, customer="ctm_fixture_unknown01")), "minted", "Paddle unknown customer")
        # A subscription, renewed.
        period = int(time.time()) + 31 * DAY
        expect(paddle(paddle_txn("txn_fixture_0004", monthly, buyer="paddle-sub@buyer.example", subscription="sub_fixture_paddle_01", ends=period)), "minted", "Paddle subscription")
        expect(paddle(paddle_txn("txn_fixture_0005", monthly, subscription="sub_fixture_paddle_01", ends=period + 30 * DAY, origin="subscription_recurring")), "renewed", "Paddle renewal")
        # A refund revokes.
        expect(paddle(paddle_txn("txn_fixture_0006", lifetime, buyer="paddle-refund@buyer.example")), "minted", "Paddle to refund")
        expect(paddle(paddle_event("adjustment.updated", {"id": "adj_fixture_0001", "action": "refund", "status": "approved", "transaction_id": "txn_fixture_0006",
                                                          "subscription_id": None, "customer_id": "ctm_x", "reason": "error", "type": "full", "currency_code": "USD",
                                                          "items": [], "totals": {"total": "1000"}, "created_at": iso(time.time()), "updated_at": iso(time.time())})), "revoked", "Paddle refund")
        # A purchase of something not mapped: kept (sealed) for a retry.
        expect(paddle(paddle_txn("txn_fixture_0007", "pri_01fixtureunmapped000001", buyer="unmapped@buyer.example")), "unmapped", "Paddle unmapped")
        # The customer's address told by an event.
        expect(paddle(paddle_event("customer.created", {"id": "ctm_fixture_told01", "email": "told@buyer.example", "name": "T", "status": "active"})), "customer", "Paddle customer")
        # Globex on the same Paddle account (its own secret, no API key: an address-less purchase waits for a customer event).
        expect(paddle(paddle_txn("txn_fixture_0101", "pri_01fixturelifetime000001", customer="ctm_fixture_globex01"), tenant="globex", secret=globex_paddle), "minted", "Paddle globex")

        def lemon(event):
            body = json.dumps(event).encode()
            signature = hmac.new(lemon_secret.encode(), body, hashlib.sha256).hexdigest()
            return request("POST", f"{s.base}/lemonsqueezy/webhook/acme", raw=body, headers={"X-Signature": signature, "X-Event-Name": event["meta"]["event_name"], "Content-Type": "application/json"})

        def lemon_order(order_id, variant, buyer, status="paid", test_mode=False, event="order_created", refunded=False):
            return {"meta": {"event_name": event, "custom_data": {}, "test_mode": test_mode, "webhook_id": did(f"lemon-{order_id}-{event}")},
                    "data": {"type": "orders", "id": str(order_id), "attributes": {
                        "store_id": 1, "customer_id": 7, "identifier": did(f"lemon-order-{order_id}"), "order_number": order_id, "user_name": "Buyer",
                        "user_email": buyer, "currency": "USD", "subtotal": 999, "total": 1199, "refunded_amount": 1199 if refunded else 0, "status": status,
                        "refunded": refunded, "refunded_at": iso(time.time()) if refunded else None,
                        "first_order_item": {"id": 1, "order_id": order_id, "product_id": 1, "variant_id": int(variant), "price_id": 1, "quantity": 1,
                                             "product_name": "Notes", "variant_name": "Pro", "price": 999, "test_mode": test_mode},
                        "created_at": iso(time.time()), "updated_at": iso(time.time()), "test_mode": test_mode}}}

        expect(lemon(lemon_order(500001, ids["lifetime"]["lemonsqueezy_variant_id"], "lemon@buyer.example")), "minted", "Lemon Squeezy order")
        expect(lemon(lemon_order(500002, ids["lifetime"]["lemonsqueezy_variant_id"], "lemon-test@buyer.example", test_mode=True)), "minted", "Lemon Squeezy test-mode order (accepted)")
        renews = int(time.time()) + 32 * DAY
        expect(lemon({"meta": {"event_name": "subscription_created"}, "data": {"type": "subscriptions", "id": "600001", "attributes": {
            "store_id": 1, "customer_id": 7, "order_id": 500003, "order_item_id": 1, "product_id": 1, "variant_id": int(ids["subscription"]["lemonsqueezy_variant_id"]),
            "user_email": "lemon-sub@buyer.example", "status": "active", "cancelled": False, "renews_at": iso(renews), "ends_at": None, "trial_ends_at": None,
            "test_mode": False, "created_at": iso(time.time()), "updated_at": iso(time.time())}}}), "no_license", "Lemon Squeezy subscription first")
        expect(lemon(lemon_order(500003, ids["subscription"]["lemonsqueezy_variant_id"], "lemon-sub@buyer.example")), "minted", "Lemon Squeezy subscription order")

        def polar(event, msg_id):
            body = json.dumps(event)
            at = datetime.datetime.now(datetime.timezone.utc)
            signer = Webhook(polar_secret.encode("utf-8"))
            headers = {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())), "webhook-signature": signer.sign(msg_id, at, body),
                       "Content-Type": "application/json"}
            return request("POST", f"{s.base}/polar/webhook/acme", raw=body.encode(), headers=headers)

        def polar_order(order_id, product, buyer, reason="purchase", subscription=None, period_end=None, event="order.paid", status="paid"):
            return {"type": event, "timestamp": iso(time.time()), "data": {
                "id": order_id, "status": status, "paid": status == "paid", "billing_reason": reason, "customer_id": did(f"polar-customer-{buyer}"),
                "product_id": product, "subscription_id": subscription, "total_amount": 1000, "refunded_amount": 0, "currency": "usd", "metadata": {},
                "customer": {"id": did(f"polar-customer-{buyer}"), "email": buyer, "external_id": None}, "product": {"id": product, "name": "Notes"},
                "subscription": {"id": subscription, "current_period_end": iso(period_end)} if subscription else None,
                "items": [], "created_at": iso(time.time()), "modified_at": None}}

        expect(polar(polar_order(did("polar-order-1"), ids["lifetime"]["polar_product_id"], "polar@buyer.example"), did("polar-msg-1")), "minted", "Polar order")
        end = int(time.time()) + 31 * DAY
        expect(polar(polar_order(did("polar-order-2"), ids["subscription"]["polar_product_id"], "polar-sub@buyer.example", reason="subscription_create",
                                 subscription=did("polar-sub-1"), period_end=end), did("polar-msg-2")), "minted", "Polar subscription")
        expect(polar(polar_order(did("polar-order-3"), ids["subscription"]["polar_product_id"], "polar-sub@buyer.example", reason="subscription_cycle",
                                 subscription=did("polar-sub-1"), period_end=end + 30 * DAY), did("polar-msg-3")), "renewed", "Polar cycle")
        self.wait_for("the Paddle customer look-up", lambda: any("looked-up@buyer.example" in m["to"] for m in self.smtp.messages), 30)
        for name, tenant, product, address, key_type in (
            ("paddle", "acme", "notes", "paddle@buyer.example", "lifetime"), ("paddle_lookup", "acme", "notes", "looked-up@buyer.example", "lifetime"),
            ("paddle_subscription", "acme", "notes", "paddle-sub@buyer.example", "subscription"), ("paddle_refunded", "acme", "notes", "paddle-refund@buyer.example", "lifetime"),
            ("lemonsqueezy", "acme", "notes", "lemon@buyer.example", "lifetime"), ("lemonsqueezy_subscription", "acme", "notes", "lemon-sub@buyer.example", "subscription"),
            ("polar", "acme", "notes", "polar@buyer.example", "lifetime"), ("polar_subscription", "acme", "notes", "polar-sub@buyer.example", "subscription"),
        ):
            found = s.admin("GET", f"/tenants/{tenant}/products/{product}/licenses?email=" + urllib.parse.quote(address))["licenses"]
            if not found:
                fail(f"no license for {address}")
            self.adopt(name, tenant, product, found[0]["id"], self.key_of(found[0]["id"]), key_type)
        for name in ("paddle", "paddle_lookup", "paddle_subscription", "lemonsqueezy", "lemonsqueezy_subscription", "polar", "polar_subscription"):
            self.activate(name, f"{name} Mac", telemetry("1.2.0", os_version="15.2"))

    def app_store(self):
        s = self.s
        s.admin("PATCH", "/tenants/acme/products/notes", {"appstore_bundle_id": "com.acme.notes", "appstore_environments": ["Production", "Sandbox"]})
        s.admin("PATCH", "/tenants/acme/products/notes/key-types/lifetime", {"appstore_product_id": "com.acme.notes.pro"})
        s.admin("PATCH", "/tenants/acme/products/notes/key-types/subscription", {"appstore_product_id": "com.acme.notes.monthly"})
        now_ms = int(time.time() * 1000)
        lifetime = self.chain.sign(AppStoreChain.transaction("com.acme.notes", "com.acme.notes.pro", "2000000000000001"))
        monthly = self.chain.sign(AppStoreChain.transaction("com.acme.notes", "com.acme.notes.monthly", "2000000000000002", expires_ms=now_ms + 30 * 86_400_000))
        refundable = self.chain.sign(AppStoreChain.transaction("com.acme.notes", "com.acme.notes.pro", "2000000000000003"))
        for name, jws, key_type in (("appstore", lifetime, "lifetime"), ("appstore_subscription", monthly, "subscription"), ("appstore_refunded", refundable, "lifetime")):
            body = {"signed_transaction": jws, "instance_name": f"{name} iPhone", "machine_hash": machine(name), **telemetry("1.2.0", platform="iOS", os_version="18.1", cores="5-8", memory="4-8GB")}
            answer = s.sdk("acme", "notes", "appstore/activate", body, self.sdk_keys["acme/notes"])
            if answer.status != 200:
                fail(f"App Store exchange {name}: {answer.status} {answer.text[:300]}")
            found = [l for l in s.admin("GET", "/tenants/acme/products/notes/licenses?limit=500")["licenses"] if l.get("payment_order_id") == json.loads(
                base64.urlsafe_b64decode(jws.split(".")[1] + "=="))["originalTransactionId"]]
            lic = self.adopt(name, "acme", "notes", found[0]["id"] if found else None, answer.json["license_key"], key_type)
            lic["instances"].append({"instance_id": answer.json["instance_id"], "device": f"{name} iPhone", "machine_hash": machine(name)})
            if not lic["id"]:
                lic["id"] = s.admin("GET", "/tenants/acme/products/notes/licenses?key_suffix=" + answer.json["license_key"][-4:])["licenses"][0]["id"]
        renewed = self.chain.sign(AppStoreChain.transaction("com.acme.notes", "com.acme.notes.monthly", "2000000000000002", transaction_id="2000000000000012",
                                                            expires_ms=now_ms + 60 * 86_400_000))
        for kind, transaction, n in (("DID_RENEW", renewed, 1), ("REFUND", refundable, 2)):
            answer = request("POST", f"{s.base}/appstore/notifications/acme", body={"signedPayload": self.chain.notification("com.acme.notes", kind, transaction, did(f"appstore-notification-{n}"))})
            if answer.status != 200:
                fail(f"App Store notification {kind}: {answer.status} {answer.text[:300]}")

    def cli_client(self, store, *arguments, keys_path, product="notes", check=True):
        command = [self.binary, "client", "--server", self.s.base, "--tenant", "acme", "--product", product, "--sdk-key", self.sdk_keys[f"acme/{product}"],
                   "--keys", keys_path, "--store", os.path.join(self.workdir, store), *arguments]
        result = subprocess.run(command, capture_output=True, text=True, env=self.s.env, cwd=self.workdir, timeout=120)
        if check and result.returncode != 0:
            fail(f"keylight client {' '.join(arguments)}: {result.returncode} {result.stdout} {result.stderr}")
        return result

    def offline(self):
        keys_path = os.path.join(self.workdir, "acme-keys.json")
        with open(keys_path, "wb") as f:
            f.write(request("GET", self.s.base + "/acme/.well-known/keylight-keys").body)
        self.mint("offline", "acme", "notes", "offline", customer_email="bunker@buyer.example", expires_at=FUTURE)
        lic = self.licenses["offline"]
        for store in ("offline-device-1", "offline-device-2"):
            request_file = os.path.join(self.workdir, f"{store}.request.txt")
            response_file = os.path.join(self.workdir, f"{store}.response.txt")
            self.cli_client(store, "offline-request", "--out", request_file, keys_path=keys_path)
            self.cli_client("offline-helper", "offline-activate", "--request", request_file, "--out", response_file, lic["key"], keys_path=keys_path)
            status = json.loads(self.cli_client(store, "offline-import", "--response", response_file, lic["key"], keys_path=keys_path).stdout)
            lic["instances"].append({"instance_id": status["instance_id"], "device": store, "machine_hash": None, "offline": True})
        proof = os.path.join(self.workdir, "offline-device-2.proof.txt")
        self.cli_client("offline-device-2", "offline-deactivate", "--out", proof, keys_path=keys_path)
        self.cli_client("offline-helper", "submit-proof", "--proof", proof, lic["key"], keys_path=keys_path)
        lic["instances"][1]["deactivated"] = "offline proof"
        # One activation by the SDK itself, through the binary's `client` (Swift SDK 1.1.0's own requests).
        self.mint("sdk_client", "acme", "notes", "annual", customer_email="cli@buyer.example", expires_at=FUTURE)
        status = json.loads(self.cli_client("sdk-client", "activate", self.licenses["sdk_client"]["key"], keys_path=keys_path).stdout)
        if status.get("state") != "licensed":
            fail(f"client activate: {status}")
        self.licenses["sdk_client"]["instances"].append({"instance_id": status["instance_id"], "device": "sdk-client", "machine_hash": None})
        self.cli_client("sdk-client", "refresh", keys_path=keys_path, check=False)

    def seats_and_floating(self, tele):
        # Node-locked seats with overage: 5 + 20 % = 6 in use (over the limit), the 7th refused.
        for n in range(4, 7):
            self.activate("seats", f"Team Mac {n}", tele)
        refused = self.activate("seats", "Team Mac 7", tele, expect=409)
        if refused.get("code") != "ACTIVATION_LIMIT_REACHED":
            fail(f"the 7th seat: {refused}")
        # The developer frees one (admin API).
        lic = self.licenses["seats"]
        freed = lic["instances"][3]
        self.s.admin("POST", f"/tenants/acme/products/notes/licenses/{lic['id']}/instances/{freed['instance_id']}/deactivate", expect=200)
        freed["deactivated"] = "admin"
        self.activate("seats", "Team Mac 7", tele)
        # Floating seats (heartbeat 10 s), served without an SDK key (the product does not require one).
        self.mint("floating", "acme", "studio", "floating", customer_email="studio@buyer.example", expires_at=FUTURE)
        self.licenses["floating"]["floating"] = True
        self.licenses["floating"]["no_sdk_key"] = True
        first = self.activate("floating", "Render node 1", tele, with_sdk_key=False)
        self.activate("floating", "Render node 2", tele, with_sdk_key=False)
        self.validate("floating", first, tele)
        # Render node 1 falls silent: the sweep frees its seat (instance.expired) after 10 s.
        self.floating_started = time.time()

    def portal(self):
        base = self.s.base + "/portal/acme/notes"
        jar = {}

        def page():
            answer = request("GET", base, headers={"Cookie": f"keylight_portal={jar['c']}"} if jar else {})
            jar["c"] = answer.cookies().get("keylight_portal", jar.get("c"))
            return re.search(r'name="_csrf" value="([^"]+)"', answer.text).group(1)

        def post(path, form, what):
            answer = request("POST", base + path, form={"_csrf": page(), **form}, headers={"Cookie": f"keylight_portal={jar['c']}"})
            if answer.status not in (302, 303):
                fail(f"portal {what}: {answer.status} {answer.text[:300]}")
            jar["c"] = answer.cookies().get("keylight_portal", jar["c"])

        for address in ("ada@buyer.example", "nobody@nowhere.example"):
            post("/lost-key", {"email": address}, "lost key")
        # Sign in with a key and free a device (the customer, through the portal).
        lic = self.licenses["perpetual"]
        post("/sign-in", {"license_key": lic["key"]}, "sign-in")
        target = lic["instances"][2]
        post(f"/devices/{target['instance_id']}/deactivate", {"free": target["instance_id"]}, "free a device")
        target["deactivated"] = "portal"

    def webhook_admin(self):
        s = self.s
        deliveries = s.admin("GET", f"/tenants/acme/webhooks/{self.endpoints['acme_ok']}/deliveries?limit=5")["deliveries"]
        s.admin("POST", f"/tenants/acme/webhooks/{self.endpoints['acme_ok']}/deliveries/{deliveries[-1]['id']}/redeliver", expect=202)
        s.admin("PATCH", f"/tenants/globex/webhooks/{self.endpoints['globex_ok']}", {"enabled": False})
        s.admin("PATCH", f"/tenants/globex/webhooks/{self.endpoints['globex_ok']}", {"enabled": True})
        extra = s.admin("POST", "/tenants/globex/webhooks", {"url": f"{self.receivers.base}/ok/globex-disabled", "events": ["license.revoked"]}, expect=201)
        s.admin("PATCH", f"/tenants/globex/webhooks/{extra['id']}", {"enabled": False})
        self.secrets[f"keylight.webhook.endpoint.{extra['id']}"] = extra["secret"]
        gone = s.admin("POST", "/tenants/globex/webhooks", {"url": f"{self.receivers.base}/ok/deleted"}, expect=201)
        s.admin("DELETE", f"/tenants/globex/webhooks/{gone['id']}", expect=204)
        s.admin("POST", "/tenants/acme/mail/preview", {})

    # MARK: answers

    def validatable(self, lic):
        """The license's instances; for a license without any, an instance id it never had (its
        answer is still the license's verdict: revoked, or not an active instance here)."""
        found = [inst for inst in lic["instances"] if inst.get("instance_id")]
        return found or [{"instance_id": did(f"never-activated-{lic['id']}"), "device": None, "machine_hash": None, "placeholder": True}]

    def recorded_validate(self, name, instance, server=None):
        server = server or self.s
        lic = self.licenses[name]
        # The device's own telemetry, as it last sent it: a validate without it would clear its values.
        body = self.validate_body(lic, instance, instance.get("tele"))
        headers = {} if lic.get("no_sdk_key") else {"X-Keylight-SDK-Key": self.sdk_key(lic)}
        path = f"/{lic['tenant']}/{lic['product']}/validate"
        answer = request("POST", server.base + path, body=body, headers=headers)
        return {"request": {"method": "POST", "path": path, "headers": headers, "body": body},
                "status": answer.status, "answer": normalize_validate(answer.status, answer.json), "raw_answer": answer.json}


def normalize_validate(status, body):
    """The members of a validate answer that must not change across an upgrade."""
    if status != 200:
        kept = {"code": body.get("code")}
        for extra in ("activation_limit", "license_expires_at"):
            if extra in body:
                kept[extra] = body[extra]
        return kept
    lease = body.get("lease", {})
    config = body.get("config", {})
    kept = {
        "valid": body.get("valid"),
        "license_expires_at": body.get("license_expires_at"),
        "lease": {"kid": lease.get("kid"), "licenseKeyHash": lease.get("licenseKeyHash"), "instanceId": lease.get("instanceId"),
                  "status": lease.get("status"), "entitlements": lease.get("entitlements"),
                  "seconds": (lease.get("expiresAt") or 0) - (lease.get("issuedAt") or 0)},
        "config": {"kid": config.get("kid"), "trial_duration_days": config.get("trial_duration_days"), "free_tier_enabled": config.get("free_tier_enabled")},
        "trial_duration_days": body.get("trial_duration_days"), "free_tier_enabled": body.get("free_tier_enabled"), "kid": body.get("kid"),
    }
    for extra in ("heartbeat_seconds", "over_limit"):
        if extra in body:
            kept[extra] = body[extra]
    return kept


# MARK: the database afterwards

def tables(connection):
    return [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def row_counts(connection):
    return {name: connection.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in tables(connection)}


# Every sealed column of the 0016 schema: table, column, the primary key's columns, and the
# AES-GCM context (associated data) the release sealed it under, from the row's own values.
SEALED = [
    ("signing_keys", "sealed_private_key", ["kid"], lambda r: f"keylight.signing_key.{r['kid']}"),
    ("tenant_signing_keys", "sealed_private_key", ["tenant_id", "kid"], lambda r: f"keylight.signing_key.{r['kid']}"),
    ("response_signing_keys", "sealed_private_key", ["id"], lambda r: f"keylight.response_key.{r['root_kid']}.{r['created_day']}"),
    ("stripe_settings", "sealed_webhook_secret", ["tenant_id"], lambda r: f"keylight.stripe.webhook.{r['tenant_id']}"),
    ("stripe_settings", "sealed_secret_key", ["tenant_id"], lambda r: f"keylight.stripe.secret.{r['tenant_id']}"),
    ("stripe_events", "sealed_event", ["tenant_id", "id"], lambda r: f"keylight.stripe.event.{r['tenant_id']}.{r['id']}"),
    ("checkout_sessions", "sealed_license_key", ["tenant_id", "id"], lambda r: f"keylight.checkout.license.{r['tenant_id']}.{r['id']}"),
    ("webhook_endpoints", "sealed_secret", ["id"], lambda r: f"keylight.webhook.endpoint.{r['id']}"),
    ("webhook_deliveries", "sealed_payload", ["id"], lambda r: f"keylight.webhook.payload.{r['event_id']}"),
    ("licenses", "sealed_key", ["id"], lambda r: f"keylight.license_key.{r['id']}"),
    ("idempotency_keys", "sealed_answer", ["scope", "idem_key"], lambda r: f"keylight.idempotency.{r['scope']}.{r['idem_key']}"),
    ("merchant_settings", "sealed_webhook_secret", ["tenant_id", "provider"], lambda r: f"keylight.{r['provider']}.webhook.{r['tenant_id']}"),
    ("merchant_settings", "sealed_api_key", ["tenant_id", "provider"], lambda r: f"keylight.{r['provider']}.apikey.{r['tenant_id']}"),
    ("merchant_events", "sealed_event", ["tenant_id", "provider", "id"], lambda r: f"keylight.{r['provider']}.event.{r['tenant_id']}.{r['id']}"),
]


def sealed_values(connection, master_key, known):
    aes = AESGCM(master_key)
    connection.row_factory = sqlite3.Row
    found, problems = [], []
    for table, column, keys, context_of in SEALED:
        for row in connection.execute(f'SELECT * FROM "{table}" WHERE "{column}" IS NOT NULL ORDER BY {", ".join(keys)}'):
            context = context_of(row)
            combined = base64.b64decode(row[column])
            try:
                plain = aes.decrypt(combined[:12], combined[12:], context.encode())
            except Exception:
                problems.append(f"{table}.{column} {dict((k, row[k]) for k in keys)} does not open under {context!r}")
                continue
            entry = {"table": table, "column": column, "row": {k: row[k] for k in keys}, "context": context,
                     "plaintext_sha256": hashlib.sha256(plain).hexdigest(), "plaintext_bytes": len(plain)}
            if context in known:
                entry["plaintext"] = known[context]
                if known[context].encode() != plain:
                    problems.append(f"{table}.{column} {entry['row']} opens to something other than what was set")
            found.append(entry)
    connection.row_factory = None
    return found, problems


NOT_FILLABLE = {
    "signing_keys": "The server-wide key table of releases before 0006_tenant_signing_keys: 63ae57f only reads it once, in that migration, "
                    "to give existing tenants its keys; nothing in 63ae57f writes it, so a database created by 63ae57f has it empty "
                    "(every key is in tenant_signing_keys).",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the old release's keylight binary")
    parser.add_argument("--out", required=True, help="the fixture folder to write (keylight.sql, master-key, expected.json)")
    parser.add_argument("--faketime-lib", help="libfaketime.so.1 to run the first two phases on the two previous days (default: from the libfaketime pip package)")
    parser.add_argument("--no-backdate", action="store_true", help="run every phase today (insights_daily and insights_rollups stay empty)")
    parser.add_argument("--keep-work", action="store_true", help="keep the temporary folder (server logs, the database)")
    parser.add_argument("--commit", default="63ae57f", help="the release's commit, recorded in expected.json")
    args = parser.parse_args()
    started = time.time()
    fixture = Fixture(args)
    now = int(time.time())
    fixture.today = now // DAY * DAY
    log(f"working in {fixture.workdir}; libfaketime: {fixture.faketime_lib or 'none (every phase runs today)'}")

    if fixture.faketime_lib:
        fixture.start("phase-A", fake_start=fixture.today - 2 * DAY + 10 * 3600)
    else:
        fixture.start("phase-A")
    fixture.phase_a()
    fixture.stop()
    if fixture.faketime_lib:
        fixture.start("phase-B", fake_start=fixture.today - DAY + 10 * 3600)
    else:
        fixture.start("phase-B")
    fixture.phase_b()
    fixture.stop()
    fixture.start("phase-C")
    made_at = int(time.time())
    fixture.phase_c()
    # The audit log's first page and the insights, as the server that wrote them answers.
    made_audit = fixture.s.admin("GET", "/audit-log")
    audit_cursor = made_audit["entries"][0]["id"] + 1
    fixture.stop()

    master_key_text = open(fixture.db + ".master-key").read().strip()
    master_key = base64.b64decode(master_key_text)

    # The dump.
    # Known plaintexts: each license's key (its sealed copy), and a checkout session's uncollected key.
    for lic in fixture.licenses.values():
        if lic["id"] and lic["key"] and not lic.get("replaced"):
            fixture.secrets[f"keylight.license_key.{lic['id']}"] = lic["key"]
    keys_by_id = {lic["id"]: lic["key"] for lic in fixture.licenses.values() if not lic.get("replaced")}
    with sqlite3.connect(fixture.db) as connection:
        for tenant, session_id, license_id in connection.execute("SELECT tenant_id, id, license_id FROM checkout_sessions WHERE sealed_license_key IS NOT NULL"):
            if license_id in keys_by_id:
                fixture.secrets[f"keylight.checkout.license.{tenant}.{session_id}"] = keys_by_id[license_id]
    connection.close()
    with sqlite3.connect(fixture.db) as connection:
        counts = row_counts(connection)
        sealed, problems = sealed_values(connection, master_key, fixture.secrets)
        dump = "\n".join(connection.iterdump()) + "\n"
    connection.close()
    if problems:
        fail("sealed values that do not open: " + "; ".join(problems))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "keylight.sql"), "w") as f:
        f.write(dump)
    with open(os.path.join(args.out, "master-key"), "w") as f:
        f.write(master_key_text + "\n")
    log(f"dump: {len(dump.encode())} bytes, {sum(counts.values())} rows in {len(counts)} tables")

    # The round trip: the dump into a fresh file, the old binary on it, the same answers.
    verify_dir = os.path.join(fixture.workdir, "verify")
    os.makedirs(verify_dir)
    verify_db = os.path.join(verify_dir, "keylight.sqlite")
    with sqlite3.connect(verify_db) as connection:
        connection.executescript(open(os.path.join(args.out, "keylight.sql")).read())
    connection.close()
    key_file = os.path.join(verify_dir, "master-key")
    shutil.copyfile(os.path.join(args.out, "master-key"), key_file)
    os.chmod(key_file, 0o600)
    # The seat held at the dump runs out 10 s after its last validate: the copy is read after that,
    # as any later server reads it (its validate answers 422 INSTANCE_INACTIVE from then on).
    with sqlite3.connect(verify_db) as connection:
        deadline = connection.execute("SELECT MAX(seat_expires_at) FROM instances").fetchone()[0] or 0
    connection.close()
    if deadline + 2 > time.time():
        time.sleep(deadline + 2 - time.time())
    verify = OldServer(fixture.binary, verify_dir, verify_db, ["--master-key-file", key_file, "--rate-limit-address", "0", "--rate-limit-license", "0"],
                       label="verify", token=fixture.token)
    fixture.server = verify
    insights = {}
    for tenant, product in (("acme", "notes"), ("acme", "studio"), ("globex", "tool")):
        for by in ("app_version", "os_version"):
            path = f"/tenants/{tenant}/products/{product}/insights?by={by}&from={fixture.day(-3)}&to={fixture.day(0)}&window=7"
            insights[f"{tenant}/{product}?by={by}"] = {"request": "GET /admin/v1" + path, "answer": verify.admin("GET", path)}
    # A server started on the dump frees the floating seat held at the dump (its heartbeat ran out):
    # that appends entries; the fixture's own are those before the cursor.
    audit = verify.admin("GET", f"/audit-log?cursor={audit_cursor}")
    if audit != made_audit:
        fail("the audit log read from the dump differs from the one the server answered before the dump")
    licenses_out = []
    differences = []
    for name, lic in fixture.licenses.items():
        admin_view = verify.admin("GET", f"/tenants/{lic['tenant']}/products/{lic['product']}/licenses/{lic['id']}")
        answers = [fixture.recorded_validate(name, inst, server=verify) for inst in fixture.validatable(lic)]
        before = fixture.validated_at_creation.get(name, [])
        for made, again in zip(before, answers):
            if (made["status"], made["answer"]) != (again["status"], again["answer"]) and not lic.get("floating"):
                differences.append(f"{name}: {made['status']} {made['answer']} then {again['status']} {again['answer']}")
        licenses_out.append({
            "name": name, "tenant": lic["tenant"], "product": lic["product"], "license_id": lic["id"], "license_key": lic["key"],
            "key_type_id": lic["key_type_id"], "replaced_key": bool(lic.get("replaced")),
            "instances": [{"instance_id": i["instance_id"], "device": i["device"], "deactivated_by": i.get("deactivated"), "offline": bool(i.get("offline"))}
                          for i in lic["instances"]],
            "note": "no instance: validated with an instance id it never had" if not lic["instances"] else None,
            "admin_license": admin_view,
            "validate": answers,
            "validate_when_made": before,
        })
    verify.stop()
    if differences:
        fail("the dump's copy answers differently: " + "; ".join(differences))
    log(f"round trip: the old binary on the dump answers every validate as before ({sum(len(l['validate']) for l in licenses_out)} validates)")

    if not fixture.faketime_lib:
        for name in ("insights_daily", "insights_rollups"):
            NOT_FILLABLE[name] = "rolled up only for days that are over; without libfaketime every run was today's"
    empty = sorted(name for name, n in counts.items() if n == 0)
    unexplained = [name for name in empty if name not in NOT_FILLABLE]
    if unexplained:
        fail(f"tables left empty: {unexplained}")

    expected = {
        "release": {"commit": args.commit, "sdk_version": "1.1.0", "migrations": "0001_initial_schema … 0016_insights"},
        "made_at": made_at, "made_at_iso": iso(made_at)[:19] + "Z",
        "phases": fixture.phase_clocks,
        "how": "python3 Server/Tests/Fixtures/upgrade/make-fixture.py --binary PATH --out DIR (see README.md)",
        "admin_token": fixture.token,
        "master_key_file": "master-key (base64 of 32 bytes; the server wants it mode 0600, or as KEYLIGHT_MASTER_KEY)",
        "sdk_keys": fixture.sdk_keys,
        "dashboard_users": {"owner@acme.example": PASSWORD, "support@acme.example": PASSWORD},
        "licenses": licenses_out,
        "insights": insights,
        "audit_log": {"request": f"GET /admin/v1/audit-log?cursor={audit_cursor}", "answer": audit,
                      "note": "the first page (100 newest entries) as the old server answered before the dump; the cursor leaves out entries "
                              "a server appends once started on the dump (the floating seat held at the dump expires: actor system)"},
        "sealed": sealed,
        "row_counts": counts,
        "empty_tables": {name: NOT_FILLABLE[name] for name in empty},
        "_ignored_fields": {
            "validate (200)": {
                "lease.signature, config.signature, signature": "Ed25519 over the request's own issuedAt/expiresAt: differ every request",
                "lease.issuedAt, lease.expiresAt": "the request's time plus the lease's length; kept as lease.seconds (expiresAt - issuedAt), "
                                                   "which is the key type's lease TTL, the offline lease for an offline device, the heartbeat for a floating seat",
                "config.issued_at, config.expires_at, issued_at, expires_at (top level)": "the signed config's own validity, from the request's time",
                "HTTP headers (X-Keylight-Request-Id, signed-response headers)": "per request; no nonce is sent, so no response signature",
            },
            "validate (4xx)": {"message": "human wording; the verdict is `code` (kept)"},
            "validate_when_made": "the answers during making, before the dump; `validate` is the old binary's answer on the dump's copy, "
                                  "the one a later server must give. They differ only for the floating license: its seats (heartbeat 10 s) "
                                  "had been silent longer than the heartbeat by then, so they answer 422 INSTANCE_INACTIVE.",
            "admin_license.expired": "computed from the reading clock: stable here (expiries are 2021 or 2036, or lapsed subscriptions)",
            "admin_license.instances[].last_validated_at, seat_expires_at": "move with every validate (the dump's values are the ones shown)",
            "insights": {
                "retained_from": "today minus the retention days: the reading clock",
                "active_devices": "counted from device_days, which a server prunes 90 days (--insights-retention-days) after they were seen: "
                                  "equal only while the fixture is younger than that",
                "series": "from insights_daily for the days rolled up; days not rolled up when read are counted live from device_days",
                "funnel.converted_at_least_30_days_ago, funnel.still_active_after_30_days": "relative to the reading clock",
                "quiet_licenses, quiet_license_list": "licenses silent for 30 days before the reading clock",
                "funnel (keyless installs)": "keyless installs never converted are deleted 90 days after their last check-in",
            },
            "audit_log": "stable: every entry was written at making; next_cursor is the id of the page's last entry",
        },
    }
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")

    print()
    print(f"{'table':32} rows")
    for name, n in counts.items():
        print(f"{name:32} {n:5}" + ("   (empty: see below)" if n == 0 else ""))
    for name in empty:
        print(f"\n{name} is empty: {NOT_FILLABLE[name]}")
    print(f"\nwrote {args.out}/keylight.sql ({len(dump.encode())} bytes), master-key, expected.json; {len(sealed)} sealed values open; "
          f"took {time.time() - started:.0f} s")
    if args.keep_work:
        print(f"work folder kept: {fixture.workdir}")
    else:
        shutil.rmtree(fixture.workdir, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        main()
    finally:
        kill_running()
