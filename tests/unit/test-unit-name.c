/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/unit-name.h"

static void test_escape(void **state) {
        /* Expected values as `systemd-escape` prints them. */
        static const struct {
                const char *in;
                const char *out;
        } t[] = {
                { "bio", "bio" },
                { "bio-chem", "bio\\x2dchem" },
                { "a/b", "a-b" },
                { "/a/b", "-a-b" },
                { ".hidden", "\\x2ehidden" },
                { "a.b", "a.b" },
                { "x:y_z", "x:y_z" },
                { "a b", "a\\x20b" },
                { "back\\slash", "back\\x5cslash" },
                { "Ünï", "\\xc3\\x9cn\\xc3\\xaf" },
                { "A0", "A0" },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                char *s = NULL;

                assert_int_equal(unit_name_escape(t[i].in, &s), 0);
                if (strcmp(s, t[i].out) != 0)
                        fail_msg("unit_name_escape(\"%s\") = \"%s\", want \"%s\"", t[i].in, s, t[i].out);
                free(s);
        }

        {
                char *s = NULL;
                assert_int_equal(unit_name_escape("", &s), -EINVAL);
                assert_int_equal(unit_name_escape(NULL, &s), -EINVAL);
        }
}

static void test_project_slice(void **state) {
        static const struct {
                const char *in;
                int r;
                const char *out;
        } t[] = {
                { "bio-chem", 0, "corral-bio\\x2dchem.slice" },
                { "physics", 0, "corral-physics.slice" },
                /* '/' must not become '-': that would nest the slice inside another. */
                { "a/b", 0, "corral-a\\x2fb.slice" },
                { ".x", 0, "corral-\\x2ex.slice" },
                { "", -EINVAL, NULL },
                { NULL, -EINVAL, NULL },
        };
        char buf[300], *s = NULL;

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                int r = unit_name_project_slice(t[i].in, &s);
                if (r != t[i].r)
                        fail_msg("unit_name_project_slice(\"%s\") = %d, want %d",
                                 t[i].in ?: "(null)", r, t[i].r);
                if (r == 0) {
                        assert_string_equal(s, t[i].out);
                        s = (free(s), NULL);
                }
        }

        /* "corral-" + 242 + ".slice" = 255: fits; one more does not. */
        memset(buf, 'a', 242);
        buf[242] = 0;
        assert_int_equal(unit_name_project_slice(buf, &s), 0);
        assert_int_equal(strlen(s), 255);
        free(s);
        strcat(buf, "a");
        assert_int_equal(unit_name_project_slice(buf, &s), -EINVAL);
        /* Escaping counts: 61 dashes become 244 characters. */
        memset(buf, '-', 61);
        buf[61] = 0;
        assert_int_equal(unit_name_project_slice(buf, &s), -EINVAL);
}

/* The hold must be a child of the project's slice (one more dash) and never any project's
 * own slice, whatever the project is called. */
static void test_slice_hold(void **state) {
        static const struct {
                const char *in;
                int r;
                const char *out;
        } t[] = {
                { "corral-physics.slice", 0, "corral-physics-controllers.slice" },
                { "corral-bio\\x2dchem.slice", 0, "corral-bio\\x2dchem-controllers.slice" },
                { "corral.slice", -EINVAL, NULL },
                { "corral-.slice", -EINVAL, NULL },
                { "corral-a-b.slice", -EINVAL, NULL },
                { "corral-physics.scope", -EINVAL, NULL },
                { "system.slice", -EINVAL, NULL },
                { NULL, -EINVAL, NULL },
        };
        char name[UNIT_NAME_MAX + 2], *s = NULL, *p = NULL, *longest = NULL;

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                int r = unit_name_slice_hold(t[i].in, &s);
                if (r != t[i].r)
                        fail_msg("unit_name_slice_hold(\"%s\") = %d, want %d", t[i].in ?: "(null)", r, t[i].r);
                if (r == 0) {
                        assert_string_equal(s, t[i].out);
                        s = (free(s), NULL);
                } else
                        assert_null(s);
        }

        /* Every project slice's hold is a different name from every project slice. */
        assert_int_equal(unit_name_project_slice("physics-controllers", &p), 0);
        assert_string_not_equal(p, "corral-physics-controllers.slice");
        free(p);

        /* The longest project slice whose hold still fits, and one byte more. */
        memset(name, 'x', sizeof name);
        memcpy(name, "corral-", 7);
        size_t n = UNIT_NAME_MAX - strlen("-controllers");
        memcpy(name + n - 6, ".slice", 7);
        assert_int_equal(unit_name_slice_hold(name, &longest), 0);
        assert_int_equal(strlen(longest), UNIT_NAME_MAX);
        free(longest);
        memset(name, 'x', sizeof name);
        memcpy(name, "corral-", 7);
        memcpy(name + n + 1 - 6, ".slice", 7);
        assert_int_equal(unit_name_slice_hold(name, &longest), -EINVAL);
}

static void test_job_scope(void **state) {
        char *s = NULL;
        uint64_t id;

        assert_int_equal(unit_name_job_scope(42, &s), 0);
        assert_string_equal(s, "corral-job-42.scope");
        assert_int_equal(unit_name_job_id(s, &id), 0);
        assert_int_equal(id, 42);
        free(s);

        assert_int_equal(unit_name_job_scope(UINT64_MAX, &s), 0);
        assert_string_equal(s, "corral-job-18446744073709551615.scope");
        assert_int_equal(unit_name_job_id(s, &id), 0);
        assert_true(id == UINT64_MAX);
        free(s);

        assert_int_equal(unit_name_job_id("corral-job-0.scope", &id), 0);
        assert_int_equal(id, 0);
}

static void test_job_id_strict(void **state) {
        static const struct {
                const char *in;
                int r;
        } t[] = {
                { "corral-job-.scope", -EINVAL },
                { "corral-job-42", -EINVAL },
                { "corral-job-42.service", -EINVAL },
                { "corral-job-042.scope", -EINVAL },
                { "corral-job-+42.scope", -EINVAL },
                { "corral-job--42.scope", -EINVAL },
                { "corral-job- 42.scope", -EINVAL },
                { "corral-job-42 .scope", -EINVAL },
                { "corral-job-4x2.scope", -EINVAL },
                { "corral-job-42.scope.scope", -EINVAL },
                { "xcorral-job-42.scope", -EINVAL },
                { "corral-jobs-42.scope", -EINVAL },
                { "corral-job-18446744073709551616.scope", -ERANGE },
                { "", -EINVAL },
                { NULL, -EINVAL },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                uint64_t id = 7;
                int r = unit_name_job_id(t[i].in, &id);
                if (r != t[i].r)
                        fail_msg("unit_name_job_id(\"%s\") = %d, want %d", t[i].in ?: "(null)", r, t[i].r);
                assert_int_equal(id, 7);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_project_slice),
                cmocka_unit_test(test_slice_hold),
                cmocka_unit_test(test_job_scope),
                cmocka_unit_test(test_job_id_strict),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
