#!/usr/bin/env python3
"""A rolling upgrade on PostgreSQL, under load (issue 52): processes of the previous release and of
this one serve side by side on one database while this one's migrations run, with no 5xx, no
connection error and no lost write.

    python3 Server/Tests/Upgrade/rolling_upgrade.py --old keylight-63ae57f --new Server/.build/debug/keylight \\
        --postgres-url postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable

(--postgres-url defaults to KEYLIGHT_TEST_POSTGRES_URL; only its server is used: the run makes a
fresh database there and drops it at the end. psql comes from KEYLIGHT_TEST_PG_BIN, PATH or
/usr/lib/postgresql/*/bin.)

1. Two processes of the old release start on a fresh database (the first migrates it to the old
   release's last migration, the second joins); a tenant, a product, two key types and licenses are
   made through the old admin API, and a few devices activated.
2. A steady load (several threads, a fixed total pace, round-robin over the processes in rotation):
   activations of new devices (on licenses with seats to spare, and some on a license capped at 5
   seats) and validations of known instances. Every answer is recorded with its phase, process and
   status; each 2xx activation's instance id is a write that must not be lost.
3. Under that load: `new migrate --dry-run` (exit 0, every pending migration "safe while older
   processes run", the caveats printed, nothing written); a new process starts on the database and
   migrates it while the old ones serve (the migration's time is printed); it joins the rotation;
   then each old process in turn leaves the rotation, is sent SIGTERM once nothing is left half-sent
   to it, and a new process replaces it. Whatever it is still answering must be answered (it drains):
   three requests begun on it just before the signal, whose bodies end 0.2 s after it, must get 200,
   and it must exit 0.
4. While old and new processes serve the migrated database: a validation answered by an old process
   and by a new one agree on every field both releases send; the capped license and the public
   keyset read the same from both.
5. After the load: no 5xx, no connection error, no unexpected status in any phase; every instance a
   2xx activation answered is on its license (admin API) and validates on a new process; each
   license counts its initial devices plus the recorded activations, and the capped one exactly its
   5 seats; validations answered by old processes reached last_validated_at (they flushed on
   SIGTERM); keylight_migrations lists all of this release's migrations.
6. Downgrade: the old binary refuses the migrated database (non-zero exit naming a migration it does
   not know); `new migrate --dry-run` has nothing to apply; with a fake newer migration recorded, the
   new binary refuses to start ("Downgrades are refused") and its dry run exits 1.
7. Every process is stopped (SIGTERM: exit 0 expected) and the database dropped, also on failure.

One line per step; a summary with the figures at the end. The first failure prints `FAIL: …` with
the tail of every process's log (kept in the temporary folder, which a failed run leaves behind)
and exits 1.
"""
import argparse
import base64
import collections
import glob
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

OLD_LAST = "0016_insights"
# The old release's migrations and the eight this release adds, in order.
OLD_MIGRATIONS = ["0001_initial_schema", "0002_response_signing_keys", "0003_stripe", "0004_webhooks_and_checkout",
                  "0005_dashboard", "0006_tenant_signing_keys", "0007_replaced_license_keys", "0008_money_paths",
                  "0009_seats_offline", "0010_floating_updates", "0011_mail", "0012_idempotency", "0013_sdk_key_optional",
                  "0014_merchants", "0015_appstore", "0016_insights"]
NEW_MIGRATIONS = ["0017_license_life", "0018_paid_changes", "0019_reminders", "0020_portal_accounts",
                  "0021_reminder_templates", "0022_team_access", "0023_releases", "0024_release_delivery"]
# The pending migrations whose dry-run line must carry a caveat (what older processes do not know).
CAVEATED = {"0017_license_life", "0018_paid_changes", "0019_reminders", "0020_portal_accounts", "0022_team_access"}
FAKE_MIGRATION = "9999_from_a_newer_release"
TOKEN = "rolling-upgrade-admin"
TENANT = "acme"
PRODUCT = "app"
HTTP_TIMEOUT = 15          # every request's socket timeout
START_TIMEOUT = 90         # a process printing its listening line (the first new one migrates)
STOP_TIMEOUT = 40          # a process exiting after SIGTERM (its --shutdown-timeout is 30 s)
REFUSAL_TIMEOUT = 60       # a process refusing a database
BIG_SEATS = 1000
CAPPED_SEATS = 5


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


T0 = time.monotonic()


def step(message):
    print(f"[{time.monotonic() - T0:6.1f} s] {message}", flush=True)


# ---------------------------------------------------------------- PostgreSQL


def find_psql():
    folder = os.environ.get("KEYLIGHT_TEST_PG_BIN")
    if folder and os.path.exists(os.path.join(folder, "psql")):
        return os.path.join(folder, "psql")
    found = shutil.which("psql")
    if found:
        return found
    candidates = glob.glob("/usr/lib/postgresql/*/bin/psql")
    candidates.sort(key=lambda path: [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)])
    if candidates:
        return candidates[-1]
    raise Failure("psql not found (set KEYLIGHT_TEST_PG_BIN, or put it on PATH)")


class Postgres:
    def __init__(self, server_url):
        self.psql = find_psql()
        parsed = urllib.parse.urlsplit(server_url)
        check(parsed.scheme in ("postgres", "postgresql") and parsed.hostname, f"--postgres-url {server_url!r} is not a postgres:// URL")
        self.parsed = parsed
        self.name = "keylight_rolling_" + uuid.uuid4().hex[:10]
        self.admin_url = self.url_for("postgres")
        self.url = self.url_for(self.name)
        self.created = False

    def url_for(self, database):
        return urllib.parse.urlunsplit((self.parsed.scheme, self.parsed.netloc, "/" + database, self.parsed.query, ""))

    def run(self, sql, url=None, check_status=True):
        try:
            done = subprocess.run([self.psql, url or self.url, "-v", "ON_ERROR_STOP=1", "-qAtX", "-c", sql], capture_output=True,
                                  text=True, timeout=60, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Failure(f"psql did not answer within 60 s: {sql}")
        if check_status and done.returncode != 0:
            raise Failure(f"psql {sql!r} exited {done.returncode}: {done.stderr.strip()}")
        return done

    def rows(self, sql):
        return [line.split("|") for line in self.run(sql).stdout.splitlines() if line]

    def create(self):
        self.run(f"CREATE DATABASE {self.name}", url=self.admin_url)
        self.created = True

    def drop(self):
        if not self.created:
            return
        done = self.run(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)", url=self.admin_url, check_status=False)
        if done.returncode != 0:
            self.run(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{self.name}'", url=self.admin_url, check_status=False)
            done = self.run(f"DROP DATABASE IF EXISTS {self.name}", url=self.admin_url, check_status=False)
        if done.returncode == 0:
            self.created = False
        else:
            print(f"warning: could not drop database {self.name}: {done.stderr.strip()}", flush=True)


# ---------------------------------------------------------------- processes


class Process:
    """One `keylight serve`, its stdout and stderr in files of the run's folder."""

    count = collections.Counter()

    def __init__(self, run, release):
        Process.count[release] += 1
        self.release = release
        self.name = f"{release}{Process.count[release]}"
        self.run = run
        self.binary = run.binaries[release]
        self.stdout_path = os.path.join(run.folder, f"{self.name}.stdout")
        self.stderr_path = os.path.join(run.folder, f"{self.name}.stderr")
        self.port = None
        self.popen = None
        self.started_at = None
        self.listening_after = None
        self.exit_code = None

    def start(self):
        arguments = [self.binary, "serve", "--host", "127.0.0.1", "--port", "0", "--database-url", self.run.pg.url,
                     "--rate-limit-address", "0", "--rate-limit-license", "0", "--pool-size", "6", "--key-refresh-interval", "1",
                     "--log-level", "info"]
        if self.release == "new":
            arguments += ["--artifacts-dir", os.path.join(self.run.folder, "artifacts")]
        self.started_at = time.monotonic()
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.popen = subprocess.Popen(arguments, cwd=self.run.folder, env=self.run.env, stdin=subprocess.DEVNULL,
                                          stdout=out, stderr=err, start_new_session=True)
        self.run.processes.append(self)
        return self

    def wait_listening(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.stdout_path) as handle:
                match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", handle.read())
            if match:
                self.port = int(match.group(1))
                self.listening_after = time.monotonic() - self.started_at
                return self
            if self.popen.poll() is not None:
                raise Failure(f"{self.name} ({self.binary}) exited {self.popen.returncode} before listening")
            time.sleep(0.05)
        raise Failure(f"{self.name} did not print its listening line within {timeout} s")

    def wait_exit(self, timeout):
        try:
            self.exit_code = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_code

    def stop(self):
        """SIGTERM, then the exit status (None if it had to be killed)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        code = self.wait_exit(STOP_TIMEOUT)
        if code is None:
            self.kill()
        return code

    def kill(self):
        if self.popen and self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except OSError:
                self.popen.kill()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def output(self):
        text = ""
        for path in (self.stdout_path, self.stderr_path):
            try:
                with open(path, errors="replace") as handle:
                    text += handle.read()
            except OSError:
                pass
        return text

    def tail(self, lines=30):
        try:
            with open(self.stderr_path, errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""


def run_command(arguments, env, timeout):
    try:
        done = subprocess.run(arguments, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Failure(f"{' '.join(arguments)} did not finish within {timeout} s")
    return done.returncode, done.stdout + done.stderr


# ---------------------------------------------------------------- HTTP


def call(port, method, path, body=None, headers=None, sent=None):
    """(status, parsed JSON or text) of one request on its own connection; raises OSError or
    http.client.HTTPException when there is no answer. `sent()` is called once the request is
    wholly written."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    try:
        data = json.dumps(body).encode() if body is not None else None
        all_headers = {"Connection": "close", **(headers or {})}
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        connection.request(method, path, body=data, headers=all_headers)
        if sent:
            sent()
        response = connection.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        return response.status, parsed
    finally:
        connection.close()


def admin(process, method, path, body=None, expect=None):
    try:
        status, parsed = call(process.port, method, "/admin/v1" + path, body, {"Authorization": f"Bearer {TOKEN}"})
    except (OSError, http.client.HTTPException) as error:
        raise Failure(f"{method} /admin/v1{path} at {process.name}: no answer ({error!r})")
    if expect is not None and status != expect:
        raise Failure(f"{method} /admin/v1{path} at {process.name} answered {status}, expected {expect}: {parsed}")
    return parsed


def sdk(process, action, body, sdk_key):
    return call(process.port, "POST", f"/{TENANT}/{PRODUCT}/{action}", body, {"X-Keylight-SDK-Key": sdk_key})


def machine():
    return hashlib.sha256(uuid.uuid4().bytes).hexdigest()


# ---------------------------------------------------------------- the load


class Load:
    """Threads that each send at a fixed pace to the processes in rotation, round-robin."""

    def __init__(self, run, rate, threads):
        self.run = run
        self.rate = rate
        self.thread_count = threads
        self.lock = threading.Lock()
        self.rotation = []
        self.unsent = collections.Counter()       # per process: picked, not yet wholly written
        self.in_flight = collections.Counter()    # per process: written, not yet answered
        self.phase = "before"
        self.next_index = 0
        self.records = []                         # (phase, process, release, op, status, error, latency, started_at, detail)
        self.activated = []                       # (license id, instance id, process name, phase)
        self.known = []                           # (license key, instance id) that validate
        self.validated_at_old = {}                # instance id -> latest wall time an old process answered 2xx
        self.stop_event = threading.Event()
        self.threads = []

    def add(self, process):
        with self.lock:
            self.rotation.append(process)

    def remove(self, process):
        with self.lock:
            self.rotation.remove(process)

    def set_phase(self, phase):
        with self.lock:
            self.phase = phase

    def drained_of_unsent(self, process, timeout=10):
        """Waits until no request picked for `process` is still being written; answers how many
        requests it is then answering (in flight)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.unsent[process.name] == 0:
                    return self.in_flight[process.name]
            time.sleep(0.002)
        raise Failure(f"requests to {process.name} were still being written {timeout} s after it left the rotation")

    def start(self):
        for index in range(self.thread_count):
            thread = threading.Thread(target=self.loop, args=(index,), name=f"load{index}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self):
        self.stop_event.set()
        for thread in self.threads:
            thread.join(HTTP_TIMEOUT + 5)
            check(not thread.is_alive(), f"load thread {thread.name} did not stop")

    def pick(self):
        with self.lock:
            if not self.rotation:
                return None, self.phase
            process = self.rotation[self.next_index % len(self.rotation)]
            self.next_index += 1
            self.unsent[process.name] += 1
            return process, self.phase

    def loop(self, index):
        rng = random.Random(index)
        interval = self.thread_count / self.rate
        next_at = time.monotonic() + rng.random() * interval
        while not self.stop_event.is_set():
            delay = next_at - time.monotonic()
            if delay > 0:
                if self.stop_event.wait(delay):
                    break
            next_at += interval
            if next_at < time.monotonic() - interval:   # fell behind: no burst to catch up
                next_at = time.monotonic()
            self.one(rng)

    def one(self, rng):
        run = self.run
        draw = rng.random()
        with self.lock:
            known = self.known[rng.randrange(len(self.known))] if self.known else None
        if draw < 0.06:
            op, license_ = "activate-capped", run.capped
        elif draw < 0.36 or known is None:
            op, license_ = "activate", run.big[rng.randrange(len(run.big))]
        else:
            op = "validate"
        process, phase = self.pick()
        if process is None:
            time.sleep(0.01)
            return
        name = process.name
        written = [False]

        def sent():
            with self.lock:
                self.unsent[name] -= 1
                self.in_flight[name] += 1
            written[0] = True

        if op == "validate":
            body = {"license_key": known[0], "instance_id": known[1]}
        else:
            body = {"license_key": license_["key"], "instance_name": "Rolling", "machine_hash": machine()}
        wall, started = time.time(), time.monotonic()
        status, error, detail = None, None, None
        try:
            status, parsed = sdk(process, "activate" if op.startswith("activate") else "validate", body, run.sdk_key)
            detail = parsed
        except (OSError, http.client.HTTPException) as exception:
            error = repr(exception)
        finally:
            with self.lock:
                if written[0]:
                    self.in_flight[name] -= 1
                else:
                    self.unsent[name] -= 1
        latency = time.monotonic() - started
        unexpected = None
        if status is not None:
            if op == "validate":
                if status != 200 or not (isinstance(detail, dict) and detail.get("valid") is True):
                    unexpected = f"validate answered {status}: {str(detail)[:300]}"
            elif op == "activate":
                if status != 200 or not (isinstance(detail, dict) and detail.get("instance_id")):
                    unexpected = f"activate answered {status}: {str(detail)[:300]}"
            else:
                if status == 409:
                    if not (isinstance(detail, dict) and detail.get("code") == "ACTIVATION_LIMIT_REACHED"):
                        unexpected = f"capped activate answered 409 without ACTIVATION_LIMIT_REACHED: {str(detail)[:300]}"
                elif status != 200 or not (isinstance(detail, dict) and detail.get("instance_id")):
                    unexpected = f"capped activate answered {status}: {str(detail)[:300]}"
        with self.lock:
            self.records.append((phase, name, process.release, op, status, error, latency, wall, unexpected))
            if status == 200 and op.startswith("activate") and isinstance(detail, dict) and detail.get("instance_id"):
                instance = detail["instance_id"]
                self.activated.append((license_["id"], instance, name, phase))
                self.known.append((license_["key"], instance))
            if status == 200 and op == "validate" and process.release == "old":
                self.validated_at_old[known[1]] = max(wall, self.validated_at_old.get(known[1], 0))


# ---------------------------------------------------------------- the run


class Run:
    def __init__(self, arguments):
        self.arguments = arguments
        self.binaries = {"old": os.path.abspath(arguments.old), "new": os.path.abspath(arguments.new)}
        for release, binary in self.binaries.items():
            check(os.path.isfile(binary) and os.access(binary, os.X_OK), f"--{release} {binary} is not an executable file")
        self.folder = tempfile.mkdtemp(prefix="keylight-rolling-")
        self.pg = Postgres(arguments.postgres_url)
        self.env = dict(os.environ, KEYLIGHT_ADMIN_TOKEN=TOKEN, KEYLIGHT_MASTER_KEY=base64.b64encode(os.urandom(32)).decode())
        for name in ("KEYLIGHT_DATABASE_URL", "KEYLIGHT_ARTIFACTS_DIR"):
            self.env.pop(name, None)
        self.processes = []
        self.figures = {}
        self.load = None

    # -- helpers

    def dry_run(self):
        return run_command([self.binaries["new"], "migrate", "--dry-run", "--database-url", self.pg.url], self.env, 60)

    def migrations(self):
        return [row[0] for row in self.pg.rows("SELECT name FROM keylight_migrations ORDER BY name")]

    def refusal(self, release):
        """Starts `release` on the database, which must refuse it; answers (exit code, output, seconds)."""
        process = Process(self, release).start()
        started = time.monotonic()
        code = process.wait_exit(REFUSAL_TIMEOUT)
        if code is None:
            process.kill()
            raise Failure(f"{process.name} ({release} release) was still running {REFUSAL_TIMEOUT} s after starting on a database it must refuse:\n{process.output()[-2000:]}")
        return code, process.output(), time.monotonic() - started

    # -- 1. old processes and data

    def seed(self, first):
        admin(first, "POST", "/tenants", {"id": TENANT, "name": "Acme"}, expect=201)
        product = admin(first, "POST", f"/tenants/{TENANT}/products",
                        {"id": PRODUCT, "name": "App", "key_prefix": "ROLL", "trial_duration_days": 14, "free_tier_enabled": False}, expect=201)
        self.sdk_key = product.get("sdk_key")
        check(isinstance(self.sdk_key, str) and self.sdk_key, f"product create answered no sdk_key: {product}")
        base = f"/tenants/{TENANT}/products/{PRODUCT}"
        for key_type, seats in (("pro", BIG_SEATS), ("capped", CAPPED_SEATS)):
            admin(first, "POST", f"{base}/key-types", {"id": key_type, "display_name": key_type.title(), "activation_limit": seats,
                                                         "duration_days": None, "fallback_access": False, "entitlements": ["pro"]}, expect=201)
        self.big = []
        for _ in range(4):
            made = admin(first, "POST", f"{base}/licenses", {"key_type_id": "pro"}, expect=201)
            self.big.append({"id": made["id"], "key": made["license_key"]})
        made = admin(first, "POST", f"{base}/licenses", {"key_type_id": "capped"}, expect=201)
        self.capped = {"id": made["id"], "key": made["license_key"]}
        self.initial = collections.Counter()
        self.initial_instances = []
        for license_ in self.big + [self.capped]:
            for index in range(2):
                process = self.old_processes[index % 2]
                status, answer = sdk(process, "activate", {"license_key": license_["key"], "instance_name": "Seed", "machine_hash": machine()}, self.sdk_key)
                check(status == 200 and answer.get("activated") is True, f"seed activation at {process.name} answered {status}: {answer}")
                self.initial[license_["id"]] += 1
                self.initial_instances.append((license_["key"], answer["instance_id"]))

    # -- 4. old and new agree

    @staticmethod
    def comparable(answer):
        """The fields of a validate answer that both releases send and that do not depend on the
        moment: the outcome, the license's expiry, the lease but its times and signature (its
        lifetime instead), the signed config's settings."""
        lease = answer.get("lease") or {}
        config = answer.get("config") or {}
        return {
            "valid": answer.get("valid"),
            "license_expires_at": answer.get("license_expires_at"),
            "lease": {name: lease.get(name) for name in ("kid", "licenseKeyHash", "instanceId", "status", "entitlements")},
            "lease_lifetime": (lease.get("expiresAt") or 0) - (lease.get("issuedAt") or 0),
            "config": {name: config.get(name) for name in ("kid", "trial_duration_days", "free_tier_enabled")},
        }

    def compare_releases(self, old, new):
        load = self.load
        deadline = time.monotonic() + 20
        while True:
            with load.lock:
                by_new = [(lic, inst) for (lic, inst, name, _) in load.activated if name.startswith("new")]
                by_old = [(lic, inst) for (lic, inst, name, phase) in load.activated if name.startswith("old") and phase != "before"]
            if by_new and by_old:
                break
            check(time.monotonic() < deadline, "no activation answered by a new process (or by an old one after the migration) within 20 s of load")
            time.sleep(0.2)
        keys = {license_["id"]: license_["key"] for license_ in self.big + [self.capped]}
        samples = [("seeded before the upgrade", self.initial_instances[0][0], self.initial_instances[0][1]),
                   ("activated at an old process after the migration", keys[by_old[-1][0]], by_old[-1][1]),
                   ("activated at a new process", keys[by_new[-1][0]], by_new[-1][1])]
        for what, key, instance in samples:
            answers = {}
            for process in (old, new):
                try:
                    status, answer = sdk(process, "validate", {"license_key": key, "instance_id": instance}, self.sdk_key)
                except (OSError, http.client.HTTPException) as error:
                    raise Failure(f"validate at {process.name}: no answer ({error!r})")
                check(status == 200 and answer.get("valid") is True, f"validate of an instance {what} at {process.name} answered {status}: {answer}")
                answers[process.name] = answer
            first, second = (self.comparable(answers[p.name]) for p in (old, new))
            check(first == second, f"validate of an instance {what}: {old.name} and {new.name} disagree:\n  {old.name}: {first}\n  {new.name}: {second}")
            shared = set(answers[old.name]) & set(answers[new.name])
            check({"valid", "lease", "license_expires_at"} <= shared, f"validate answers lack fields both should send: {sorted(shared)}")
        # The capped license (full since the seed plus a few activations... or not yet): its seats and
        # instances read the same from both; the public keyset too.
        base = f"/tenants/{TENANT}/products/{PRODUCT}/licenses/{self.capped['id']}"
        seen = []
        for process in (old, new):
            detail = admin(process, "GET", base, expect=200)
            active = sorted(i["instance_id"] for i in detail.get("instances", []) if i.get("active"))
            seen.append((detail.get("active_instances"), detail.get("status"), detail.get("key_type_id"), active))
        if seen[0] != seen[1]:
            # An activation may have landed between the two reads: read once more, the other way round.
            again = []
            for process in (new, old):
                detail = admin(process, "GET", base, expect=200)
                again.append((detail.get("active_instances"), detail.get("status"), detail.get("key_type_id"),
                              sorted(i["instance_id"] for i in detail.get("instances", []) if i.get("active"))))
            check(again[0] == again[1], f"the capped license reads differently at {old.name} and {new.name}: {seen} then {again}")
        keysets = []
        for process in (old, new):
            status, keyset = call(process.port, "GET", "/.well-known/keylight-keys.json")
            check(status == 200, f"the keyset at {process.name} answered {status}")
            keysets.append(sorted((key.get("kid"), key.get("public_key"), key.get("status")) for key in keyset.get("keys", [])))
        check(keysets[0] == keysets[1], f"the public keyset differs: {old.name} {keysets[0]}, {new.name} {keysets[1]}")
        return len(samples)

    # -- 3. one old process out, one new one in

    def open_probes(self, process):
        """Requests begun at `process` (head and half the body written) that it must finish after
        its SIGTERM: two activations and a validation."""
        probes = []
        with self.load.lock:
            known = self.load.known[-1]
        bodies = [("activate", self.big[0], {"license_key": self.big[0]["key"], "instance_name": "Drain", "machine_hash": machine()}),
                  ("activate", self.big[1], {"license_key": self.big[1]["key"], "instance_name": "Drain", "machine_hash": machine()}),
                  ("validate", None, {"license_key": known[0], "instance_id": known[1]})]
        for action, license_, body in bodies:
            data = json.dumps(body).encode()
            connection = http.client.HTTPConnection("127.0.0.1", process.port, timeout=HTTP_TIMEOUT)
            try:
                connection.putrequest("POST", f"/{TENANT}/{PRODUCT}/{action}")
                for name, value in (("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                                    ("X-Keylight-SDK-Key", self.sdk_key), ("Connection", "close")):
                    connection.putheader(name, value)
                connection.endheaders(data[:len(data) // 2])
            except (OSError, http.client.HTTPException) as error:
                raise Failure(f"a drain probe could not be written to {process.name}: {error!r}")
            probes.append((action, license_, data, connection))
        return probes

    def finish_probes(self, process, probes):
        for action, license_, data, connection in probes:
            try:
                connection.send(data[len(data) // 2:])
                response = connection.getresponse()
                raw = response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as error:
                raise Failure(f"{process.name} dropped a {action} whose body was still arriving when it got SIGTERM: {error!r}")
            finally:
                connection.close()
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = raw[:300]
            check(status == 200 and isinstance(answer, dict) and (answer.get("instance_id") if action == "activate" else answer.get("valid") is True),
                  f"{process.name} answered {status} to a {action} begun before its SIGTERM: {answer}")
            if action == "activate":
                with self.load.lock:
                    self.load.activated.append((license_["id"], answer["instance_id"], process.name, "drain"))
                    self.load.known.append((license_["key"], answer["instance_id"]))

    def replace(self, old):
        load = self.load
        load.remove(old)
        in_flight = load.drained_of_unsent(old)
        # Requests begun but not finished at the signal: their heads are read (0.3 s), the rest of
        # their bodies arrives 0.2 s after SIGTERM, and each must still be answered.
        probes = self.open_probes(old)
        time.sleep(0.3)
        old.popen.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        time.sleep(0.2)
        self.finish_probes(old, probes)
        in_flight += len(probes)
        code = old.wait_exit(STOP_TIMEOUT)
        check(code is not None, f"{old.name} did not exit within {STOP_TIMEOUT} s of SIGTERM")
        check(code == 0, f"{old.name} exited {code} after SIGTERM (expected 0: a clean drain)")
        stopped_in = time.monotonic() - signalled
        new = Process(self, "new").start().wait_listening()
        load.add(new)
        step(f"{old.name} out of the rotation, SIGTERM with {in_flight} request(s) in flight ({len(probes)} with bodies still arriving), "
             f"all answered 200, exited 0 {stopped_in:.2f} s after the signal; "
             f"{new.name} listening on port {new.port} after {new.listening_after:.2f} s, in the rotation")
        return in_flight

    # -- the whole run

    def main(self):
        args = self.arguments
        self.pg.create()
        step(f"database {self.pg.name} created; binaries: old {self.binaries['old']}, new {self.binaries['new']}; folder {self.folder}")

        # 1. Two old processes; the first migrates.
        old1 = Process(self, "old").start().wait_listening()
        old2 = Process(self, "old").start().wait_listening()
        self.old_processes = [old1, old2]
        applied = self.migrations()
        check(applied == OLD_MIGRATIONS, f"after the old release started, keylight_migrations is {applied}, expected {OLD_MIGRATIONS}")
        step(f"old1 (port {old1.port}, {old1.listening_after:.2f} s) and old2 (port {old2.port}, {old2.listening_after:.2f} s) serve; database at {OLD_LAST}")
        self.seed(old1)
        step(f"tenant, product, key types (pro: {BIG_SEATS} seats, capped: {CAPPED_SEATS}), {len(self.big) + 1} licenses, "
             f"{sum(self.initial.values())} devices activated through the old API")

        # 2. The load.
        self.load = load = Load(self, args.rate, args.threads)
        with load.lock:
            load.known.extend(self.initial_instances)
        load.add(old1)
        load.add(old2)
        run_started = time.monotonic()
        load.start()
        step(f"load started: {args.threads} threads, {args.rate} requests/s in all, round-robin over old1 and old2")
        time.sleep(args.phase_seconds)

        # 3. The dry run, under load; nothing written.
        code, output = self.dry_run()
        lines = output.strip().splitlines()
        check(code == 0, f"new migrate --dry-run exited {code} (expected 0: every migration safe):\n{output}")
        check(lines and lines[0] == f"database is at {OLD_LAST} (16 applied); 8 pending:", f"the dry run's first line is {lines[:1]}:\n{output}")
        pending = {}
        for line in lines[1:-1]:
            match = re.fullmatch(r"  (\S+)\s+safe while older processes run(?:: (.+))?", line)
            check(match, f"a dry-run line is not a safe pending migration: {line!r}\n{output}")
            pending[match.group(1)] = match.group(2)
        check(list(pending) == NEW_MIGRATIONS, f"the dry run lists {list(pending)}, expected {NEW_MIGRATIONS}:\n{output}")
        missing = sorted(name for name in CAVEATED if not pending[name])
        check(not missing, f"the dry run names no caveat for {missing}:\n{output}")
        check("63ae57f" in pending["0022_team_access"] and "scoped" in pending["0022_team_access"],
              f"0022_team_access's caveat does not say what processes of 63ae57f do: {pending['0022_team_access']!r}")
        check(lines[-1].startswith("Every pending migration only adds"), f"the dry run's closing sentence is {lines[-1]!r}")
        check(self.migrations() == OLD_MIGRATIONS, "the dry run wrote to keylight_migrations")
        step(f"new migrate --dry-run under load: exit 0, 8 pending, all safe while older processes run, "
             f"{len(CAVEATED)} with caveats; nothing written")

        # The migration: a new process starts while the old ones serve.
        load.set_phase("migration")
        new1 = Process(self, "new").start()
        migration_started = time.monotonic()
        new1.wait_listening()
        migration_seconds = time.monotonic() - migration_started
        self.figures["migration_seconds"] = migration_seconds
        load.set_phase("mixed")
        load.add(new1)
        applied = self.migrations()
        check(applied == OLD_MIGRATIONS + NEW_MIGRATIONS, f"after new1 started, keylight_migrations is {applied}")
        step(f"new1 migrated 0017..0024 and listens on port {new1.port}: {migration_seconds:.2f} s from its start "
             f"(old1 and old2 served under load throughout); in the rotation")

        # 4. Old and new agree, on the migrated database.
        time.sleep(args.phase_seconds / 2)
        samples = self.compare_releases(old1, new1)
        step(f"old1 and new1 agree on {samples} validations (seeded, activated at an old process after the migration, at a new one), "
             f"the capped license and the keyset")

        # The old processes out, one at a time, each replaced by a new one.
        drained = 0
        drained += self.replace(old1)
        time.sleep(args.phase_seconds / 2)
        drained += self.replace(old2)
        load.set_phase("after")
        time.sleep(args.phase_seconds)
        load.stop()
        load_seconds = time.monotonic() - run_started
        self.figures["load_seconds"] = load_seconds
        self.figures["drained"] = drained
        step(f"load stopped after {load_seconds:.1f} s, {len(load.records)} requests")

        # 5. The checks.
        self.check_load()
        new_processes = [p for p in self.processes if p.release == "new" and p.popen.poll() is None and p.port]
        self.check_writes(new_processes)
        applied = self.migrations()
        check(applied == OLD_MIGRATIONS + NEW_MIGRATIONS and len(applied) == 24, f"keylight_migrations lists {applied}")
        step("keylight_migrations lists all 24 migrations")

        # 6. Downgrade.
        code, output, seconds = self.refusal("old")
        match = re.search(r"database has migration (\S+), which this build does not know; upgrade Keylight", output)
        check(code != 0 and match and match.group(1) in NEW_MIGRATIONS,
              f"the old binary on the migrated database exited {code} without naming one of this release's migrations:\n{output[-2000:]}")
        check("listening on" not in output, f"the old binary listened on the migrated database:\n{output[-2000:]}")
        step(f"old binary on the migrated database: exit {code} in {seconds:.2f} s, \"database has migration {match.group(1)}, which this build does not know\"")
        code, output = self.dry_run()
        check(code == 0 and "database is at 0024_release_delivery (24 applied); nothing to apply" in output,
              f"new migrate --dry-run on the migrated database exited {code}:\n{output}")
        step("new migrate --dry-run: exit 0, nothing to apply")
        self.pg.run(f"INSERT INTO keylight_migrations (name, applied_at) VALUES ('{FAKE_MIGRATION}', {int(time.time())})")
        try:
            code, output, seconds = self.refusal("new")
            check(code != 0 and f"database has migration {FAKE_MIGRATION}, which this build does not know" in output
                  and "Downgrades are refused" in output and "listening on" not in output,
                  f"the new binary on a database with {FAKE_MIGRATION} exited {code}:\n{output[-2000:]}")
            step(f"new binary with {FAKE_MIGRATION} recorded: exit {code} in {seconds:.2f} s, \"Downgrades are refused\"")
            code, output = self.dry_run()
            check(code == 1 and f"the database has {FAKE_MIGRATION}, which this build does not know" in output,
                  f"new migrate --dry-run with {FAKE_MIGRATION} recorded exited {code} (expected 1):\n{output}")
            step(f"new migrate --dry-run with {FAKE_MIGRATION} recorded: exit 1, refused")
        finally:
            self.pg.run(f"DELETE FROM keylight_migrations WHERE name = '{FAKE_MIGRATION}'")
        code, output = self.dry_run()
        check(code == 0 and "nothing to apply" in output, f"new migrate --dry-run after removing {FAKE_MIGRATION} exited {code}:\n{output}")

        # 7. The new processes stop cleanly; their buffered validation times reach the database.
        sweep_wall = self.figures["sweep_wall"]
        for process in new_processes:
            code = process.stop()
            check(code == 0, f"{process.name} exited {code} after SIGTERM (expected 0)")
        stale = self.pg.rows(f"SELECT id FROM instances WHERE id IN ({', '.join(repr(i) for i in self.figures['swept'])}) "
                             f"AND (last_validated_at IS NULL OR last_validated_at < {int(sweep_wall) - 1})")
        check(not stale, f"{len(stale)} instance(s) validated on new processes lack that validation time after their SIGTERM: {stale[:5]}")
        step(f"{', '.join(p.name for p in new_processes)} stopped (exit 0); every swept validation time is in the database")
        self.check_logs()
        self.summary()

    def check_logs(self):
        """The first process of each release migrated (16, then 8), the others joined (0); no
        serving process logged an error, before or after the migration."""
        served = [p for p in self.processes if p.listening_after is not None]
        for process in served:
            with open(process.stderr_path, errors="replace") as handle:
                text = handle.read()
            match = re.search(r"migrations_applied=(\d+)", text)
            expected = {"old1": 16, "new1": 8}.get(process.name, 0)
            check(match and int(match.group(1)) == expected,
                  f"{process.name} logged migrations_applied={match.group(1) if match else None}, expected {expected}")
            bad = [line for line in text.splitlines() if re.match(r"\S+ (error|critical) ", line)]
            check(not bad, f"{process.name} logged {len(bad)} error(s):\n" + "\n".join(line[:400] for line in bad[:10]))
            warnings = [line for line in text.splitlines() if re.match(r"\S+ warning ", line)]
            for line in warnings[:3]:
                print(f"  note: {process.name} warned: {line[:300]}", flush=True)
        step(f"logs: old1 applied 16 migrations and new1 8, the others none; no error logged by {', '.join(p.name for p in served)}")

    def load_problems(self):
        """None, or what went wrong under load: counts by kind and phase, the first few requests."""
        with self.load.lock:
            records = list(self.load.records)
        problems = [r for r in records if (r[4] is not None and r[4] >= 500) or r[5] is not None or r[8] is not None]
        if not problems:
            return None
        lines = []
        for phase, name, release, op, status, error, latency, wall, unexpected in problems[:15]:
            lines.append(f"  {phase:9} {name:5} {op:15} status {status} error {error} after {latency:.2f} s: {unexpected or ''}")
        servers = sorted({r[1] for r in problems})
        by_kind = collections.Counter(("5xx" if r[4] is not None and r[4] >= 500 else "connection error" if r[5] else "unexpected answer", r[0]) for r in problems)
        return f"{len(problems)} failed request(s) of {len(records)} under load ({dict(by_kind)}), at {servers}:\n" + "\n".join(lines)

    def check_load(self):
        problems = self.load_problems()
        check(problems is None, problems)
        step("no 5xx, no connection error, no unexpected answer in any phase")

    def check_writes(self, new_processes):
        load = self.load
        base = f"/tenants/{TENANT}/products/{PRODUCT}/licenses"
        reader = new_processes[0]
        recorded = collections.defaultdict(set)
        for license_id, instance, _, _ in load.activated:
            recorded[license_id].add(instance)
        duplicates = len(load.activated) - sum(len(v) for v in recorded.values())
        check(duplicates == 0, f"{duplicates} activation(s) answered an instance id already answered to another device")
        stored_times = {}
        for license_ in self.big + [self.capped]:
            detail = admin(reader, "GET", f"{base}/{license_['id']}", expect=200)
            active = {i["instance_id"] for i in detail.get("instances", []) if i.get("active")}
            for i in detail.get("instances", []):
                stored_times[i["instance_id"]] = i.get("last_validated_at")
            lost = recorded[license_["id"]] - active
            check(not lost, f"license {license_['id']}: {len(lost)} instance(s) answered 2xx at activation are not active: {sorted(lost)[:5]}")
            expected = self.initial[license_["id"]] + len(recorded[license_["id"]])
            check(detail.get("active_instances") == expected == len(active),
                  f"license {license_['id']}: active_instances {detail.get('active_instances')}, {len(active)} listed, expected "
                  f"{self.initial[license_['id']]} seeded + {len(recorded[license_['id']])} activated = {expected}")
        capped_total = self.initial[self.capped["id"]] + len(recorded[self.capped["id"]])
        capped_attempts = sum(1 for r in load.records if r[3] == "activate-capped")
        check(capped_total <= CAPPED_SEATS, f"the capped license holds {capped_total} instances, more than its {CAPPED_SEATS} seats")
        check(capped_total == CAPPED_SEATS or capped_attempts < CAPPED_SEATS, f"the capped license holds {capped_total} instances after {capped_attempts} attempts")
        # Validations answered by the old processes (all gone now, after SIGTERM) are in the database.
        late = [(inst, at, stored_times.get(inst)) for inst, at in load.validated_at_old.items()
                if stored_times.get(inst) is None or stored_times[inst] < int(at) - 1]
        check(not late, f"{len(late)} validation time(s) answered by old processes never reached the database (lost on SIGTERM?): {late[:5]}")
        step(f"no lost write: {len(load.activated)} activations answered 2xx all active on their licenses (each license = seeded + recorded; "
             f"capped: {capped_total}/{CAPPED_SEATS} after {capped_attempts} attempts); {len(load.validated_at_old)} validation times from old processes stored")
        # Every instance validates on a new process.
        instances = list(self.initial_instances) + [(next(l["key"] for l in self.big + [self.capped] if l["id"] == lic), inst)
                                                      for lic, inst, _, _ in load.activated]
        self.figures["sweep_wall"] = time.time()
        failures = []
        lock = threading.Lock()

        def sweep(part, process):
            for key, instance in part:
                try:
                    status, answer = sdk(process, "validate", {"license_key": key, "instance_id": instance}, self.sdk_key)
                except (OSError, http.client.HTTPException) as error:
                    status, answer = None, repr(error)
                if status != 200 or not (isinstance(answer, dict) and answer.get("valid") is True):
                    with lock:
                        failures.append((process.name, instance, status, str(answer)[:200]))

        workers = [threading.Thread(target=sweep, args=(instances[i::4], new_processes[i % len(new_processes)])) for i in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(300)
            check(not worker.is_alive(), "the validation sweep did not finish within 300 s")
        check(not failures, f"{len(failures)} recorded instance(s) do not validate on new processes: {failures[:5]}")
        self.figures["swept"] = [inst for _, inst in instances]
        step(f"all {len(instances)} instances (seeded + activated under load) validate on {', '.join(p.name for p in new_processes)}")

    def summary(self):
        load = self.load
        print("\nsummary", flush=True)
        print(f"  {'phase':10} {'requests':>8} {'per s':>6} {'activate':>8} {'capped':>6} {'validate':>8} {'5xx':>4} {'conn err':>8} "
              f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}  statuses", flush=True)
        for phase in ("before", "migration", "mixed", "after"):
            rows = [r for r in load.records if r[0] == phase]
            if not rows:
                print(f"  {phase:10} {0:>8}", flush=True)
                continue
            walls = [r[7] for r in rows]
            span = max(max(walls) - min(walls), 0.001)
            latencies = sorted(r[6] for r in rows)
            statuses = collections.Counter(str(r[4]) if r[4] is not None else "none" for r in rows)
            ops = collections.Counter(r[3] for r in rows)
            print(f"  {phase:10} {len(rows):>8} {len(rows) / span:>6.1f} {ops['activate']:>8} {ops['activate-capped']:>6} {ops['validate']:>8} "
                  f"{sum(1 for r in rows if r[4] is not None and r[4] >= 500):>4} {sum(1 for r in rows if r[5]):>8} "
                  f"{latencies[len(latencies) // 2] * 1000:>7.1f} {latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000:>7.1f} "
                  f"{latencies[-1] * 1000:>7.1f}  {dict(sorted(statuses.items()))}", flush=True)
        during = collections.defaultdict(list)
        for r in load.records:
            if r[0] == "migration":
                during[r[1]].append(r[6])
        print("  answered during the migration: " + (", ".join(f"{name} {len(values)} (max {max(values) * 1000:.0f} ms)" for name, values in sorted(during.items())) or "none"), flush=True)
        by_process = collections.Counter(r[1] for r in load.records)
        print(f"  requests by process: {dict(sorted(by_process.items()))}", flush=True)
        print(f"  activations answered 2xx: {len(load.activated)}; requests in flight at an old process's SIGTERM (drained): {self.figures['drained']}", flush=True)
        print(f"  migration 0017..0024 under load (new1's start to listening): {self.figures['migration_seconds']:.2f} s", flush=True)
        starts = ", ".join(f"{p.name} {p.listening_after:.2f} s" for p in self.processes if p.listening_after is not None)
        print(f"  start to listening: {starts}", flush=True)
        print(f"  load {self.figures['load_seconds']:.1f} s; whole run {time.monotonic() - T0:.1f} s", flush=True)

    def cleanup(self, failed):
        for process in self.processes:
            if process.popen and process.popen.poll() is None:
                if failed:
                    process.kill()
                else:
                    process.stop()
        try:
            self.pg.drop()
        except Failure as error:
            print(f"warning: {error}", flush=True)
        if failed:
            print(f"process logs kept in {self.folder}", flush=True)
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the previous release's keylight binary (63ae57f)")
    parser.add_argument("--new", required=True, help="this release's keylight binary")
    parser.add_argument("--postgres-url", default=os.environ.get("KEYLIGHT_TEST_POSTGRES_URL"),
                        help="a PostgreSQL server (its database part is ignored); default KEYLIGHT_TEST_POSTGRES_URL")
    parser.add_argument("--rate", type=float, default=60, help="requests per second in all (default 60)")
    parser.add_argument("--threads", type=int, default=6, help="load threads (default 6)")
    parser.add_argument("--phase-seconds", type=float, default=4, help="seconds of load before the migration and after the last old process (default 4)")
    parser.add_argument("--timeout", type=int, default=400, help="the whole run's bound in seconds (default 400)")
    arguments = parser.parse_args()
    if not arguments.postgres_url:
        parser.error("--postgres-url (or KEYLIGHT_TEST_POSTGRES_URL) is required")

    def out_of_time(*_):
        raise Failure(f"the run took more than {arguments.timeout} s")

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(arguments.timeout)
    run = None
    failed = True
    try:
        run = Run(arguments)
        run.main()
        failed = False
    except Failure as error:
        print(f"\nFAIL: {error}", flush=True)
    except BaseException as error:   # a bug here or ^C: still clean up, and say what happened
        import traceback
        traceback.print_exc()
        print(f"\nFAIL: {error!r}", flush=True)
    finally:
        signal.alarm(0)
        if run is not None:
            if run.load is not None:
                run.load.stop_event.set()
            if failed:
                problems = run.load_problems() if run.load is not None else None
                if problems:
                    print(f"\nunder load until then: {problems}", flush=True)
                for process in run.processes:
                    print(f"\n--- {process.name} ({process.binary}) stderr, last lines ({process.stderr_path}):\n{process.tail()}", flush=True)
            run.cleanup(failed)
    if failed:
        sys.exit(1)
    print("PASS: rolling upgrade", flush=True)


if __name__ == "__main__":
    main()
