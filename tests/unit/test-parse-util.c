/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "parse-util.h"

static void test_safe_atou64(void **state) {
        uint64_t v;

        assert_int_equal(safe_atou64("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(safe_atou64("18446744073709551615", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(safe_atou64("18446744073709551616", &v), -ERANGE);
        assert_int_equal(safe_atou64("-1", &v), -EINVAL);
        assert_int_equal(safe_atou64(" 1", &v), -EINVAL);
        assert_int_equal(safe_atou64("+1", &v), -EINVAL);
        assert_int_equal(safe_atou64("1x", &v), -EINVAL);
        assert_int_equal(safe_atou64("", &v), -EINVAL);
        assert_int_equal(safe_atou64(NULL, &v), -EINVAL);
}

static void test_safe_atoi(void **state) {
        int i;
        unsigned u;

        assert_int_equal(safe_atoi("-42", &i), 0);
        assert_int_equal(i, -42);
        assert_int_equal(safe_atoi("2147483648", &i), -ERANGE);
        assert_int_equal(safe_atoi("-", &i), -EINVAL);
        assert_int_equal(safe_atou("4294967296", &u), -ERANGE);
        assert_int_equal(safe_atou("4294967295", &u), 0);
}

static void test_parse_boolean(void **state) {
        assert_int_equal(parse_boolean("yes"), 1);
        assert_int_equal(parse_boolean("ON"), 1);
        assert_int_equal(parse_boolean("0"), 0);
        assert_int_equal(parse_boolean("false"), 0);
        assert_int_equal(parse_boolean("maybe"), -EINVAL);
}

static void test_parse_size(void **state) {
        static const struct {
                const char *s;
                uint64_t unit;
                int r;
                uint64_t v;
        } t[] = {
                { "4G", 1, 0, UINT64_C(4) << 30 },
                { "4GB", 1, 0, UINT64_C(4) << 30 },
                { "4GiB", 1, 0, UINT64_C(4) << 30 },
                { "4g", 1, 0, UINT64_C(4) << 30 },
                { "512M", 1, 0, UINT64_C(512) << 20 },
                { "1.5G", 1, 0, UINT64_C(3) << 29 },
                { "1024", 1 << 20, 0, UINT64_C(1) << 30 }, /* Slurm --mem: megabytes */
                { "100B", 1 << 20, 0, 100 },
                { "8K", 1, 0, 8192 },
                { "16E", 1, -ERANGE, 0 },
                { "0", 1, 0, 0 },
                { "", 1, -EINVAL, 0 },
                { "G", 1, -EINVAL, 0 },
                { "-1G", 1, -EINVAL, 0 },
                { "4X", 1, -EINVAL, 0 },
                { "4GG", 1, -EINVAL, 0 },
                { "1.", 1, -EINVAL, 0 },
                { "1.5", 1, -EINVAL, 0 },
                { "99999999999999999999", 1, -ERANGE, 0 },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                uint64_t v = 0;
                int r = parse_size(t[i].s, t[i].unit, &v);
                if (r != t[i].r || (r == 0 && v != t[i].v))
                        fail_msg("parse_size(\"%s\") = %d, %llu; want %d, %llu", t[i].s, r,
                                 (unsigned long long) v, t[i].r, (unsigned long long) t[i].v);
        }
}

static void test_parse_duration(void **state) {
        static const struct {
                const char *s;
                DurationDialect d;
                int r;
                uint64_t v;
        } t[] = {
                { "1-12:00:00", DURATION_SLURM, 0, 36 * 3600 },
                { "30", DURATION_SLURM, 0, 1800 },     /* Slurm: minutes */
                { "30", DURATION_PBS, 0, 30 },         /* PBS: seconds */
                { "5:30", DURATION_SLURM, 0, 330 },    /* M:S */
                { "01:02:03", DURATION_SLURM, 0, 3723 },
                { "01:02:03", DURATION_PBS, 0, 3723 },
                { "2-3", DURATION_SLURM, 0, 2 * 86400 + 3 * 3600 },
                { "2-3:04", DURATION_SLURM, 0, 2 * 86400 + 3 * 3600 + 240 },
                { "2-3", DURATION_PBS, -EINVAL, 0 },
                { "90:00", DURATION_SLURM, 0, 5400 },
                { "2h30m", DURATION_SLURM, 0, 9000 },
                { "90s", DURATION_PBS, 0, 90 },
                { "1d 12h", DURATION_SLURM, 0, 36 * 3600 },
                { "30min", DURATION_SLURM, 0, 1800 },
                { "1w", DURATION_SLURM, 0, 604800 },
                { "UNLIMITED", DURATION_SLURM, 0, DURATION_INFINITY },
                { "infinity", DURATION_PBS, 0, DURATION_INFINITY },
                { "1:2:3:4", DURATION_SLURM, -EINVAL, 0 },
                { "", DURATION_SLURM, -EINVAL, 0 },
                { "-5", DURATION_SLURM, -EINVAL, 0 },
                { "5:", DURATION_SLURM, -EINVAL, 0 },
                { "1x", DURATION_SLURM, -EINVAL, 0 },
                { "h", DURATION_SLURM, -EINVAL, 0 },
                { "99999999999999999999", DURATION_SLURM, -ERANGE, 0 },
                { "999999999999999999-0", DURATION_SLURM, -ERANGE, 0 },
        };

        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                uint64_t v = 0;
                int r = parse_duration(t[i].s, t[i].d, &v);
                if (r != t[i].r || (r == 0 && v != t[i].v))
                        fail_msg("parse_duration(\"%s\", %d) = %d, %llu; want %d, %llu", t[i].s, t[i].d, r,
                                 (unsigned long long) v, t[i].r, (unsigned long long) t[i].v);
        }
}

static void test_format(void **state) {
        char buf[32];

        assert_string_equal(format_duration(buf, sizeof buf, 36 * 3600), "1-12:00:00");
        assert_string_equal(format_duration(buf, sizeof buf, 3723), "01:02:03");
        assert_string_equal(format_duration(buf, sizeof buf, DURATION_INFINITY), "UNLIMITED");
        assert_string_equal(format_size(buf, sizeof buf, UINT64_C(4) << 30), "4G");
        assert_string_equal(format_size(buf, sizeof buf, UINT64_C(3) << 29), "1.5G");
        assert_string_equal(format_size(buf, sizeof buf, 100), "100B");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_safe_atou64),   cmocka_unit_test(test_safe_atoi),
                cmocka_unit_test(test_parse_boolean), cmocka_unit_test(test_parse_size),
                cmocka_unit_test(test_parse_duration), cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
