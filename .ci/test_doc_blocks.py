#!/usr/bin/env python3
"""Tests of .ci/doc-blocks on small Markdown files in a temporary directory, with a fake keylight
(a few lines of Python that answer /readyz) on a free port: no build needed.

Run: python3 .ci/test_doc_blocks.py
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import shutil
import socket
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no .ci/__pycache__ from loading the extensionless script
_loader = importlib.machinery.SourceFileLoader("doc_blocks", os.path.join(HERE, "doc-blocks"))
_spec = importlib.util.spec_from_loader(_loader.name, _loader)
db = importlib.util.module_from_spec(_spec)
_loader.exec_module(db)

FAKE_KEYLIGHT = """\
#!/usr/bin/env python3
import http.server, os, sys
args = sys.argv[1:]
if args[:1] == ["serve"]:
    port = int(args[args.index("--port") + 1]) if "--port" in args else 8080
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            found = self.path in ("/readyz", "/healthz")
            self.send_response(200 if found else 404)
            self.end_headers()
            self.wfile.write(b'{"status":"ready"}' if found else b'{"code":"NOT_FOUND"}')
        def log_message(self, *args):
            pass
    print("fake keylight listening on", port, flush=True)
    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
elif args[:1] == ["token"]:
    print(os.environ.get("KEYLIGHT_ADMIN_TOKEN", ""))
else:
    print("keylight", *args)
"""

REQUIRE_ALL = os.environ.get("KEYLIGHT_REQUIRE_ALL_TESTS") == "1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DocBlocksTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="doc-blocks-test-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.keylight = os.path.join(self.dir, "keylight")
        with open(self.keylight, "w") as f:
            f.write(FAKE_KEYLIGHT)
        os.chmod(self.keylight, 0o755)
        self.port = free_port()
        self.ci = self.write("ci-run", "swift build --build-tests\nswift test && swift test --package-path Server\n")
        self.modules = os.path.join(self.dir, "no-modules")
        os.makedirs(self.modules)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
        return path

    def run_blocks(self, markdown, *extra, name="doc.md"):
        path = self.write(name, markdown)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = db.main(["--keylight", self.keylight, "--port", str(self.port), "--ci-script", self.ci,
                            "--sdk-modules", self.modules, *extra, path])
        return code, out.getvalue() + err.getvalue()


class ShellTests(DocBlocksTestCase):
    def test_a_failing_block_fails_with_its_output(self):
        code, out = self.run_blocks("""\
            ```sh
            echo before the failure
            false
            echo never printed
            ```
            """)
        self.assertEqual(code, 1, out)
        self.assertIn("doc.md:1  sh  FAILED: exited with status 1", out)
        self.assertIn("before the failure", out)
        self.assertNotIn("never printed", out)

    def test_an_unset_variable_fails(self):
        code, out = self.run_blocks("```sh\necho \"$NOT_SET_ANYWHERE\"\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("NOT_SET_ANYWHERE: unbound variable", out)

    def test_a_failing_stage_of_a_pipeline_fails(self):
        code, out = self.run_blocks("```sh\nfalse | cat\n```\n")
        self.assertEqual(code, 1, out)

    def test_variables_and_functions_carry_from_block_to_block(self):
        code, out = self.run_blocks("""\
            ```sh
            export GREETING=hello
            plain=kept
            twice() { echo "$1$1"; }
            cd "$(mktemp -d)"; touch here
            ```

            Prose between the blocks.

            ```bash
            [ "$GREETING" = hello ] && [ "$plain" = kept ] && [ "$(twice ab)" = abab ] && [ -e here ]
            ```
            """)
        self.assertEqual(code, 0, out)
        self.assertIn("doc.md:1  sh  ran", out)
        self.assertIn("doc.md:10  bash  ran", out)

    def test_later_blocks_of_a_failed_file_are_not_run_unless_keep_going(self):
        markdown = "```sh\nexit 3\n```\n\n```sh\necho second\n```\n"
        code, out = self.run_blocks(markdown)
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"doc.md:5  sh  NOT RUN: after the failure of \S*doc.md:1 ")
        code, out = self.run_blocks(markdown, "--keep-going")
        self.assertEqual(code, 1, out)
        self.assertIn("doc.md:5  sh  ran", out)

    def test_the_session_has_keylight_the_token_and_a_server_on_the_port(self):
        code, out = self.run_blocks(f"""\
            ```sh
            [ "$(keylight token)" = "$KEYLIGHT_ADMIN_TOKEN" ] && [ -n "$KEYLIGHT_ADMIN_TOKEN" ]
            [ "$(swift run --package-path Server keylight hello there)" = "keylight hello there" ]
            python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{self.port}/readyz")'
            ```
            """)
        self.assertEqual(code, 0, out)

    def test_a_block_that_runs_a_build_is_refused(self):
        code, out = self.run_blocks("```sh\nswift build\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("exited with status 97", out)
        self.assertIn("ci-stage", out)

    def test_a_block_is_bounded_in_time(self):
        code, out = self.run_blocks("<!-- doc-test: timeout: 1 -->\n```sh\necho started; sleep 30\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("timed out after 1 s: started", out)

    def test_the_port_being_taken_fails_clearly(self):
        with socket.socket() as busy:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            busy.bind(("127.0.0.1", self.port))
            busy.listen()
            code, out = self.run_blocks("```sh\necho hi\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn(f"port {self.port} is taken", out)

    def test_a_block_that_serves_runs_in_the_background_until_ready(self):
        code, out = self.run_blocks(f"""\
            <!-- doc-test: serves -->
            ```sh
            keylight serve --port {self.port}
            ```

            ```sh
            python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{self.port}/healthz")'
            ```
            """)
        self.assertEqual(code, 0, out)
        self.assertIn("serving; /readyz answered", out)

    def test_a_block_that_serves_then_stops_frees_the_port_for_a_server_of_the_guide(self):
        code, out = self.run_blocks(f"""\
            <!-- doc-test: serves: stop -->
            ```sh
            swift run --package-path Server keylight serve --port {self.port}
            ```

            ```sh
            keylight serve --port {self.port} > serve.log 2>&1 &
            until python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{self.port}/readyz")' 2>/dev/null; do sleep 0.1; done
            ```
            """)
        self.assertEqual(code, 0, out)
        self.assertIn("served (/readyz answered), then stopped", out)

    def test_a_file_that_starts_its_own_server_gets_none_from_the_runner(self):
        code, out = self.run_blocks(f"""\
            ```sh
            keylight serve --db ./k.sqlite --port {self.port} &
            server_pid=$!
            until python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:{self.port}/readyz")' 2>/dev/null; do sleep 0.1; done
            ```

            ```sh
            kill "$server_pid"
            ```
            """)
        self.assertEqual(code, 0, out)

    def test_a_file_with_its_own_server_has_no_token_in_its_session(self):
        code, out = self.run_blocks(f"""\
            ```sh
            [ -z "${{KEYLIGHT_ADMIN_TOKEN:-}}" ]
            keylight serve --port {self.port} > serve.log 2>&1 &
            ```
            """)
        self.assertEqual(code, 0, out)

    def test_a_foreground_server_without_the_marker_times_out_with_a_hint(self):
        code, out = self.run_blocks(f"<!-- doc-test: timeout: 2 -->\n```sh\nkeylight serve --port {self.port}\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("timed out after 2 s (a block that runs the server in the foreground is marked", out)

    def test_curl_fails_on_an_http_error_unless_the_block_allows_it(self):
        if not shutil.which("curl"):
            if REQUIRE_ALL:
                self.fail("curl is not installed")
            self.skipTest("curl is not installed")
        code, out = self.run_blocks(f"```sh\ncurl localhost:{self.port}/no-such-page\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("404", out)
        code, out = self.run_blocks(f"""\
            ```sh
            curl localhost:{self.port}/healthz
            ```

            <!-- doc-test: http-errors-ok -->
            ```sh
            curl localhost:{self.port}/no-such-page
            ```
            """)
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks(f"```sh\nif curl -sSf localhost:{self.port}/no-such-page; then exit 1; fi\n"
                                    f"curl -s -o /dev/null -w '%{{http_code}}' localhost:{self.port}/no-such-page -f || true\n```\n")
        self.assertEqual(code, 0, out)  # its own -f: no "--fail and --fail-with-body" clash

    def test_console_blocks_run_their_prompt_lines_only(self):
        code, out = self.run_blocks("""\
            ```console
            $ X=console
            $ [ "$X" = console ] && \\
                echo "$X"
            console
            this line is output, not a command
            ```
            """)
        self.assertEqual(code, 0, out)

    def test_a_block_that_changes_the_host_is_not_run(self):
        marker = os.path.join(self.dir, "ran")
        code, out = self.run_blocks(f"```sh\ntouch {marker}\nuseradd --system keylight\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("changes the machine it runs on (useradd", out)
        self.assertFalse(os.path.exists(marker), "nothing of the block may run")


class MarkerTests(DocBlocksTestCase):
    def test_an_exempt_block_is_listed_with_its_reason_and_not_run(self):
        marker = os.path.join(self.dir, "ran")
        code, out = self.run_blocks(f"""\
            <!-- doc-test: exempt: needs a real host (systemctl) -->
            ```sh
            touch {marker}
            ```
            """)
        self.assertEqual(code, 0, out)
        self.assertIn("Exempt blocks (1):", out)
        self.assertIn("doc.md:2  sh: needs a real host (systemctl)", out)
        self.assertFalse(os.path.exists(marker))

    def test_an_exempt_marker_needs_a_reason(self):
        code, out = self.run_blocks("<!-- doc-test: exempt: -->\n```sh\ntrue\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("needs a reason", out)

    def test_other_comments_may_sit_between_a_marker_and_its_block(self):
        code, out = self.run_blocks("<!-- doc-test: exempt: shown only -->\n<!-- quickstart: x -->\n```sh\nfalse\n```\n")
        self.assertEqual(code, 0, out)

    def test_a_marker_away_from_any_block_fails(self):
        code, out = self.run_blocks("<!-- doc-test: exempt: lost -->\n\n```text\nx\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("doc.md:1  FAILED: a doc-test marker that is not right above a fenced block", out)

    def test_an_unknown_marker_fails(self):
        code, out = self.run_blocks("<!-- doc-test: exmpt: typo -->\n```text\nx\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("unknown marker", out)

    def test_a_ci_stage_block_must_be_what_ci_runs(self):
        code, out = self.run_blocks("""\
            <!-- doc-test: ci-stage -->
            ```sh
            swift test && swift test --package-path Server      # the tests
            ```
            """)
        self.assertEqual(code, 0, out)
        self.assertIn("runs the build; CI runs it as its own stage", out)
        script = os.path.relpath(self.write("stage-script", "Scripts/build-static --output keylight\n"), db.ROOT)
        code, out = self.run_blocks(f"<!-- doc-test: ci-stage: {script} -->\n```sh\nScripts/build-static --output keylight\n```\n")
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("<!-- doc-test: ci-stage -->\n```sh\nswift test --parallel\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("ci-stage: not run verbatim", out)
        self.assertIn("swift test --parallel", out)


class ExpectedOutputTests(DocBlocksTestCase):
    def test_a_text_block_marked_expected_output_is_what_the_block_before_printed(self):
        markdown = """\
            ```sh
            echo "status 200"
            echo "id lic_{id}"
            printf 'one\\ntwo\\nthree\\n'
            echo last
            ```

            <!-- doc-test: expected-output -->
            ```text
            status 200
            id lic_…
            …
            last
            ```
            """
        code, out = self.run_blocks(markdown.replace("{id}", "8f3a"))
        self.assertEqual(code, 0, out)
        self.assertIn("checked: the output of", out)
        code, out = self.run_blocks(markdown.replace("{id}", "8f3a").replace('echo "status 200"', 'echo "status 401"'))
        self.assertEqual(code, 1, out)
        self.assertIn("printed something else", out)
        self.assertIn("status 401", out)

    def test_expected_output_needs_a_shell_block_that_ran_right_before(self):
        code, out = self.run_blocks("""\
            <!-- doc-test: exempt: a real host -->
            ```sh
            systemctl status keylight
            ```

            <!-- doc-test: expected-output -->
            ```output
            active
            ```
            """)
        self.assertEqual(code, 1, out)
        self.assertIn("no shell block ran right before it", out)


class LanguageTests(DocBlocksTestCase):
    def test_a_block_without_a_language_fails(self):
        code, out = self.run_blocks("```\nplain\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("doc.md:1  (no language)  FAILED: no language", out)

    def test_an_unknown_language_fails(self):
        code, out = self.run_blocks("```brainfuck\n+++\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("unknown language 'brainfuck'", out)

    def test_text_is_not_run(self):
        code, out = self.run_blocks("```text\n$ rm -rf /\n```\n\n```output\n{not json\n```\n")
        self.assertEqual(code, 0, out)

    def test_json_must_parse(self):
        code, out = self.run_blocks('```json\n{"a": 1, "b": [true, null]}\n```\n')
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks('Shape:\n\n```json\n{"a": 1,\n "b": …}\n```\n')
        self.assertEqual(code, 1, out)
        self.assertIn("not JSON", out)
        self.assertIn("doc.md:5", out)

    def test_xml_must_be_well_formed_and_plist_keys_alternate(self):
        code, out = self.run_blocks("```xml\n<key>A</key>\n<string>b</string>\n<key>C</key>\n<true/>\n```\n")
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("```xml\n<key>A</key>\n<string>b</strin>\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("not well-formed", out)
        code, out = self.run_blocks("```plist\n<key>A</key>\n<key>B</key>\n<string>b</string>\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("plist:", out)

    def test_yaml_must_parse(self):
        try:
            import yaml  # noqa: F401
        except ImportError:
            if REQUIRE_ALL:
                self.fail("PyYAML is not installed")
            self.skipTest("PyYAML is not installed")
        code, out = self.run_blocks("```yaml\na: [1, 2]\nb: {c: d}\n```\n")
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("```yaml\na: [1, 2\n```\n")
        self.assertEqual(code, 1, out)

    def test_nginx_configuration_is_tested(self):
        if not db.nginx_binary():
            if REQUIRE_ALL:
                self.fail("nginx is not installed")
            self.skipTest("nginx is not installed")
        code, out = self.run_blocks("""\
            ```nginx
            server {
                listen 443 ssl;
                location / { proxy_pass http://127.0.0.1:8080; }
            }
            ```
            """)
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("```nginx\nlocation / { proxy_pas http://127.0.0.1:8080; }\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("proxy_pas", out)

    def test_swift_is_type_checked(self):
        if not shutil.which("swiftc"):
            if REQUIRE_ALL:
                self.fail("swiftc is not on PATH")
            self.skipTest("swiftc is not on PATH")
        code, out = self.run_blocks("```swift\nimport Foundation\nlet later = Date().addingTimeInterval(60)\n```\n")
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("Text.\n\n```swift\nimport Foundation\n\nlet count: Int = \"three\"\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("doc.md:6:", out)  # the Markdown file's line, not the temporary file's
        code, out = self.run_blocks("```swift\nimport SwiftUI\nstruct V: View { var body: some View { Text(\"x\") } }\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("needs an Apple SDK (imports SwiftUI)", out)


class SwiftContextTests(DocBlocksTestCase):
    def setUp(self):
        super().setUp()
        if not shutil.which("swiftc"):
            if REQUIRE_ALL:
                self.fail("swiftc is not on PATH")
            self.skipTest("swiftc is not on PATH")

    def test_hidden_given_code_and_shared_blocks_are_in_scope(self):
        code, out = self.run_blocks("""\
            <!-- doc-test: swift-given
            let typedKey = "ACME-1234"
            func showAlert(_ message: String) {}
            -->

            <!-- doc-test: swift-shared -->
            ```swift
            import Foundation
            struct TestClock { var now = Date(timeIntervalSince1970: 0) }
            ```

            ```swift
            import Foundation
            showAlert(typedKey + TestClock().now.description)
            ```
            """)
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("```swift\nimport Foundation\nshowAlert(typedKey)\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("cannot find 'showAlert' in scope", out)

    def test_a_fragment_of_a_manifest_is_checked_inside_package(self):
        code, out = self.run_blocks("""\
            <!-- doc-test: swift-context: package-arguments -->
            ```swift
            dependencies: [.package(url: "https://example.com/keylight.git", from: "2.0.0")],
            targets: [.target(name: "Widget", dependencies: [.product(name: "Keylight", package: "keylight")])]
            ```

            ```swift
            // swift-tools-version: 6.1
            import PackageDescription
            let package = Package(name: "Widget", targets: [.target(name: "Widget")])
            ```
            """)
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("<!-- doc-test: swift-context: package-arguments -->\n```swift\ntargetz: []\n```\n")
        self.assertEqual(code, 1, out)


class StdinTests(DocBlocksTestCase):
    def test_a_block_reads_what_its_marker_gives(self):
        code, out = self.run_blocks("""\
            <!-- doc-test: stdin: correct horse\\ncorrect horse -->
            ```sh
            read -r first; read -r second; [ "$first" = "correct horse" ] && [ "$second" = "$first" ]
            ```

            ```sh
            if read -r line; then echo "read $line"; exit 1; fi
            ```
            """)
        self.assertEqual(code, 0, out)


class LinkTests(DocBlocksTestCase):
    def test_relative_links_must_resolve(self):
        self.write("docs/guide.md", "# Guide\n\n## Running in production\n\nText.\n")
        code, out = self.run_blocks("""\
            See [the guide](docs/guide.md), [production](docs/guide.md#running-in-production),
            [here](#a-heading), ![shot](docs/guide.md) and [the web](https://example.com/x.md).
            `[not a link](nowhere.md)`

            ## A heading
            """)
        self.assertEqual(code, 0, out)
        code, out = self.run_blocks("See [the guide](docs/gone.md).\n")
        self.assertEqual(code, 1, out)
        self.assertIn("doc.md:1  link FAILED: link to docs/gone.md", out)
        code, out = self.run_blocks("See [production](docs/guide.md#running-in-prod).\n")
        self.assertEqual(code, 1, out)
        self.assertIn("no heading #running-in-prod", out)

    def test_links_inside_code_blocks_are_not_checked(self):
        code, out = self.run_blocks("```text\n[x](missing.md)\n```\n")
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
