/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>

#include "cgroup/cgroup-stat.h"

static void test_cpu_stat(void **state) {
        CgroupCpuStat st;

        assert_int_equal(cg_parse_cpu_stat(
                "usage_usec 123456\n"
                "user_usec 100000\n"
                "system_usec 23456\n"
                "core_sched.force_idle_usec 0\n"
                "nr_periods 10\n"
                "nr_throttled 3\n"
                "throttled_usec 7777\n"
                "nr_bursts 0\n"
                "burst_usec 0\n", &st), 0);
        assert_int_equal(st.usage_usec, 123456);
        assert_int_equal(st.user_usec, 100000);
        assert_int_equal(st.system_usec, 23456);
        assert_int_equal(st.nr_throttled, 3);
        assert_int_equal(st.throttled_usec, 7777);

        /* Without the cpu controller only the first three keys exist. */
        assert_int_equal(cg_parse_cpu_stat("usage_usec 5\nuser_usec 3\nsystem_usec 2\n", &st), 0);
        assert_int_equal(st.usage_usec, 5);
        assert_int_equal(st.nr_throttled, 0);
        assert_int_equal(st.throttled_usec, 0);

        /* No trailing newline, and the empty file. */
        assert_int_equal(cg_parse_cpu_stat("usage_usec 9", &st), 0);
        assert_int_equal(st.usage_usec, 9);
        assert_int_equal(cg_parse_cpu_stat("", &st), 0);
        assert_int_equal(st.usage_usec, 0);

        /* Largest value. */
        assert_int_equal(cg_parse_cpu_stat("usage_usec 18446744073709551615\n", &st), 0);
        assert_true(st.usage_usec == UINT64_MAX);
}

static void test_cpu_stat_malformed(void **state) {
        static const char *const bad[] = {
                "usage_usec\n",
                "usage_usec \n",
                "usage_usec abc\n",
                "usage_usec -1\n",
                "usage_usec 1 2\n",
                " usage_usec 1\n",
                "usage_usec 18446744073709551616\n",
                "usage_usec 1\ngarbage\n",
        };
        CgroupCpuStat st = { .usage_usec = 42 };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                int r = cg_parse_cpu_stat(bad[i], &st);
                if (r != -EBADMSG)
                        fail_msg("cg_parse_cpu_stat(\"%s\") = %d, want -EBADMSG", bad[i], r);
        }
        /* Failure leaves the output untouched. */
        assert_int_equal(st.usage_usec, 42);
}

static void test_memory_events(void **state) {
        CgroupMemoryEvents ev;

        assert_int_equal(cg_parse_memory_events(
                "low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n", &ev), 0);
        assert_int_equal(ev.low, 1);
        assert_int_equal(ev.high, 2);
        assert_int_equal(ev.max, 3);
        assert_int_equal(ev.oom, 4);
        assert_int_equal(ev.oom_kill, 5);
        assert_int_equal(ev.oom_group_kill, 6);

        /* Older kernels: no oom_group_kill; a future key is ignored. */
        assert_int_equal(cg_parse_memory_events(
                "low 0\nhigh 0\nmax 0\noom 1\noom_kill 1\nsock_throttled 9\n", &ev), 0);
        assert_int_equal(ev.oom_kill, 1);
        assert_int_equal(ev.oom_group_kill, 0);

        assert_int_equal(cg_parse_memory_events("oom_kill x\n", &ev), -EBADMSG);
}

static void test_events(void **state) {
        CgroupEvents ev;

        assert_int_equal(cg_parse_events("populated 1\nfrozen 0\n", &ev), 0);
        assert_true(ev.populated);
        assert_false(ev.frozen);
        assert_int_equal(cg_parse_events("populated 0\nfrozen 1\n", &ev), 0);
        assert_false(ev.populated);
        assert_true(ev.frozen);
        /* Before Linux 5.2 there is no frozen key. */
        assert_int_equal(cg_parse_events("populated 1\n", &ev), 0);
        assert_true(ev.populated);
        assert_false(ev.frozen);

        assert_int_equal(cg_parse_events("populated 2\n", &ev), -EBADMSG);
        assert_int_equal(cg_parse_events("populated yes\n", &ev), -EBADMSG);
        assert_int_equal(cg_parse_events("populated\n", &ev), -EBADMSG);
}

static void test_io_stat(void **state) {
        CgroupIoStat st = {};
        CgroupIoDevice t;

        assert_int_equal(cg_parse_io_stat(
                "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
                "253:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=30 dios=3 newkey=7\n", &st), 0);
        assert_int_equal(st.n_devices, 2);
        assert_int_equal(st.devices[0].major, 8);
        assert_int_equal(st.devices[0].minor, 16);
        assert_int_equal(st.devices[0].rbytes, 1459200);
        assert_int_equal(st.devices[0].wbytes, 314773504);
        assert_int_equal(st.devices[0].rios, 192);
        assert_int_equal(st.devices[0].wios, 353);
        assert_int_equal(st.devices[1].major, 253);
        assert_int_equal(st.devices[1].minor, 0);
        assert_int_equal(st.devices[1].dbytes, 30);
        assert_int_equal(st.devices[1].dios, 3);

        cgroup_io_stat_total(&st, &t);
        assert_int_equal(t.rbytes, 1459210);
        assert_int_equal(t.wbytes, 314773524);
        assert_int_equal(t.rios, 193);
        assert_int_equal(t.wios, 355);
        cgroup_io_stat_done(&st);
        assert_null(st.devices);
        assert_int_equal(st.n_devices, 0);

        /* Empty (no I/O yet), and a device line without counters (pre-5.8 without d*). */
        assert_int_equal(cg_parse_io_stat("", &st), 0);
        assert_int_equal(st.n_devices, 0);
        cgroup_io_stat_done(&st);
        assert_int_equal(cg_parse_io_stat("8:0 rbytes=1 wbytes=2 rios=3 wios=4", &st), 0);
        assert_int_equal(st.n_devices, 1);
        assert_int_equal(st.devices[0].wios, 4);
        assert_int_equal(st.devices[0].dios, 0);
        cgroup_io_stat_done(&st);
}

static void test_io_stat_malformed(void **state) {
        static const char *const bad[] = {
                "8 rbytes=1\n",
                "8:x rbytes=1\n",
                ":16 rbytes=1\n",
                "8:16 rbytes\n",
                "8:16 rbytes=x\n",
                "8:16 =5\n",
                "8:16 rbytes=1\nfoo\n",
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                CgroupIoStat st = {};
                int r = cg_parse_io_stat(bad[i], &st);
                if (r != -EBADMSG)
                        fail_msg("cg_parse_io_stat(\"%s\") = %d, want -EBADMSG", bad[i], r);
                assert_null(st.devices);
        }
}

static void test_u64_or_max(void **state) {
        uint64_t v;

        assert_int_equal(cg_parse_u64_or_max("1048576\n", &v), 0);
        assert_int_equal(v, 1048576);
        assert_int_equal(cg_parse_u64_or_max("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(cg_parse_u64_or_max("max\n", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(cg_parse_u64_or_max("", &v), -EBADMSG);
        assert_int_equal(cg_parse_u64_or_max("\n", &v), -EBADMSG);
        assert_int_equal(cg_parse_u64_or_max("12\n\n", &v), -EBADMSG);
        assert_int_equal(cg_parse_u64_or_max("maximum\n", &v), -EBADMSG);
        assert_int_equal(cg_parse_u64_or_max(" 12\n", &v), -EBADMSG);
}

static void test_pressure(void **state) {
        CgroupPressure p;

        assert_int_equal(cg_parse_pressure("some avg10=1.50 avg60=0.30 avg300=0.06 total=1234567\n"
                                           "full avg10=0.00 avg60=0.00 avg300=0.00 total=89\n", &p), 0);
        assert_int_equal(p.some_usec, 1234567);
        assert_int_equal(p.full_usec, 89);
        /* cpu.pressure before Linux 5.13: no "full" line. */
        assert_int_equal(cg_parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", &p), 0);
        assert_int_equal(p.some_usec, 5);
        assert_int_equal(p.full_usec, 0);
        /* Unknown extra fields are tolerated, an unknown line or a missing total is not. */
        assert_int_equal(cg_parse_pressure("some avg10=0.00 total=7 avg1200=0.00\n", &p), 0);
        assert_int_equal(p.some_usec, 7);
        assert_int_equal(cg_parse_pressure("some avg10=0.00\n", &p), -EBADMSG);
        assert_int_equal(cg_parse_pressure("most total=3\n", &p), -EBADMSG);
        assert_int_equal(cg_parse_pressure("full total=3\n", &p), -EBADMSG);
        assert_int_equal(cg_parse_pressure("some total=x\n", &p), -EBADMSG);
        assert_int_equal(cg_parse_pressure("some garbage\n", &p), -EBADMSG);
        assert_int_equal(cg_parse_pressure("", &p), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_stat),
                cmocka_unit_test(test_cpu_stat_malformed),
                cmocka_unit_test(test_memory_events),
                cmocka_unit_test(test_events),
                cmocka_unit_test(test_io_stat),
                cmocka_unit_test(test_io_stat_malformed),
                cmocka_unit_test(test_u64_or_max),
                cmocka_unit_test(test_pressure),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
