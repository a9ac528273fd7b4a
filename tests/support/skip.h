// What cmocka's skip() does not: a test program that skipped anything exits
// 77, which ctest reports as Skipped, not Passed; and every skip says why on
// a "SKIP: " line, which scripts/test gathers into its summary.
//
//   if (!model) reel_skip("no %s (scripts/fetch-models)", path);
//   ...
//   return reel_run_tests(tests, NULL, NULL);
#ifndef REEL_TESTS_SKIP_H
#define REEL_TESTS_SKIP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

// Prints "SKIP: <reason>" and counts the skip; reel_skip also leaves the
// running cmocka test as skipped. reel_skip_note alone suits checks outside
// a cmocka test (a whole program that cannot run: return reel_skip_exit()).
void reel_skip_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define reel_skip(...)                \
    do {                              \
        reel_skip_note(__VA_ARGS__);  \
        skip();                       \
    } while (0)

// How many skips were noted so far.
int reel_skips(void);

// The exit code for a program whose cmocka groups returned `failed` (a
// count): 1 when anything failed, else 77 when anything skipped, else 0.
int reel_test_verdict(int failed);

// 77, after a note: a program that cannot run at all here.
#define reel_skip_exit(...) (reel_skip_note(__VA_ARGS__), 77)

#define reel_run_tests(tests, setup, teardown) reel_test_verdict(cmocka_run_group_tests(tests, setup, teardown))

#endif
