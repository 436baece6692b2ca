#!/usr/bin/env python3
"""Tests of .ci/instruction-counts on small Markdown tables and keylight-bench output: no build needed.

Run: python3 .ci/test_instruction_counts.py
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no .ci/__pycache__ from loading the extensionless script
_loader = importlib.machinery.SourceFileLoader("instruction_counts", os.path.join(HERE, "instruction-counts"))
_spec = importlib.util.spec_from_loader(_loader.name, _loader)
ic = importlib.util.module_from_spec(_spec)
_loader.exec_module(ic)

DOC = """\
# Performance

| request | µs |
|---------|----|
| validate | 99 |

## Instruction counts

| request | instructions per request |
|---------|--------------------------|
| `/healthz` | 200,000 |
| validate | 500,000 |
| activate | 1,000,000 |

## Later

| validate | 1 |
"""


def output(healthz=210_000, validate=505_000, activate=1_020_000):
    line = {"benchmark": "instructions.per_request", "requests": 2000, "healthz": healthz, "validate": validate, "activate": activate}
    return '{"benchmark":"instructions.validate","requests":2000}\n' + json.dumps(line) + "\n"


class InstructionCountsTests(unittest.TestCase):
    def run_main(self, doc, out):
        with tempfile.TemporaryDirectory() as folder:
            doc_path = os.path.join(folder, "PERFORMANCE.md")
            out_path = os.path.join(folder, "out.txt")
            with open(doc_path, "w", encoding="utf-8") as file:
                file.write(doc)
            with open(out_path, "w", encoding="utf-8") as file:
                file.write(out)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                status = ic.main(["--from-output", out_path, "--doc", doc_path])
            return status, printed.getvalue()

    def test_reads_only_the_instruction_counts_table(self):
        self.assertEqual(ic.committed_figures(DOC), {"healthz": 200_000, "validate": 500_000, "activate": 1_000_000})

    def test_todo_is_no_figure(self):
        figures = ic.committed_figures("## Instruction counts\n\n| validate | TODO |\n| activate | 12 |\n")
        self.assertEqual(figures, {"validate": None, "activate": 12})

    def test_within_ten_percent_passes_and_prints_both_numbers_and_the_ratio(self):
        status, printed = self.run_main(DOC, output())
        self.assertEqual(status, 0, printed)
        self.assertIn("validate: 505,000 instructions/request, committed 500,000: 1.010x", printed)
        self.assertIn("activate: 1,020,000 instructions/request, committed 1,000,000: 1.020x", printed)

    def test_a_rise_of_more_than_ten_percent_fails(self):
        status, printed = self.run_main(DOC, output(activate=1_110_000))
        self.assertEqual(status, 1, printed)
        self.assertIn("a rise of 11.0%", printed)

    def test_a_fall_of_more_than_ten_percent_passes_with_a_note(self):
        status, printed = self.run_main(DOC, output(validate=400_000))
        self.assertEqual(status, 0, printed)
        self.assertIn("20.0% lower than committed", printed)

    def test_a_placeholder_fails_and_names_the_figure_to_commit(self):
        doc = DOC.replace("| validate | 500,000 |", "| validate | TODO |")
        status, printed = self.run_main(doc, output())
        self.assertEqual(status, 1, printed)
        self.assertIn("commit 505,000", printed)

    def test_output_without_the_summary_line_is_an_error(self):
        status, _ = self.run_main(DOC, '{"benchmark":"instructions.validate"}\n')
        self.assertEqual(status, 2)


if __name__ == "__main__":
    unittest.main()
