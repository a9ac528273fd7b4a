#!/usr/bin/env python3
"""The test run's summary, from ctest's JUnit files: per build the tests
passed, failed and skipped, each skip with the reasons its program printed
on "SKIP: " lines, and the time taken. Exits 1 when a test failed, or when
one skipped and skips are not allowed (a machine set up by scripts/setup
has everything every test needs).

usage: summary.py [--allow-skips] LABEL=JUNIT.xml...
"""
import sys
import xml.etree.ElementTree as ET


def reasons(case):
    out = case.findtext("system-out") or ""
    found = [line[len("SKIP: "):].strip() for line in out.splitlines() if line.startswith("SKIP: ")]
    return found or ["(no reason printed)"]


def main(argv):
    allow = "--allow-skips" in argv
    runs = [a.split("=", 1) for a in argv if a != "--allow-skips"]
    bad = False
    for label, path in runs:
        try:
            suite = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"{label}: no test results ({e})")
            bad = True
            continue
        passed, failed, skipped, seconds = [], [], [], 0.0
        for case in suite.iter("testcase"):
            seconds += float(case.get("time") or 0)
            name = case.get("name")
            if case.find("skipped") is not None or case.get("status") == "notrun":
                skipped.append((name, reasons(case)))
            elif case.find("failure") is not None or case.get("status") == "fail":
                failed.append(name)
            else:
                passed.append(name)
        print(f"{label}: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped "
              f"({seconds / 60:.1f} min of test time)")
        for name in failed:
            print(f"  failed: {name}")
        for name, why in skipped:
            print(f"  skipped: {name}: {'; '.join(why)}")
        bad |= bool(failed) or (bool(skipped) and not allow)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
