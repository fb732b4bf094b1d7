"""The tiny check runner the Python client scripts share.

A check prints "PASS name" or "FAIL name: detail" on its own line, which
sqlserver/clients_test.go turns into a subtest; done() returns the exit code.
"""

import traceback


class Checks:
    def __init__(self):
        self.failures = 0

    def check(self, name):
        def run(fn):
            try:
                fn()
                print("PASS " + name, flush=True)
            except Exception as e:  # every failure is reported, none stops the run
                self.failures += 1
                detail = "%s: %s" % (type(e).__name__, e)
                code = getattr(e, "pgcode", None) or getattr(e, "sqlstate", None)
                if code:
                    detail += " [SQLSTATE %s]" % code
                tb = traceback.extract_tb(e.__traceback__)
                if tb:
                    detail += " (line %d)" % tb[-1].lineno
                print("FAIL %s: %s" % (name, detail.replace("\n", " ")), flush=True)
            return fn
        return run

    @staticmethod
    def expect(ok, what):
        if not ok:
            raise AssertionError(what)

    def done(self):
        print("DONE" if self.failures == 0 else "DONE with %d failures" % self.failures, flush=True)
        return 0 if self.failures == 0 else 1
