/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The parsing of interactive jobs' front ends: run's own flags and submit -I taken out
 * before the command (never an option's value, never the command's own -I), what an
 * interactive job cannot have, and salloc's default command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/run-options.h"
#include "strv.h"

/* Argument vectors of string literals, as main() would get them (it may modify them). */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wincompatible-pointer-types-discards-qualifiers"
#else
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"
#endif

static void test_split_flags(void **state) {
        char *argv[] = { "run", "-Q", "-n", "4", "--mem=1G", "-J", "-Q", "--", "bash", "-Q", "--help", NULL };
        _cleanup_free_ char **out = NULL;
        RunFlags f = {};
        int n;

        assert_int_equal(run_split_flags(11, argv, &n, &out, &f), 0);
        assert_true(f.quiet);
        assert_false(f.help);
        /* -J takes a value: "-Q" after it is the job's name, not the flag; after "--"
         * everything is the command's. */
        assert_int_equal(n, 10);
        assert_string_equal(out[1], "-n");
        assert_string_equal(out[2], "4");
        assert_string_equal(out[3], "--mem=1G");
        assert_string_equal(out[4], "-J");
        assert_string_equal(out[5], "-Q");
        assert_string_equal(out[6], "--");
        assert_string_equal(out[7], "bash");
        assert_string_equal(out[8], "-Q");
        assert_string_equal(out[9], "--help");
        assert_null(out[10]);

        {
                char *h[] = { "run", "--help", NULL };
                _cleanup_free_ char **o2 = NULL;
                RunFlags g = {};
                assert_int_equal(run_split_flags(2, h, &n, &o2, &g), 0);
                assert_true(g.help);
                assert_int_equal(n, 1);
        }
}

static void test_interactive_flag(void **state) {
        char *a[] = { "submit", "-n", "2", "-I", "bash", NULL };
        char *b[] = { "submit", "--interactive", "--", "sh", "-I", NULL };
        char *c[] = { "submit", "-J", "-I", "sleep", "1", NULL };
        char *d[] = { "submit", "bash", "-I", NULL };
        int n;

        n = 5;
        assert_true(submit_take_interactive_flag(&n, a));
        assert_int_equal(n, 4);
        assert_string_equal(a[3], "bash");
        assert_null(a[4]);

        n = 5;
        assert_true(submit_take_interactive_flag(&n, b));
        assert_int_equal(n, 4);
        assert_string_equal(b[1], "--");
        assert_string_equal(b[3], "-I"); /* the command's own */

        /* A job named "-I" is not interactive; nor is a command's -I. */
        n = 5;
        assert_false(submit_take_interactive_flag(&n, c));
        assert_int_equal(n, 5);
        n = 3;
        assert_false(submit_take_interactive_flag(&n, d));
}

static void test_check(void **state) {
        SubmitOptions o;
        char *err = NULL;

        submit_options_init(&o, time(NULL));
        assert_int_equal(run_options_check(&o, &err), 0);
        assert_int_equal(array_spec_parse("1-3", &o.req.array), 0);
        assert_int_equal(run_options_check(&o, &err), -EINVAL);
        assert_non_null(strstr(err, "--array"));
        err = mfree(err);
        array_spec_done(&o.req.array);
        o.req.array.set = false;

        o.req.stdout_path = strdup("out.txt");
        assert_int_equal(run_options_check(&o, &err), -EINVAL);
        assert_non_null(strstr(err, "--output"));
        err = mfree(err);
        o.req.stdout_path = mfree(o.req.stdout_path);

        o.wait = true;
        assert_int_equal(run_options_check(&o, &err), -EINVAL);
        assert_non_null(strstr(err, "--wait"));
        err = mfree(err);
        submit_options_done(&o);
}

static void test_salloc_command(void **state) {
        char *args[] = { "python3", "-i", NULL };
        char **l;

        l = salloc_command(args, "/bin/zsh", "/bin/bash");
        assert_int_equal(strv_length(l), 2);
        assert_string_equal(l[0], "python3");
        strv_free(l);

        l = salloc_command(NULL, "/bin/zsh", "/bin/bash");
        assert_string_equal(l[0], "/bin/zsh");
        assert_null(l[1]);
        strv_free(l);

        /* A relative or empty $SHELL is not trusted: the login shell, then /bin/sh. */
        l = salloc_command((char *[]) { NULL }, "zsh", "/bin/bash");
        assert_string_equal(l[0], "/bin/bash");
        strv_free(l);
        l = salloc_command(NULL, NULL, "");
        assert_string_equal(l[0], "/bin/sh");
        strv_free(l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_split_flags),
                cmocka_unit_test(test_interactive_flag),
                cmocka_unit_test(test_check),
                cmocka_unit_test(test_salloc_command),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
