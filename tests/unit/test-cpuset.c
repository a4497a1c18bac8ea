/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
                { "1024", 0, "1024", 1 },
                { "0-8191", 0, "0-8191", 8192 },
                { "8191", 0, "8191", 1 },
                { "0,1024-1087,4095,8190-8191", 0, "0,1024-1087,4095,8190-8191", 68 },
                { "8192", -ERANGE, NULL, 0 },
                { "0-8192", -ERANGE, NULL, 0 },
                { "99999999999999999999", -ERANGE, NULL, 0 },
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

/* Sets above 1,024: the ops on sets far apart, near the top and spanning the whole map,
 * checked against a plain bit-per-byte model, and the words-in-use range kept right
 * when sets shrink (and, andnot) and grow again. */
static void check_model(const CpuSet *s, const bool *model) {
        unsigned n = 0;
        int prev = -1;

        for (unsigned i = 0; i < CPU_SET_MAX; i++) {
                if (cpu_set_test(s, i) != model[i])
                        fail_msg("bit %u: %d, model %d", i, cpu_set_test(s, i), model[i]);
                n += model[i];
        }
        assert_int_equal(cpu_set_count(s), n);
        assert_int_equal(cpu_set_is_empty(s), n == 0);
        CPU_SET_FOREACH(i, s) {
                assert_true(i > prev && model[i]);
                prev = i;
        }
}

static void test_large(void **state) {
        static bool ma[CPU_SET_MAX], mb[CPU_SET_MAX];
        CpuSet a = {}, b = {}, c;
        uint64_t rng = 7;
        uint8_t mask[CPU_SET_MAX / 8];
        char *f;

        for (int round = 0; round < 200; round++) {
                /* A few runs of CPUs anywhere in the map, like jobs' allocations. */
                for (int k = 0; k < 3; k++) {
                        unsigned start, len;
                        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                        start = (unsigned) (rng >> 33) % CPU_SET_MAX;
                        len = 1 + (unsigned) (rng >> 20) % 200;
                        for (unsigned i = start; i < MIN(start + len, (unsigned) CPU_SET_MAX); i++) {
                                bool *m = k == 1 ? mb : ma;
                                m[i] = true;
                                cpu_set_add(k == 1 ? &b : &a, i);
                        }
                }
                check_model(&a, ma);
                check_model(&b, mb);

                bool any = false;
                for (unsigned i = 0; i < CPU_SET_MAX; i++)
                        any = any || (ma[i] && mb[i]);
                assert_int_equal(cpu_set_intersects(&a, &b), any);
                {
                        unsigned n = 0;
                        for (unsigned i = 0; i < CPU_SET_MAX; i++)
                                n += ma[i] && mb[i];
                        assert_int_equal(cpu_set_count_and(&a, &b), n);
                }

                switch (round % 4) {
                case 0: /* a &= b */
                        cpu_set_and(&a, &b);
                        for (unsigned i = 0; i < CPU_SET_MAX; i++)
                                ma[i] = ma[i] && mb[i];
                        break;
                case 1: /* a &= ~b */
                        cpu_set_andnot(&a, &b);
                        for (unsigned i = 0; i < CPU_SET_MAX; i++)
                                ma[i] = ma[i] && !mb[i];
                        break;
                case 2: /* a |= b, then b emptied by deleting its CPUs */
                        cpu_set_or(&a, &b);
                        for (unsigned i = 0; i < CPU_SET_MAX; i++) {
                                ma[i] = ma[i] || mb[i];
                                if (mb[i])
                                        cpu_set_del(&b, i);
                                mb[i] = false;
                        }
                        assert_true(cpu_set_is_empty(&b));
                        break;
                case 3: /* copies compare equal, and unequal once changed */
                        c = a;
                        assert_true(cpu_set_equal(&c, &a));
                        cpu_set_add(&c, 8191);
                        assert_int_equal(cpu_set_equal(&c, &a), ma[8191]);
                        cpu_set_zero(&b);
                        memset(mb, 0, sizeof mb);
                        break;
                }
                check_model(&a, ma);
                check_model(&b, mb);
        }

        /* An empty set equals one emptied by and/andnot, whatever words it used. */
        cpu_set_zero(&a);
        cpu_set_add(&a, 5000);
        c = a;
        cpu_set_andnot(&c, &a);
        cpu_set_zero(&b);
        assert_true(cpu_set_equal(&b, &c));
        assert_true(cpu_set_equal(&c, &b));
        cpu_set_add(&c, 3);
        assert_false(cpu_set_equal(&b, &c));

        /* The whole map: format, mask and the last CPU. */
        assert_int_equal(cpu_set_parse("0-8191", &a), 0);
        assert_int_equal(cpu_set_to_mask(&a, mask, sizeof mask), sizeof mask);
        assert_int_equal(mask[sizeof mask - 1], 0xff);
        assert_int_equal(cpu_set_next(&a, 8191), 8191);
        assert_int_equal(cpu_set_next(&a, 8192), -1);
        cpu_set_add(&a, 8192); /* out of range: ignored, as before */
        assert_int_equal(cpu_set_count(&a), 8192);
        assert_int_equal(cpu_set_parse("0,2,4,6,8,10", &b), 0);
        cpu_set_zero(&b);
        for (unsigned i = 0; i < CPU_SET_MAX; i += 2)
                cpu_set_add(&b, i);
        f = cpu_set_format(&b); /* the longest format there is */
        assert_non_null(f);
        assert_int_equal(strncmp(f, "0,2,4,", 6), 0);
        assert_non_null(strstr(f, ",8188,8190"));
        assert_int_equal(cpu_set_parse(f, &c), 0);
        assert_true(cpu_set_equal(&b, &c));
        free(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_format),
                cmocka_unit_test(test_ops),
                cmocka_unit_test(test_large),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
