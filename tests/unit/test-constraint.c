/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/constraint.h"

static void test_valid(void **state) {
        static const char *const good[] = {
                "gpu", "a100|h100", "gpu&nvlink", "(a100|h100)&nvlink", "((a))", "A100", "rtx_3090.ti-x",
                "a&b|c&d",
        };
        static const char *const bad[] = {
                "", "|", "&", "a|", "|a", "a&", "a||b", "a&&b", "()", "(a", "a)", "(a|b", "a b", " a", "a ",
                "a100*2", "[a|b]", "a,b", "a!", "gpu\n",
                /* Deeper than CONSTRAINT_DEPTH_MAX. */
                "(((((((((((((((((a)))))))))))))))))",
        };

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!constraint_is_valid(good[i])) {
                        fprintf(stderr, "'%s' should be valid\n", good[i]);
                        fail();
                }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (constraint_is_valid(bad[i])) {
                        fprintf(stderr, "'%s' should be invalid\n", bad[i]);
                        fail();
                }
        assert_false(constraint_is_valid(NULL));
        /* Exactly the maximum depth is allowed. */
        assert_true(constraint_is_valid("((((((((((((((((a))))))))))))))))"));
}

/* A name ends at the string's end: the terminator is no name character, so nothing past
 * it is read (the allocation below is exactly the expression, for ASan to see). */
static void test_ends_at_terminator(void **state) {
        char *e = malloc(3);

        assert_non_null(e);
        memcpy(e, "gp", 3);
        assert_true(constraint_is_valid(e));
        assert_true(constraint_matches(e, (char *[]) { (char *) "gp", NULL }));
        free(e);
}

static void test_matches(void **state) {
        char *a100[] = { (char *) "gpu", (char *) "a100", (char *) "nvlink", NULL };
        char *t4[] = { (char *) "gpu", (char *) "T4", NULL };
        static const struct {
                const char *expr;
                bool a100, t4, none;
        } rows[] = {
                { "gpu", true, true, false },
                { "a100|h100", true, false, false },
                { "A100", true, false, false },   /* case-insensitive */
                { "t4", false, true, false },
                { "gpu&nvlink", true, false, false },
                { "(a100|t4)&nvlink", true, false, false },
                { "a100|t4&nvlink", true, false, false }, /* & binds tighter: a100 | (t4 & nvlink) */
                { "t4|a100&nvlink", true, true, false },
                { "(t4|a100)&gpu", true, true, false },
                { "a10", false, false, false },   /* whole names only */
                { "a1000", false, false, false },
                { "a100|", false, false, false }, /* invalid: matches nothing */
                { "nvlink&(t4)", false, false, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                if (constraint_matches(rows[i].expr, a100) != rows[i].a100 ||
                    constraint_matches(rows[i].expr, t4) != rows[i].t4 ||
                    constraint_matches(rows[i].expr, NULL) != rows[i].none) {
                        fprintf(stderr, "'%s' matched wrongly\n", rows[i].expr);
                        fail();
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid),
                cmocka_unit_test(test_ends_at_terminator),
                cmocka_unit_test(test_matches),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
