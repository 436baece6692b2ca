"""Release delivery from outside (issue 51): two `keylight serve` processes on one PostgreSQL
database, sharing one master key and one `--artifacts-dir`, driven only over HTTP and through the
`keylight release publish` command, with Python's own zip, XML, date and Ed25519 code checking
what they answer.

1. Admin API: a tenant, a product, a key type with a one-day update window, a license; the license
   is activated (SDK API) and its lease kept.
2. A real zip (App.app/Contents/Info.plist inside) published with `keylight release publish` on
   server A (exit status 0, its printed id/length/sha256/state); a second build dated two days
   ahead (past the license's update window) uploaded and published with urllib.
3. Server B's appcast with the lease: Sparkle's RSS, namespace, versions, date, enclosure and
   signature of the covered build; the uncovered one an informational item; the notes.
4. The enclosure downloaded from B: the same bytes, a valid EdDSA signature under the product's
   sparkle_public_key, a 206 range, a 304 for the ETag.
5. No lease and no token: 401 LEASE_REQUIRED; B's token at A: still served; updates/latest.
6. A CI token with only releases:publish publishes a third build with the command, and is refused
   a license (403).
7. A newer build settles the feed (the older one leaves it); a yank of it is seen on B within its 5 s cache; an upload cut off half-way leaves nothing under
   `<artifacts-dir>/incoming/` and no artifact.

Run by KeylightCLITests/ReleaseFlowTests; by hand:

    KEYLIGHT_URL_A=http://127.0.0.1:PORT_A KEYLIGHT_URL_B=http://127.0.0.1:PORT_B KEYLIGHT_ADMIN_TOKEN=… \
    KEYLIGHT_BIN=.build/debug/keylight KEYLIGHT_ARTIFACTS_DIR=… [KEYLIGHT_SERVER_A_PID=…] python3 Tests/Releases/release_flow.py

KEYLIGHT_ARTIFACTS_DIR is the `--artifacts-dir` both servers were started with; with
KEYLIGHT_SERVER_A_PID (server A's process id) on Linux, the cut-off upload's partial file is also
watched in server A's open files (/proc/<pid>/fd), since it may have no name until it is whole.

One `ok: …` line per check; the first failure prints `FAIL: …` and exits 1.
"""
import base64
import email.utils
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ElementTree
import zipfile
from datetime import datetime, timezone

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

missing = [name for name in ("KEYLIGHT_URL_A", "KEYLIGHT_URL_B", "KEYLIGHT_ADMIN_TOKEN", "KEYLIGHT_BIN", "KEYLIGHT_ARTIFACTS_DIR") if not os.environ.get(name)]
if missing:
    print(f"FAIL: set {', '.join(missing)} (see this script's docstring)", flush=True)
    sys.exit(2)
A = os.environ["KEYLIGHT_URL_A"].rstrip("/")
B = os.environ["KEYLIGHT_URL_B"].rstrip("/")
TOKEN = os.environ["KEYLIGHT_ADMIN_TOKEN"]
BINARY = os.environ["KEYLIGHT_BIN"]
ARTIFACTS = os.environ["KEYLIGHT_ARTIFACTS_DIR"]
SPARKLE = "http://www.andymatuschak.org/xml-namespaces/sparkle"
NS = "{" + SPARKLE + "}"
DAY = 86_400
TIMEOUT = 30


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def ok(message):
    print(f"ok: {message}", flush=True)


def check(condition, message):
    if not condition:
        fail(message)


def request(method, url, body=None, headers=None, raw=None, token=TOKEN):
    """(status, headers, body bytes) of one request; HTTP errors are answers, not exceptions."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()
    except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
        fail(f"{method} {url}: no answer ({error!r}; requests wait {TIMEOUT} s)")


def api(method, base, path, body=None, token=TOKEN, expect=None):
    """A JSON call of the admin or SDK API; `expect` fails the run on another status."""
    status, _, data = request(method, base + path, body=body, token=token)
    try:
        parsed = json.loads(data) if data else {}
    except ValueError:
        parsed = {"raw": data.decode("utf-8", "replace")}
    if expect is not None and status != expect:
        fail(f"{method} {path} answered {status}, expected {expect}: {parsed}")
    return status, parsed


def error_code(data):
    try:
        return json.loads(data).get("code")
    except (ValueError, AttributeError):
        return None


def make_zip(short_version, build, filler):
    """A real zip of an app bundle, as Sparkle installs it."""
    plist = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        '<plist version="1.0"><dict>'
        "<key>CFBundleIdentifier</key><string>com.example.app</string>"
        f"<key>CFBundleVersion</key><string>{build}</string>"
        f"<key>CFBundleShortVersionString</key><string>{short_version}</string>"
        "</dict></plist>\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("App.app/Contents/Info.plist", plist)
        # Incompressible, so the file is large enough for ranges and a cut-off upload.
        archive.writestr("App.app/Contents/MacOS/App", filler, compress_type=zipfile.ZIP_STORED)
    return buffer.getvalue()


def publish_with_command(token, workdir, data, version, short_version, released_at, notes):
    """`keylight release publish` on server A; answers its printed `name: value` lines."""
    path = os.path.join(workdir, f"App-{version}.zip")
    with open(path, "wb") as handle:
        handle.write(data)
    notes_path = os.path.join(workdir, f"notes-{version}.md")
    with open(notes_path, "w", encoding="utf-8") as handle:
        handle.write(notes)
    env = dict(os.environ, KEYLIGHT_ADMIN_TOKEN=token)
    command = [BINARY, "release", "publish", "--server", A, "--tenant", TENANT, "--product", PRODUCT, "--file", path,
               "--version", version, "--short-version", short_version, "--notes", notes_path, "--released-at", str(released_at)]
    try:
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail(f"keylight release publish (version {version}) did not finish within 120 s")
    if run.returncode != 0:
        fail(f"keylight release publish (version {version}) exited {run.returncode}:\nstdout: {run.stdout}\nstderr: {run.stderr}")
    lines = {}
    for line in run.stdout.splitlines():
        name, _, value = line.partition(": ")
        lines[name] = value
    expected = {"version": version, "short_version": short_version, "channel": "stable", "released_at": str(released_at),
                "length": str(len(data)), "sha256": hashlib.sha256(data).hexdigest(), "signed_by": "server", "state": "published"}
    for name, value in expected.items():
        check(lines.get(name) == value, f"release publish printed {name}: {lines.get(name)!r}, expected {value!r}; stdout:\n{run.stdout}")
    check(lines.get("id", "").startswith("rel_"), f"release publish printed no release id: {run.stdout}")
    check(lines.get("file_name", "").endswith(".zip"), f"release publish printed file_name {lines.get('file_name')!r}")
    return lines


def appcast(base, lease_header, expect=200):
    status, headers, data = request("GET", f"{base}/{TENANT}/{PRODUCT}/appcast.xml", headers={"X-Keylight-Lease": lease_header}, token=None)
    check(status == expect, f"appcast at {base} answered {status}, expected {expect}: {data[:300]!r}")
    return headers, data


def items_by_version(data):
    root = ElementTree.fromstring(data)
    return root, {item.findtext(NS + "version"): item for item in root.iter("item")}


def artifact_files():
    """Files under --artifacts-dir, outside incoming/ (the stored artifacts)."""
    found = []
    for folder, _, files in os.walk(ARTIFACTS):
        if os.path.relpath(folder, ARTIFACTS).split(os.sep)[0] == "incoming":
            continue
        found += [os.path.join(folder, name) for name in files]
    return sorted(found)


def incoming_files():
    folder = os.path.join(ARTIFACTS, "incoming")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def files_held_open():
    """Paths under incoming/ that server A holds open, read from /proc/<pid>/fd (Linux, with
    KEYLIGHT_SERVER_A_PID); None where that cannot be seen. An upload's file there may be unnamed
    (O_TMPFILE, shown as `incoming/#inode (deleted)`): it shows under incoming/ only once whole."""
    pid = os.environ.get("KEYLIGHT_SERVER_A_PID")
    folder = f"/proc/{pid}/fd"
    if not pid or not os.path.isdir(folder):
        return None
    prefix = os.path.join(os.path.realpath(ARTIFACTS), "incoming") + os.sep
    held = []
    try:
        descriptors = os.listdir(folder)
    except OSError:
        return None
    for descriptor in descriptors:
        try:
            target = os.readlink(os.path.join(folder, descriptor))
        except OSError:
            continue
        if target.startswith(prefix):
            held.append(target)
    return held


def poll(condition, seconds, interval=0.25):
    """Whether `condition()` held within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


suffix = uuid.uuid4().hex[:8]
TENANT = f"rel{suffix}"
PRODUCT = "mac-app"
admin = f"/admin/v1/tenants/{TENANT}/products/{PRODUCT}"
now = int(time.time())
initial_files = artifact_files()

# 1. Tenant, product, key type with a one-day update window, license, activation.
api("POST", A, "/admin/v1/tenants", {"id": TENANT, "name": "Release Flow"}, expect=201)
_, product = api("POST", A, f"/admin/v1/tenants/{TENANT}/products",
                 {"id": PRODUCT, "name": "Mac App", "key_prefix": "RELF", "trial_duration_days": 14, "free_tier_enabled": False}, expect=201)
sdk_key = product.get("sdk_key")
check(isinstance(sdk_key, str) and sdk_key, f"product create answered no sdk_key: {product}")
api("POST", A, f"{admin}/key-types", {"id": "pro", "display_name": "Pro", "activation_limit": 3, "duration_days": None,
                                       "updates_days": 1, "fallback_access": False, "entitlements": []}, expect=201)
_, license_ = api("POST", A, f"{admin}/licenses", {"key_type_id": "pro"}, expect=201)
license_key = license_.get("license_key")
updates_until = license_.get("updates_until")
check(isinstance(license_key, str) and license_key, f"license create answered no license_key: {license_}")
check(isinstance(updates_until, int) and now + DAY - 120 <= updates_until <= now + DAY + 120,
      f"the license's updates_until is {updates_until!r}, expected about now + 1 day ({now + DAY})")
status, activated = request("POST", f"{A}/{TENANT}/{PRODUCT}/activate", body={"license_key": license_key, "instance_name": "Mac", "machine_hash": "release-flow-mac"},
                            headers={"X-Keylight-SDK-Key": sdk_key}, token=None)[0::2]
check(status == 200, f"activate answered {status}: {activated[:300]!r}")
lease = json.loads(activated).get("lease")
check(isinstance(lease, dict), f"activate answered no lease: {activated[:300]!r}")
lease_header = base64.urlsafe_b64encode(json.dumps(lease, separators=(",", ":")).encode()).decode().rstrip("=")
ok(f"tenant {TENANT}, product, key type (updates_days 1) and license made on A; activated, lease kept ({len(lease_header)} chars as a header)")

# 2. The first build with the command (covered), the second over the admin API (past the window).
workdir = tempfile.mkdtemp(prefix="release-flow-")
first_zip = make_zip("1.0.0", "100", os.urandom(64 * 1024))
check(zipfile.ZipFile(io.BytesIO(first_zip)).read("App.app/Contents/Info.plist").startswith(b"<?xml"), "the zip made here does not read back")
first_released = now - 3_600
notes = "## What's new\n\n- Faster **sync**\n- <script>alert(1)</script> stays text\n"
printed = publish_with_command(TOKEN, workdir, first_zip, "100", "1.0.0", first_released, notes)
first_id = printed["id"]
ok(f"keylight release publish exited 0 and printed id {first_id}, length {len(first_zip)}, the zip's sha256, signed_by server, state published")

second_zip = make_zip("2.0.0", "200", os.urandom(48 * 1024))
second_released = now + 2 * DAY
_, second = api("POST", A, f"{admin}/releases", {"version": "200", "short_version": "2.0.0", "released_at": second_released,
                                                 "notes_markdown": "Paid upgrade."}, expect=201)
check(second.get("state") == "draft", f"a new release is {second.get('state')!r}, expected draft")
second_id = second["id"]
status, _, data = request("PUT", f"{A}{admin}/releases/{second_id}/artifacts?platform=darwin&arch=universal", raw=second_zip,
                          headers={"Content-Type": "application/octet-stream"})
check(status == 201, f"uploading the second build answered {status}: {data[:300]!r}")
uploaded = json.loads(data)
check(uploaded.get("length") == len(second_zip) and uploaded.get("sha256") == hashlib.sha256(second_zip).hexdigest(),
      f"the upload answered length {uploaded.get('length')} sha256 {uploaded.get('sha256')}, not the file's")
_, published = api("POST", A, f"{admin}/releases/{second_id}/publish", expect=200)
check(published.get("state") == "published", f"publishing answered state {published.get('state')!r}")
ok(f"second build (200, released_at now + 2 days, past updates_until) uploaded with urllib ({len(second_zip)} bytes) and published")

# 3. Server B's appcast, as this license sees it.
found = {}


def both_listed():
    found["headers"], found["data"] = appcast(B, lease_header)
    found["root"], found["items"] = items_by_version(found["data"])
    return "100" in found["items"] and "200" in found["items"]


check(poll(both_listed, 10), f"B's appcast did not list builds 100 and 200 within 10 s: {found.get('data', b'')[:1500]!r}")
feed_headers, feed, root, items = found["headers"], found["data"], found["root"], found["items"]
check(root.tag == "rss" and root.get("version") == "2.0", f"the appcast's root is <{root.tag} version={root.get('version')!r}>, expected <rss version=\"2.0\">")
check(f'xmlns:sparkle="{SPARKLE}"'.encode() in feed, f"the appcast does not declare the sparkle namespace {SPARKLE}")
channel = root.find("channel")
check(channel is not None and len(channel.findall("item")) == 2, f"expected one channel with 2 items: {feed[:1500]!r}")
check(feed_headers.get("ETag") and feed_headers.get("Cache-Control"), f"the appcast lacks ETag or Cache-Control: {dict(feed_headers)}")
covered = items["100"]
check(covered.findtext(NS + "shortVersionString") == "1.0.0", f"sparkle:shortVersionString is {covered.findtext(NS + 'shortVersionString')!r}")
pub_date = covered.findtext("pubDate")
try:
    parsed_date = email.utils.parsedate_to_datetime(pub_date)
except (TypeError, ValueError):
    fail(f"pubDate {pub_date!r} is not an RFC 822 date")
check(parsed_date == datetime.fromtimestamp(first_released, timezone.utc), f"pubDate {pub_date!r} is not released_at {first_released}")
enclosure = covered.find("enclosure")
check(enclosure is not None, "the covered build has no enclosure")
download_url = enclosure.get("url") or ""
check(download_url.startswith(B + "/") and "token=" in download_url, f"the enclosure url {download_url!r} is not B's, with a token")
check(enclosure.get("length") == str(len(first_zip)), f"enclosure length {enclosure.get('length')!r}, the file has {len(first_zip)} bytes")
check(enclosure.get("type") == "application/octet-stream", f"enclosure type {enclosure.get('type')!r}")
signature = enclosure.get(NS + "edSignature")
check(signature, "the enclosure has no sparkle:edSignature")
description = covered.findtext("description") or ""
check("Faster" in description and "<strong>sync</strong>" in description, f"the notes are not in the description as HTML: {description!r}")
check("<script>" not in description, f"the notes' <script> reached the description unescaped: {description!r}")
ok("B's appcast: <rss version=\"2.0\">, Sparkle's namespace, build 100 (1.0.0) with pubDate = released_at, enclosure url/length/type/edSignature, notes as sanitized HTML")
upgrade = items["200"]
check(upgrade.find("enclosure") is None, "the build past the update window has an enclosure")
check((upgrade.findtext("link") or "").strip(), "the informational item has no link")
check(upgrade.findtext(NS + "minimumAutoupdateVersion") == "100",
      f"the informational item's sparkle:minimumAutoupdateVersion is {upgrade.findtext(NS + 'minimumAutoupdateVersion')!r}, expected 100")
ok(f"build 200 (past updates_until) is informational: no enclosure, link {upgrade.findtext('link')}, minimumAutoupdateVersion 100")

# 4. The download from B: bytes, signature, range, ETag.
status, headers, data = request("GET", download_url, headers={"X-Keylight-Lease": lease_header}, token=None)
check(status == 200, f"the download from B answered {status}: {data[:300]!r}")
check(data == first_zip, f"the download is {len(data)} bytes and not the zip published ({len(first_zip)} bytes)")
_, product_read = api("GET", B, admin, expect=200)
public_key = product_read.get("sparkle_public_key")
check(isinstance(public_key, str) and public_key, f"GET {admin} answered no sparkle_public_key")
try:
    Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key)).verify(base64.b64decode(signature), data)
except (InvalidSignature, ValueError) as error:
    fail(f"sparkle:edSignature does not verify under sparkle_public_key over the downloaded bytes: {error!r}")
etag = headers.get("ETag")
check(etag == f'"{hashlib.sha256(first_zip).hexdigest()}"', f"the download's ETag is {etag!r}, expected the quoted SHA-256")
ok(f"downloaded from B with token and lease: the zip's {len(data)} bytes; edSignature verifies (pyca Ed25519) under sparkle_public_key")
status, headers, data = request("GET", download_url, headers={"X-Keylight-Lease": lease_header, "Range": "bytes=10-19"}, token=None)
check(status == 206 and data == first_zip[10:20], f"Range bytes=10-19 answered {status} with {data!r}, expected 206 with {first_zip[10:20]!r}")
check(headers.get("Content-Range") == f"bytes 10-19/{len(first_zip)}", f"Content-Range is {headers.get('Content-Range')!r}")
status, _, data = request("GET", download_url, headers={"X-Keylight-Lease": lease_header, "If-None-Match": etag}, token=None)
check(status == 304 and data == b"", f"If-None-Match with the ETag answered {status} ({len(data)} bytes), expected 304")
ok("Range bytes=10-19 answered 206 with those bytes; If-None-Match with the ETag answered 304")

# 5. Without lease and token; B's token at A; the JSON update check.
bare_url = download_url.split("?", 1)[0]
status, _, data = request("GET", bare_url, token=None)
check(status == 401 and error_code(data) == "LEASE_REQUIRED", f"the download without lease or token answered {status} {data[:200]!r}, expected 401 LEASE_REQUIRED")
at_a = A + download_url[len(B):]
status, _, data = request("GET", at_a, token=None)
check(status == 200 and data == first_zip, f"B's link at A, with its token and no lease, answered {status} ({len(data)} bytes)")
ok("no lease and no token: 401 LEASE_REQUIRED; the link B signed is served by A on its token alone (shared master key)")
latest = f"{B}/{TENANT}/{PRODUCT}/updates/latest?current=0.9.0&target=darwin&arch=aarch64"
status, headers, data = request("GET", latest, headers={"X-Keylight-Lease": lease_header}, token=None)
check(status == 200, f"updates/latest?current=0.9.0 answered {status}: {data[:300]!r}")
update = json.loads(data)
check(update.get("version") == "1.0.0", f"updates/latest answered version {update.get('version')!r}, expected 1.0.0 (2.0.0 is past the window)")
pub = update.get("pub_date") or ""
check(re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", pub), f"pub_date {pub!r} is not RFC 3339")
rfc3339 = datetime.fromisoformat(pub.replace("Z", "+00:00"))
check(rfc3339 == datetime.fromtimestamp(first_released, timezone.utc), f"pub_date {update.get('pub_date')!r} is not released_at {first_released}")
check(update.get("signature") == signature and "token=" in (update.get("url") or ""), f"updates/latest's signature or url differ from the appcast's: {update}")
status, _, data = request("GET", latest.replace("current=0.9.0", "current=1.0.0"), headers={"X-Keylight-Lease": lease_header}, token=None)
check(status == 204 and data == b"", f"updates/latest?current=1.0.0 answered {status}, expected 204")
ok(f"updates/latest (darwin/aarch64): current=0.9.0 answers 200 with version 1.0.0, pub_date {update['pub_date']}; current=1.0.0 answers 204")

# 6. A CI token that can publish and do nothing else.
_, created = api("POST", A, "/admin/v1/tokens", {"name": "ci", "tenant_id": TENANT, "product_id": PRODUCT, "permissions": ["releases:publish"]}, expect=201)
ci_token = created.get("token")
check(isinstance(ci_token, str) and ci_token, f"token create answered no token: {created}")
third_zip = make_zip("1.5.0", "150", os.urandom(40 * 1024))
third_released = now - 60
third_id = publish_with_command(ci_token, workdir, third_zip, "150", "1.5.0", third_released, "Covered fix release.")["id"]
status, refused = api("POST", A, f"{admin}/licenses", {"key_type_id": "pro"}, token=ci_token)
check(status == 403, f"the CI token made a license: {status} {refused}")
ok(f"a releases:publish token published build 150 with the command ({third_id}) and was refused a license (403 {refused.get('code')})")

# 7. Build 150 now settles the feed: Sparkle would never pick 100 over it, so 100 leaves the
# device's appcast. Yanking 150 brings 100 back within B's cache lifetime, and 150's link stops.
def settled():
    _, data = appcast(B, lease_header)
    found["root"], found["items"] = items_by_version(data)
    found["data"] = data
    return "150" in found["items"] and "100" not in found["items"]


check(poll(settled, 10), f"B's appcast did not settle on 150 (without 100) within 10 s: {found['data'][:1500]!r}")
third_url = found["items"]["150"].find("enclosure").get("url")
status, _, data = request("GET", third_url, headers={"X-Keylight-Lease": lease_header}, token=None)
check(status == 200 and len(data) == len(third_zip), f"build 150's link answered {status} ({len(data)} bytes)")
_, yanked = api("POST", A, f"{admin}/releases/{third_id}/yank", expect=200)
check(yanked.get("state") == "yanked", f"yank answered state {yanked.get('state')!r}")
yank_time = time.monotonic()


def third_gone():
    _, data = appcast(B, lease_header)
    found["root"], found["items"] = items_by_version(data)
    found["data"] = data
    return "150" not in found["items"] and "100" in found["items"]


check(poll(third_gone, 10), f"10 s after the yank, B's appcast still lists build 150 (or lacks 100): {found['data'][:1500]!r}")
took = time.monotonic() - yank_time
later = found["items"]
check(later["100"].find("enclosure") is not None and later.get("200") is not None and later["200"].find("enclosure") is None,
      f"after the yank, expected 100 ordinary and 200 informational: {found['data'][:1500]!r}")
check(later["200"].findtext(NS + "minimumAutoupdateVersion") == "100",
      f"minimumAutoupdateVersion is {later['200'].findtext(NS + 'minimumAutoupdateVersion')!r} after the yank, expected 100")
status, _, data = request("GET", third_url, headers={"X-Keylight-Lease": lease_header}, token=None)
check(status == 404, f"the yanked build's link still answers {status}, expected 404")
ok(f"build 150 settled B's appcast (100 left it); yanked, it left after {took:.1f} s (100 ordinary again, 200 informational from 100); its link answers 404")

_, draft = api("POST", A, f"{admin}/releases", {"version": "300", "short_version": "3.0.0", "released_at": now}, expect=201)
draft_id = draft["id"]
stored_before = artifact_files()
uploaded_hashes = [hashlib.sha256(data).hexdigest() for data in (first_zip, second_zip, third_zip)]
expected_paths = [os.path.join(ARTIFACTS, digest[:2], digest) for digest in uploaded_hashes]
check(len(stored_before) == len(initial_files) + 3 and all(path in stored_before for path in expected_paths),
      f"expected the 3 uploaded files under {ARTIFACTS} by SHA-256 ({expected_paths}), found {stored_before}")
for path in expected_paths:
    check(os.stat(path).st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700,
          f"{path} is {oct(os.stat(path).st_mode & 0o777)} in a {oct(os.stat(os.path.dirname(path)).st_mode & 0o777)} folder, expected 0600 in 0700")
ok(f"the three builds are stored once each (0600 files, 0700 folders) under --artifacts-dir, named by SHA-256 ({', '.join(digest[:12] for digest in uploaded_hashes)})")
check(incoming_files() == [], f"{ARTIFACTS}/incoming is not empty before the cut-off upload: {incoming_files()}")
partial = make_zip("3.0.0", "300", os.urandom(100_000))[:50_000]
port = urllib.parse.urlsplit(A).port
head = (f"PUT {admin}/releases/{draft_id}/artifacts?platform=darwin&arch=universal HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/octet-stream\r\n"
        "Content-Length: 100000\r\n\r\n").encode()
with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as connection:
    connection.sendall(head + partial)
    # The server is reading the body (no answer yet), so the close below cuts a running upload
    # rather than one refused at its head.
    connection.settimeout(1.5)
    try:
        early = connection.recv(4096)
    except socket.timeout:
        early = None
    if early is not None:
        fail(f"the server answered a PUT with half its body before the rest came: {early[:300]!r}")
    held = files_held_open()
    if held is None:
        ok("a PUT announcing 100000 bytes, 50000 sent: the server is still reading it 1.5 s later")
    else:
        check(len(held) == 1, f"while the upload runs, server A holds {held} open under {ARTIFACTS}/incoming, expected its one partial file")
        ok(f"a PUT announcing 100000 bytes, 50000 sent: still read 1.5 s later, into {held[0]} (server A's open file under incoming/)")
if files_held_open() is not None:
    check(poll(lambda: files_held_open() == [], 10, 0.05), f"10 s after the connection closed, server A still holds {files_held_open()} open")


def nothing_left():
    _, release = api("GET", A, f"{admin}/releases/{draft_id}", expect=200)
    found["release"] = release
    return incoming_files() == [] and release.get("artifacts") == [] and artifact_files() == stored_before


# The partial file may be an unnamed one (O_TMPFILE) that never shows under incoming/, so the
# state is watched for a while rather than waited for once.
check(poll(nothing_left, 3), f"after the cut-off upload: incoming/ {incoming_files()}, release artifacts {found['release'].get('artifacts')}, "
                             f"stored files before {stored_before}, now {artifact_files()}")
deadline = time.monotonic() + 2
while time.monotonic() < deadline:
    check(nothing_left(), f"after the cut-off upload: incoming/ {incoming_files()}, release artifacts {found['release'].get('artifacts')}, "
                          f"stored files before {stored_before}, now {artifact_files()}")
    time.sleep(0.2)
check(found["release"].get("state") == "draft", f"the cut-off upload left the release {found['release'].get('state')}")
status, refused = api("POST", A, f"{admin}/releases/{draft_id}/publish")
check(status == 409 and refused.get("code") == "NO_ARTIFACT", f"publishing the draft after the cut-off upload answered {status} {refused}")
ok("the connection closed half-way: nothing under incoming/, no artifact on the release (publish 409 NO_ARTIFACT), the stored files unchanged")
whole = make_zip("3.0.0", "300", os.urandom(100_000))
status, _, data = request("PUT", f"{A}{admin}/releases/{draft_id}/artifacts?platform=darwin&arch=universal", raw=whole,
                          headers={"Content-Type": "application/octet-stream"})
check(status == 201 and json.loads(data).get("length") == len(whole), f"uploading the whole file after the cut-off one answered {status}: {data[:300]!r}")
check(len(artifact_files()) == len(stored_before) + 1 and incoming_files() == [], f"after the whole upload: stored {artifact_files()}, incoming/ {incoming_files()}")
ok("the whole file uploaded again afterwards: 201, one more stored file, incoming/ empty")

shutil.rmtree(workdir, ignore_errors=True)
print("ok: release delivery holds across two processes", flush=True)
