#!/usr/bin/env python3
"""Tests of .ci/apple-platform-check on small Swift snippets in a temporary repository.

Run: python3 .ci/test_apple_platform_check.py
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import shutil
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no .ci/__pycache__ from loading the extensionless script
_loader = importlib.machinery.SourceFileLoader("apple_platform_check", os.path.join(HERE, "apple-platform-check"))
_spec = importlib.util.spec_from_loader(_loader.name, _loader)
apc = importlib.util.module_from_spec(_spec)
_loader.exec_module(apc)

RULES = "\n".join([
    "# kind\tapi\tpattern\tplatforms\tallowed_if\tsource",
    "unavailable\thomeDirectoryForCurrentUser\t\\bhomeDirectoryForCurrentUser\\b\tios,maccatalyst,tvos,watchos,visionos"
    "\tos(macOS) ; os(Linux)\ttest",
    "unavailable\tProcess\t\\bProcess\\s*\\(\\s*\\)\tios,tvos,watchos,visionos\tos(macOS) ; targetEnvironment(macCatalyst)\ttest",
    "unavailable\tUIDevice\t\\bUIDevice\\b\tmacos,watchos\tcanImport(UIKit) && !os(watchOS)\ttest",
    "forbidden\tProcessInfo.hostName\t\\bprocessInfo\\s*\\.\\s*hostName\\b\tmacos,ios,maccatalyst,tvos,watchos,visionos"
    "\tos(Linux)\ttest",
    "introduced\tObservation\t@Observable\\b|\\bwithObservationTracking\\b\tmacos=14,ios=17,tvos=17,watchos=10,visionos=1"
    "\t-\ttest",
    "introduced\tRegex\t\\bRegex\\s*[<({]|#/\tmacos=13,ios=16,tvos=16,watchos=9,visionos=1\t-\ttest",
    "",
])

PACKAGE = """\
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "Demo",
    platforms: [.macOS(.v{macos}), .iOS(.v{ios}), .tvOS(.v{tvos}), .watchOS(.v{watchos}), .visionOS(.v1)],
    targets: [
        .target(name: "Demo"),
        .executableTarget(name: "tool"),
        .target(name: "Helpers", path: "Tests/Helpers"),
        .testTarget(name: "DemoTests", dependencies: ["Demo"]),
    ]
)
"""


class CheckerTestCase(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="apple-platform-check-")
        self.addCleanup(shutil.rmtree, self.root)
        os.makedirs(os.path.join(self.root, "Sources", "Demo"))
        os.makedirs(os.path.join(self.root, "Sources", "tool"))
        os.makedirs(os.path.join(self.root, "Tests", "DemoTests"))
        self.write("Sources/apple-platform-apis.tsv", RULES)
        self.package(macos=14, ios=17, tvos=17, watchos=10)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))

    def package(self, **versions):
        self.write("Package.swift", PACKAGE.format(**versions))

    def run_check(self, *extra):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = apc.main(["--root", self.root, *extra])
        return code, out.getvalue(), err.getvalue()

    def violations(self, swift, *extra, name="Sources/Demo/Demo.swift"):
        self.write(name, swift)
        code, out, err = self.run_check(*extra)
        lines = [line for line in out.splitlines() if not line.startswith("apple-platform-check:")]
        self.assertEqual(code, 1 if lines else 0, out + err)
        return lines

    def assertFlagged(self, lines, line_number, kind, *words):
        hits = [l for l in lines if l.startswith("Sources/Demo/Demo.swift:%d: %s: " % (line_number, kind))]
        self.assertEqual(len(hits), 1, "expected one %s violation at line %d, got:\n%s" % (kind, line_number, "\n".join(lines)))
        for word in words:
            self.assertIn(word, hits[0])


class UnavailableTests(CheckerTestCase):
    def test_a_use_outside_any_if_fails(self):
        lines = self.violations("""\
            import Foundation
            let home = FileManager.default.homeDirectoryForCurrentUser
            """)
        self.assertFlagged(lines, 2, "unavailable", "homeDirectoryForCurrentUser is unavailable on",
                           "iOS", "Mac Catalyst", "tvOS", "watchOS", "visionOS", "outside an #if that excludes them")
        self.assertNotIn("macOS,", lines[0].split("unavailable on")[1].split("(")[0])
        self.assertEqual(len(lines), 1)

    def test_inside_if_os_macos_passes(self):
        self.assertEqual(self.violations("""\
            #if os(macOS)
            let home = FileManager.default.homeDirectoryForCurrentUser
            #endif
            """), [])

    def test_the_else_branch_of_if_os_macos_fails(self):
        lines = self.violations("""\
            #if os(macOS)
            let a = 1
            #else
            let home = FileManager.default.homeDirectoryForCurrentUser
            #endif
            """)
        self.assertFlagged(lines, 4, "unavailable", "iOS")

    def test_not_os_linux_excludes_no_apple_platform(self):
        lines = self.violations("""\
            #if !os(Linux)
            let home = FileManager.default.homeDirectoryForCurrentUser
            #endif
            """)
        self.assertFlagged(lines, 2, "unavailable", "iOS", "visionOS")

    def test_os_linux_excludes_every_apple_platform(self):
        self.assertEqual(self.violations("""\
            #if os(Linux)
            let home = FileManager.default.homeDirectoryForCurrentUser
            let host = ProcessInfo.processInfo.hostName
            #endif
            """), [])

    def test_nested_ifs_combine(self):
        lines = self.violations("""\
            #if canImport(Darwin)
            #if os(macOS)
            let ok = FileManager.default.homeDirectoryForCurrentUser
            #else
            let bad = FileManager.default.homeDirectoryForCurrentUser
            #endif
            #endif
            #if os(iOS) || os(macOS)
            #if !os(iOS)
            let alsoOk = FileManager.default.homeDirectoryForCurrentUser
            #endif
            #endif
            """)
        self.assertEqual(len(lines), 1, "\n".join(lines))
        self.assertFlagged(lines, 5, "unavailable")

    def test_elseif_carries_the_negation_of_earlier_branches(self):
        lines = self.violations("""\
            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            let a = 1
            #elseif canImport(Darwin)
            let home = FileManager.default.homeDirectoryForCurrentUser
            #elseif SOME_FLAG
            let flagged = FileManager.default.homeDirectoryForCurrentUser
            #else
            let linuxOrOther = FileManager.default.homeDirectoryForCurrentUser
            #endif
            """)
        # Line 4: only macOS and Mac Catalyst reach it (canImport(Darwin) minus the first branch);
        # Mac Catalyst is os(iOS), so the first branch took it: only macOS is left. Fine.
        # Line 6: no Apple platform gets past canImport(Darwin). Line 8: likewise.
        self.assertEqual(lines, [])

    def test_elseif_branch_that_leaves_a_platform_fails(self):
        lines = self.violations("""\
            #if os(iOS)
            let a = 1
            #elseif os(tvOS)
            let b = 2
            #elseif canImport(Darwin)
            let home = FileManager.default.homeDirectoryForCurrentUser
            #endif
            """)
        self.assertFlagged(lines, 6, "unavailable", "watchOS", "visionOS")
        self.assertNotIn("tvOS", lines[0])
        self.assertNotIn("Mac Catalyst", lines[0])

    def test_unknown_flags_are_not_an_exclusion(self):
        lines = self.violations("""\
            #if DEBUG
            let home = FileManager.default.homeDirectoryForCurrentUser
            #endif
            #if canImport(FoundationNetworking) && URLSessionTransport
            let linuxOnly = FileManager.default.homeDirectoryForCurrentUser
            #endif
            """)
        self.assertFlagged(lines, 2, "unavailable")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_can_import_uikit_does_not_exclude_watchos(self):
        lines = self.violations("""\
            #if canImport(UIKit)
            let device = UIDevice.current
            #endif
            #if canImport(UIKit) && !os(watchOS)
            let fine = UIDevice.current
            #endif
            """)
        self.assertFlagged(lines, 2, "unavailable", "watchOS")
        self.assertNotIn("macOS", lines[0].split("unavailable on")[1])
        self.assertEqual(len(lines), 1)

    def test_can_import_appkit_includes_mac_catalyst(self):
        lines = self.violations("""\
            #if canImport(AppKit)
            let home = FileManager.default.homeDirectoryForCurrentUser
            let task = Process()
            #endif
            """)
        self.assertFlagged(lines, 2, "unavailable", "Mac Catalyst")
        # Process is available in Mac Catalyst, and canImport(AppKit) is false on iPhone and iPad.
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_available_unavailable_attribute_excludes_a_platform(self):
        lines = self.violations("""\
            @available(iOS, unavailable)
            @available(tvOS, unavailable)
            @available(watchOS, unavailable)
            @available(visionOS, unavailable)
            func home() -> URL {
                FileManager.default.homeDirectoryForCurrentUser
            }
            func other() -> URL { FileManager.default.homeDirectoryForCurrentUser }
            """)
        self.assertFlagged(lines, 8, "unavailable")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_forbidden_is_reported_everywhere_but_linux(self):
        lines = self.violations("""\
            let name = ProcessInfo.processInfo.hostName
            #if os(Linux)
            let linux = ProcessInfo.processInfo.hostName
            #endif
            """)
        self.assertFlagged(lines, 1, "forbidden", "ProcessInfo.hostName is forbidden on macOS")
        self.assertEqual(len(lines), 1)


class LexingTests(CheckerTestCase):
    def test_comments_and_strings_are_not_uses(self):
        self.assertEqual(self.violations('''\
            /// Unlike `FileManager.homeDirectoryForCurrentUser`, this works on iOS.
            // ProcessInfo.processInfo.hostName blocks.
            /* a block comment: homeDirectoryForCurrentUser
               /* nested */ still a comment: UIDevice */
            let message = "homeDirectoryForCurrentUser and ProcessInfo.processInfo.hostName"
            let raw = #"UIDevice "quoted" homeDirectoryForCurrentUser"#
            let multi = """
                homeDirectoryForCurrentUser
                \\(1 + 1) UIDevice
                """
            '''), [])

    def test_code_in_an_interpolation_is_a_use(self):
        lines = self.violations('''\
            let text = "host: \\(ProcessInfo.processInfo.hostName)!"
            ''')
        self.assertFlagged(lines, 1, "forbidden")

    def test_a_doc_comment_does_not_hide_the_next_line(self):
        lines = self.violations('''\
            /// `homeDirectoryForCurrentUser` is macOS only */
            let home = FileManager.default.homeDirectoryForCurrentUser
            ''')
        self.assertFlagged(lines, 2, "unavailable")
        self.assertEqual(len(lines), 1)

    def test_regex_literals_are_seen(self):
        lines = self.violations('''\
            let digits = /[0-9]+/
            let extended = #/a/b/#
            let ratio = total / count
            let half = width/2
            let path = "a/b/c"
            ''', "--minimums", "macos=12,ios=15,tvos=15,watchos=8")
        self.assertFlagged(lines, 1, "introduced", "macOS 13, iOS 16, tvOS 16, watchOS 9", "the package supports macOS 12")
        self.assertFlagged(lines, 2, "introduced")
        self.assertEqual(len(lines), 2, "\n".join(lines))
        # At the package's macOS 14 / iOS 17 they are fine.
        self.assertEqual(self.violations("let digits = /[0-9]+/\n"), [])


class IntroducedTests(CheckerTestCase):
    def setUp(self):
        super().setUp()
        self.package(macos=13, ios=16, tvos=16, watchos=9)

    def test_a_use_below_the_minimums_fails(self):
        lines = self.violations("""\
            import Observation
            @Observable final class Model {}
            """)
        self.assertFlagged(lines, 2, "introduced", "introduced in macOS 14, iOS 17, tvOS 17, watchOS 10",
                           "the package supports macOS 13, iOS 16, tvOS 16, watchOS 9",
                           "wrap it in #available or raise the minimum")
        self.assertEqual(len(lines), 1, "import Observation alone is not a use")

    def test_if_available_scope_passes_and_the_line_after_fails_again(self):
        lines = self.violations("""\
            func track(_ model: AnyObject) {
                if #available(iOS 17, macOS 14, tvOS 17, watchOS 10, *) {
                    withObservationTracking { _ = model } onChange: {}
                    if true { withObservationTracking { _ = model } onChange: {} }
                }
                withObservationTracking { _ = model } onChange: {}
            }
            """)
        self.assertFlagged(lines, 6, "introduced")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_if_available_on_one_line(self):
        lines = self.violations("""\
            func f() { if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) { withObservationTracking {} onChange: {} } }
            func g() { if #available(macOS 14, iOS 17, *) { withObservationTracking {} onChange: {} } }
            """)
        self.assertFlagged(lines, 2, "introduced", "tvOS 17, watchOS 10", "tvOS 16, watchOS 9")
        self.assertNotIn("iOS 17, tvOS", lines[0].split("introduced in")[1].split(",", 1)[0])
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_the_else_of_if_available_is_not_covered(self):
        lines = self.violations("""\
            func f() {
                if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
                    withObservationTracking {} onChange: {}
                } else {
                    withObservationTracking {} onChange: {}
                }
            }
            """)
        self.assertFlagged(lines, 5, "introduced")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_guard_available_covers_the_rest_of_the_block_but_not_its_else(self):
        lines = self.violations("""\
            func f() {
                guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else {
                    withObservationTracking {} onChange: {}
                    return
                }
                withObservationTracking {} onChange: {}
            }
            func g() {
                withObservationTracking {} onChange: {}
            }
            """)
        self.assertFlagged(lines, 3, "introduced")
        self.assertFlagged(lines, 9, "introduced")
        self.assertEqual(len(lines), 2, "\n".join(lines))

    def test_if_unavailable_covers_the_else(self):
        lines = self.violations("""\
            func f() {
                if #unavailable(macOS 14, iOS 17, tvOS 17, watchOS 10) {
                    withObservationTracking {} onChange: {}
                } else {
                    withObservationTracking {} onChange: {}
                }
            }
            """)
        self.assertFlagged(lines, 3, "introduced")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_available_on_a_func_covers_its_body_only(self):
        lines = self.violations("""\
            struct S {
                @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
                func track() {
                    withObservationTracking {} onChange: {}
                }
                func untracked() {
                    withObservationTracking {} onChange: {}
                }
            }
            """)
        self.assertFlagged(lines, 7, "introduced")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_available_on_a_class_covers_the_attributes_that_follow(self):
        lines = self.violations("""\
            @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
            @MainActor
            @Observable
            final class Model {
                var count = 0
            }
            @Observable final class Bare {}
            """)
        self.assertFlagged(lines, 7, "introduced")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_available_on_a_declaration_without_a_body_ends_with_it(self):
        lines = self.violations("""\
            enum E {
                @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
                static let tracker = withObservationTracking({ 1 }, onChange: {})
                static func later() { withObservationTracking({}, onChange: {}) }
            }
            """)
        self.assertFlagged(lines, 4, "introduced")
        self.assertEqual(len(lines), 1, "\n".join(lines))

    def test_a_too_low_available_is_reported_against_the_scope(self):
        lines = self.violations("""\
            @available(macOS 13.3, iOS 16.4, tvOS 16.4, watchOS 9.4, *)
            func f() { withObservationTracking {} onChange: {} }
            """)
        self.assertFlagged(lines, 2, "introduced", "this scope only guarantees macOS 13.3, iOS 16.4")

    def test_package_minimums_cover_an_api(self):
        self.package(macos=14, ios=17, tvos=17, watchos=10)
        self.assertEqual(self.violations("""\
            @Observable final class Model {}
            """), [])

    def test_minimums_option_overrides_package_swift(self):
        self.package(macos=14, ios=17, tvos=17, watchos=10)
        lines = self.violations("""\
            @Observable final class Model {}
            """, "--minimums", "macos=13,ios=16")
        self.assertFlagged(lines, 1, "introduced", "macOS 14, iOS 17", "the package supports macOS 13, iOS 16")
        self.assertNotIn("tvOS", lines[0])

    def test_an_if_that_excludes_the_short_platforms_passes(self):
        self.assertEqual(self.violations("""\
            #if os(visionOS)
            @Observable final class Model {}
            #endif
            """), [])


class SourcesAndSummaryTests(CheckerTestCase):
    def test_summary_line(self):
        self.write("Sources/Demo/A.swift", "let a = 1\nlet b = 2\n")
        self.write("Sources/Demo/Sub/B.swift", "let c = 3\n")
        code, out, err = self.run_check()
        self.assertEqual(code, 0, out + err)
        summary = out.strip().splitlines()[-1]
        self.assertTrue(summary.startswith("apple-platform-check: 2 files, 5 lines scanned in Sources/Demo;"), summary)
        self.assertIn("6 rules applied (3 unavailable, 1 forbidden, 2 introduced)", summary)
        self.assertIn("at macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1 (Package.swift)", summary)
        self.assertTrue(summary.endswith("; 0 violations"), summary)

    def test_only_library_targets_under_sources_are_read(self):
        self.write("Sources/tool/main.swift", "let h = FileManager.default.homeDirectoryForCurrentUser\n")
        self.write("Tests/Helpers/H.swift", "let h = FileManager.default.homeDirectoryForCurrentUser\n")
        self.write("Sources/Demo/A.swift", "let a = 1\n")
        code, out, err = self.run_check()
        self.assertEqual(code, 0, out + err)

    def test_a_rule_whose_allowed_condition_does_not_exclude_its_platforms_is_refused(self):
        self.write("Sources/apple-platform-apis.tsv",
                   "unavailable\tX\t\\bX\\b\tios,watchos\tcanImport(UIKit)\ttest\n")
        code, out, err = self.run_check()
        self.assertEqual(code, 2)
        self.assertIn("does not exclude iOS, watchOS", err)

    def test_an_endif_without_if_is_an_error(self):
        self.write("Sources/Demo/A.swift", "let a = 1\n#endif\n")
        code, out, err = self.run_check()
        self.assertEqual(code, 2)
        self.assertIn("#endif without #if", err)

    def test_the_repository_rules_load(self):
        rules = apc.load_rules(os.path.join(os.path.dirname(HERE), "Sources", "apple-platform-apis.tsv"))
        kinds = {rule.kind for rule in rules}
        self.assertEqual(kinds, {"unavailable", "forbidden", "introduced"})
        self.assertGreaterEqual(len(rules), 15)
        self.assertTrue(all(rule.source for rule in rules))


class LinuxOnlyTestTests(CheckerTestCase):
    def test_test_check(self):
        self.write("Sources/Demo/A.swift", "let a = 1\n")
        self.write("Tests/DemoTests/T.swift", """\
            @Test func a() {
                #expect(StorageBackend.platformDefault == .encryptedFile())
            }
            @Test func b() {
                #if os(Linux)
                #expect(StorageBackend.platformDefault == .encryptedFile())
                #endif
                #if !canImport(Security)
                #expect(Configuration.defaultStore(tenantId: "a", productId: "b") is EncryptedFileStore)
                #endif
                // platform: Linux (no Keychain in CI)
                setenv("XDG_DATA_HOME", "/tmp/x", 1)
                let location = StorageLocation(environment: ["XDG_DATA_HOME": "/x"])
                #expect(store is EncryptedFileStore) // platform: any, the test injects it
                let unrelated = 1
                setenv("XDG_DATA_HOME", "/tmp/y", 1)
                let environment = ProcessInfo.processInfo.environment["XDG_DATA_HOME"]
            }
            """)
        code, out, err = self.run_check()
        self.assertEqual(code, 1, out + err)
        flagged = [l for l in out.splitlines() if ": linux-only-test: " in l]
        self.assertEqual([l.split(":")[1] for l in flagged], ["2", "16", "17"], "\n".join(flagged))
        self.assertIn("platformDefault assumes the Linux default store", flagged[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
