/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "cpuset.h"

static void test_parse_format(void **state) {
        static const struct {
                const char *in;
                int r;
                const char *out;
                unsigned count;
        } t[] = {
                { "0-3,8,10-11", 0, "0-3,8,10-11", 7 },
                { "0-3,8,10-11\n", 0, "0-3,8,10-11", 7 },
                { "", 0, "", 0 },
                { "\n", 0, "", 0 },
                { "5", 0, "5", 1 },
                { "3,2,1,0", 0, "0-3", 4 },
                { "1023", 0, "1023", 1 },
                { "1024", -ERANGE, NULL, 0 },
                { "3-1", -EINVAL, NULL, 0 },
                { "1,", -EINVAL, NULL, 0 },
                { ",1", -EINVAL, NULL, 0 },
                { "1-", -EINVAL, NULL, 0 },
                { "a", -EINVAL, NULL, 0 },
                { "1;2", -EINVAL, NULL, 0 },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                CpuSet s;
                int r = cpu_set_parse(t[i].in, &s);
                if (r != t[i].r)
                        fail_msg("cpu_set_parse(\"%s\") = %d, want %d", t[i].in, r, t[i].r);
                if (r == 0) {
                        char *f = cpu_set_format(&s);
                        assert_non_null(f);
                        assert_string_equal(f, t[i].out);
                        assert_int_equal(cpu_set_count(&s), t[i].count);
                        free(f);
                }
        }
}

static void test_ops(void **state) {
        CpuSet a, b;
        uint8_t mask[4];
        int n = 0;

        assert_int_equal(cpu_set_parse("0-7", &a), 0);
        assert_int_equal(cpu_set_parse("4-11", &b), 0);
        assert_true(cpu_set_intersects(&a, &b));
        cpu_set_andnot(&a, &b);
        assert_int_equal(cpu_set_count(&a), 4);
        assert_false(cpu_set_intersects(&a, &b));
        cpu_set_or(&a, &b);
        assert_int_equal(cpu_set_count(&a), 12);
        CPU_SET_FOREACH(i, &a)
                assert_int_equal(i, n++);
        assert_int_equal(n, 12);
        assert_int_equal(cpu_set_to_mask(&a, mask, sizeof mask), 2);
        assert_int_equal(mask[0], 0xff);
        assert_int_equal(mask[1], 0x0f);
        assert_int_equal(cpu_set_next(&a, 64), -1);
        cpu_set_zero(&a);
        assert_true(cpu_set_is_empty(&a));
        cpu_set_add(&a, 700);
        assert_int_equal(cpu_set_next(&a, 0), 700);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_format),
                cmocka_unit_test(test_ops),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
