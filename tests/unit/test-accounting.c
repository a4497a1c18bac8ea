/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The accounting arithmetic against closed forms: decay, the credit of a run spread over
 * time, charges with suspension, the fair-share factor, grant periods, days. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "accounting/accounting.h"

#define HOUR UINT64_C(3600)
#define WEEK (168 * HOUR)

static void assert_close(double got, double want, double rel) {
        if (fabs(got - want) > rel * fmax(fabs(want), 1e-12))
                fail_msg("got %.12g, want %.12g (relative tolerance %g)", got, want, rel);
}

static void test_decay_closed_form(void **state) {
        AcctDecayed d = { .value = 100.0, .stamp = 1000 };

        /* One half-life halves, two quarter, none keeps. */
        assert_close(acct_decayed_value(&d, 1000 + WEEK, WEEK), 50.0, 1e-12);
        assert_close(acct_decayed_value(&d, 1000 + 2 * WEEK, WEEK), 25.0, 1e-12);
        assert_close(acct_decayed_value(&d, 1000, WEEK), 100.0, 1e-15);
        /* Any Δt: 2^(−Δt/H). */
        for (uint64_t dt = 1; dt < 10 * WEEK; dt = dt * 3 + 7)
                assert_close(acct_decayed_value(&d, 1000 + dt, WEEK), 100.0 * pow(2.0, -(double) dt / WEEK), 1e-12);
        /* No decay with half-life 0; a clock gone back neither grows it nor moves the stamp. */
        assert_close(acct_decayed_value(&d, 1000 + WEEK, 0), 100.0, 0);
        assert_close(acct_decayed_value(&d, 10, WEEK), 100.0, 0);
        acct_decayed_add(&d, 1.0, 10, WEEK);
        assert_int_equal(d.stamp, 1000);
        assert_close(d.value, 101.0, 1e-15);
}

/* Adding charges one by one, each decayed from its own time, equals the sum of the
 * closed forms: Σ c_i × 2^(−(T − t_i)/H). */
static void test_decay_incremental(void **state) {
        AcctDecayed d = {};
        double want = 0;
        uint64_t t = 1700000000, end;

        for (unsigned i = 1; i <= 1000; i++) {
                t += (i * 7919) % 20000; /* irregular gaps */
                acct_decayed_add(&d, (double) (i % 17), t, WEEK);
        }
        end = t + 3 * WEEK;
        t = 1700000000;
        for (unsigned i = 1; i <= 1000; i++) {
                t += (i * 7919) % 20000;
                want += (double) (i % 17) * pow(2.0, -(double) (end - t) / WEEK);
        }
        assert_close(acct_decayed_value(&d, end, WEEK), want, 1e-9);
}

/* The credit of an amount spread evenly over a span, against a numeric integral. */
static void test_decay_credit(void **state) {
        static const uint64_t spans[] = { 1, 60, HOUR, 24 * HOUR, WEEK, 4 * WEEK };

        for (size_t k = 0; k < ELEMENTSOF(spans); k++) {
                uint64_t s = spans[k];
                const unsigned n = 100000;
                double sum = 0;

                for (unsigned i = 0; i < n; i++) {
                        double tau = ((double) i + 0.5) / n * (double) s; /* slice midpoint */
                        sum += pow(2.0, -((double) s - tau) / WEEK) / n;
                }
                assert_close(acct_decay_credit(10.0, s, WEEK), 10.0 * sum, 1e-8);
        }
        assert_close(acct_decay_credit(10.0, 0, WEEK), 10.0, 0);
        assert_close(acct_decay_credit(10.0, WEEK, 0), 10.0, 0);
        /* One half-life: (1 − 1/2) / ln 2 of it. */
        assert_close(acct_decay_credit(1.0, WEEK, WEEK), 0.5 / M_LN2, 1e-12);
}

static void test_charge(void **state) {
        JobCharge c = { .cpus = 4, .charge_factor = 3.0 };
        const uint64_t s = UINT64_C(1000000);

        /* 2 h wall, 30 min suspended: 1.5 h × 4 CPUs = 6 core-hours, × 3 = 18 SU. */
        c.run_usec = acct_run_usec(1000 * s, (1000 + 2 * HOUR) * s, 1800 * s);
        assert_int_equal(c.run_usec, 5400 * s);
        acct_charge_compute(&c);
        assert_close(c.core_hours, 6.0, 1e-12);
        assert_close(c.service_units, 18.0, 1e-12);
        /* Bonus queue: nothing charged, the core-hours still counted. */
        c.charge_factor = 0;
        acct_charge_compute(&c);
        assert_close(c.core_hours, 6.0, 1e-12);
        assert_close(c.service_units, 0.0, 0);
        /* Suspended longer than it existed, or an end before the start: 0, not a wrap. */
        assert_int_equal(acct_run_usec(10 * s, 20 * s, 30 * s), 0);
        assert_int_equal(acct_run_usec(20 * s, 10 * s, 0), 0);
        /* Efficiency: used / allocated (seff). */
        assert_close(acct_efficiency(3 * HOUR * s, 6 * HOUR * s), 0.5, 1e-12);
        assert_close(acct_efficiency(5, 0), 0.0, 0);
}

/* Shards: a job holding K of a GPU's N shards is charged K/N of its GPU-hours. */
static void test_charge_shards(void **state) {
        const uint64_t s = 1000000;
        /* 1 of 4 shards for 4 h: 1 GPU-hour; 2 CPUs: 8 core-hours; (8 + 1 × 8) × 1. */
        JobCharge c = { .cpus = 2, .gpus = 1, .shards = 1, .shards_of = 4, .run_usec = 4 * HOUR * s,
                        .charge_factor = 1, .charge_per_gpu_hour = 8 };
        UsageTotals t;

        acct_charge_compute(&c);
        assert_close(c.core_hours, 8.0, 1e-12);
        assert_close(c.gpu_hours, 1.0, 1e-12);
        assert_close(c.service_units, 16.0, 1e-12);
        usage_totals_from_charge(&t, &c);
        assert_int_equal(t.gpu_usec, HOUR * s);
        /* 3 of 4 for 2 h: 1.5 GPU-hours. */
        c.shards = 3;
        c.run_usec = 2 * HOUR * s;
        acct_charge_compute(&c);
        assert_close(c.gpu_hours, 1.5, 1e-12);
        usage_totals_from_charge(&t, &c);
        assert_int_equal(t.gpu_usec, 3 * HOUR * s / 2);
}

/* GPUs: GPU-hours beside core-hours, charged at ChargePerGPUHour= core-hours each, at
 * the queue's factor; fair-share counts them at the same weight, never below factor 1. */
static void test_charge_gpus(void **state) {
        const uint64_t s = 1000000;
        JobCharge c = { .cpus = 4, .gpus = 2, .run_usec = 5400 * s, .charge_factor = 3, .charge_per_gpu_hour = 8 };
        UsageTotals t, sum = {};

        acct_charge_compute(&c);
        assert_close(c.core_hours, 6.0, 1e-12);
        assert_close(c.gpu_hours, 3.0, 1e-12);
        /* (6 + 3 × 8) × 3 */
        assert_close(c.service_units, 90.0, 1e-12);
        assert_close(acct_fairshare_hours(&c), 90.0, 1e-12);
        /* The bonus queue charges nothing, fair-share still counts the GPUs. */
        c.charge_factor = 0;
        acct_charge_compute(&c);
        assert_close(c.service_units, 0.0, 0);
        assert_close(acct_fairshare_hours(&c), 30.0, 1e-12);
        /* ChargePerGPUHour=0: GPU-hours recorded, not charged. */
        c.charge_factor = 1;
        c.charge_per_gpu_hour = 0;
        acct_charge_compute(&c);
        assert_close(c.gpu_hours, 3.0, 1e-12);
        assert_close(c.service_units, 6.0, 1e-12);
        /* Totals carry the GPU-µs. */
        usage_totals_from_charge(&t, &c);
        assert_int_equal(t.gpu_usec, 2 * 5400 * s);
        usage_totals_add(&sum, &t);
        usage_totals_add(&sum, &t);
        assert_int_equal(sum.gpu_usec, 4 * 5400 * s);
        assert_int_equal(sum.core_usec, 8 * 5400 * s);
}

static void test_fairshare(void **state) {
        assert_close(acct_fairshare(0, 0), 1e6, 0);
        assert_close(acct_fairshare(0, 10), 1e6, 0);
        assert_close(acct_fairshare(2.5, 10), 750000.0, 1e-12);
        /* A core-hour's weight in fair-share: NCI's express counts 3, normal 1, and bonus,
         * free on the grant, still 1 (corrald(8), QUEUES). */
        assert_close(acct_fairshare_weight(3.0), 3.0, 0);
        assert_close(acct_fairshare_weight(1.0), 1.0, 0);
        assert_close(acct_fairshare_weight(0.0), 1.0, 0);
        assert_close(acct_fairshare_weight(0.5), 1.0, 0);
        assert_close(acct_fairshare_weight(1.5), 1.5, 0);
        assert_close(acct_fairshare(10, 10), 0.0, 0);
        assert_close(acct_fairshare(11, 10), 0.0, 0); /* rounding never makes it negative */
}

static void test_grant_period(void **state) {
        const uint64_t start = 1704067200; /* 2024-01-01 */
        const uint64_t p = 90 * 24 * HOUR;
        uint64_t b, e;

        assert_false(acct_grant_period(start, p, start - 1, &b, &e));
        assert_true(acct_grant_period(start, p, start, &b, &e));
        assert_int_equal(b, start);
        assert_int_equal(e, start + p);
        assert_true(acct_grant_period(start, p, start + p - 1, &b, &e));
        assert_int_equal(b, start);
        assert_true(acct_grant_period(start, p, start + p, &b, &e));
        assert_int_equal(b, start + p);
        assert_true(acct_grant_period(start, p, start + 5 * p + 17, &b, &e));
        assert_int_equal(b, start + 5 * p);
        assert_int_equal(e, start + 6 * p);
        /* No period: one grant from the start on. */
        assert_true(acct_grant_period(start, 0, start + 5 * p, &b, &e));
        assert_int_equal(b, start);
        assert_int_equal(e, UINT64_MAX);
}

static void test_days_and_totals(void **state) {
        char buf[16];
        uint64_t t;
        UsageTotals a = {}, x;
        JobCharge c = { .cpus = 2, .run_usec = 3600000000ULL, .service_units = 2.0, .cpu_usec = 1800000000ULL,
                        .memory_peak = 100, .io_read_ops = 3, .io_write_ops = 4, .has_pressure = true,
                        .stall_usec = { 1, 2, 3, 4, 5, 6 } };

        assert_string_equal(acct_day(buf, sizeof buf, 1704067200 + 86399), "2024-01-01");
        assert_string_equal(acct_day(buf, sizeof buf, 1704067200 + 86400), "2024-01-02");
        assert_int_equal(acct_day_parse("2024-01-02", &t), 0);
        assert_int_equal(t, 1704067200 + 86400);
        assert_int_equal(acct_day_parse("2024-1-2", &t), -EINVAL);
        assert_int_equal(acct_day_parse("2024-01-02x", &t), -EINVAL);
        assert_int_equal(acct_day_parse("yesterday", &t), -EINVAL);
        assert_int_equal(acct_day_parse(NULL, &t), -EINVAL);

        usage_totals_from_charge(&x, &c);
        assert_int_equal(x.core_usec, 7200000000ULL);
        assert_int_equal(x.io_ops, 7);
        assert_int_equal(x.stall_usec[ACCT_STALL_IO_FULL], 6);
        usage_totals_add(&a, &x);
        c.memory_peak = 50;
        usage_totals_from_charge(&x, &c);
        usage_totals_add(&a, &x);
        assert_int_equal(a.jobs, 2);
        assert_int_equal(a.memory_peak, 100); /* the largest, not a sum */
        assert_int_equal(a.stall_usec[ACCT_STALL_CPU_SOME], 2);
        assert_close(a.service_units, 4.0, 0);
        assert_string_equal(acct_stall_to_string(ACCT_STALL_MEMORY_FULL), "memory_full");
        assert_null(acct_stall_to_string(_ACCT_STALL_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decay_closed_form),
                cmocka_unit_test(test_decay_incremental),
                cmocka_unit_test(test_decay_credit),
                cmocka_unit_test(test_charge),
                cmocka_unit_test(test_charge_gpus),
                cmocka_unit_test(test_charge_shards),
                cmocka_unit_test(test_fairshare),
                cmocka_unit_test(test_grant_period),
                cmocka_unit_test(test_days_and_totals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
