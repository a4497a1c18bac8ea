/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "accounting.h"
#include "string-table.h"

/* Pure like sched/: nothing here may read the clock or write anywhere (nor log: only
 * libcommon_base is linked, which has no logger). */
#pragma GCC poison time clock_gettime gettimeofday printf fprintf puts syslog getenv

static const char *const acct_stall_table[_ACCT_STALL_MAX] = {
        [ACCT_STALL_CPU_SOME] = "cpu_some",
        [ACCT_STALL_CPU_FULL] = "cpu_full",
        [ACCT_STALL_MEMORY_SOME] = "memory_some",
        [ACCT_STALL_MEMORY_FULL] = "memory_full",
        [ACCT_STALL_IO_SOME] = "io_some",
        [ACCT_STALL_IO_FULL] = "io_full",
};

const char *acct_stall_to_string(AcctStall s) {
        return s >= 0 && s < _ACCT_STALL_MAX ? acct_stall_table[s] : NULL;
}

uint64_t acct_run_usec(uint64_t start_usec, uint64_t end_usec, uint64_t suspended_usec) {
        uint64_t span = end_usec > start_usec ? end_usec - start_usec : 0;

        return span > suspended_usec ? span - suspended_usec : 0;
}

uint64_t acct_gpu_usec(const JobCharge *c) {
        uint64_t u = (uint64_t) c->gpus * c->run_usec;

        if (c->shards_of == 0 || c->shards >= c->shards_of)
                return u;
        /* u × K / N without the product: u may be near 2^64 / K. */
        return u / c->shards_of * c->shards + u % c->shards_of * c->shards / c->shards_of;
}

void acct_charge_compute(JobCharge *c) {
        c->core_hours = (double) c->cpus * (double) c->run_usec / ACCT_USEC_PER_HOUR;
        c->gpu_hours = (double) acct_gpu_usec(c) / ACCT_USEC_PER_HOUR;
        c->service_units = (c->core_hours + c->gpu_hours * c->charge_per_gpu_hour) * c->charge_factor;
}

double acct_fairshare_hours(const JobCharge *c) {
        return (c->core_hours + c->gpu_hours * c->charge_per_gpu_hour) * acct_fairshare_weight(c->charge_factor);
}

double acct_efficiency(uint64_t cpu_usec, uint64_t core_usec) {
        return core_usec > 0 ? (double) cpu_usec / (double) core_usec : 0.0;
}

double acct_decay_factor(uint64_t dt, uint64_t half_life) {
        if (half_life == 0 || dt == 0)
                return 1.0;
        return exp2(-(double) dt / (double) half_life);
}

double acct_decayed_value(const AcctDecayed *d, uint64_t now, uint64_t half_life) {
        return now > d->stamp ? d->value * acct_decay_factor(now - d->stamp, half_life) : d->value;
}

void acct_decayed_add(AcctDecayed *d, double amount, uint64_t now, uint64_t half_life) {
        /* A clock that went back neither grows the value nor moves its stamp back. */
        d->value = acct_decayed_value(d, now, half_life) + amount;
        if (now > d->stamp)
                d->stamp = now;
}

double acct_fairshare_weight(double charge_factor) {
        return MAX(charge_factor, 1.0);
}

double acct_decay_credit(double amount, uint64_t span, uint64_t half_life) {
        double x;

        if (half_life == 0 || span == 0)
                return amount;
        /* ∫₀ˢ 2^(−(s−τ)/H) dτ / s = (1 − e^(−x)) / x with x = s ln2 / H; expm1 keeps it
         * exact for spans far below the half-life. */
        x = (double) span / (double) half_life * M_LN2;
        return amount * -expm1(-x) / x;
}

double acct_fairshare(double usage, double total) {
        double f;

        if (!(total > 0.0) || !(usage > 0.0))
                return ACCT_FAIRSHARE_MAX;
        f = ACCT_FAIRSHARE_MAX * (1.0 - usage / total);
        return f < 0.0 ? 0.0 : f > ACCT_FAIRSHARE_MAX ? ACCT_FAIRSHARE_MAX : f;
}

bool acct_grant_period(uint64_t start, uint64_t period, uint64_t now, uint64_t *ret_begin, uint64_t *ret_end) {
        uint64_t k, begin;

        if (now < start)
                return false;
        if (period == 0) {
                *ret_begin = start;
                *ret_end = UINT64_MAX;
                return true;
        }
        k = (now - start) / period;
        begin = start + k * period;
        *ret_begin = begin;
        *ret_end = begin > UINT64_MAX - period ? UINT64_MAX : begin + period;
        return true;
}

void usage_totals_add(UsageTotals *into, const UsageTotals *x) {
        into->jobs += x->jobs;
        into->core_usec += x->core_usec;
        into->gpu_usec += x->gpu_usec;
        into->service_units += x->service_units;
        into->cpu_usec += x->cpu_usec;
        into->memory_peak = MAX(into->memory_peak, x->memory_peak);
        into->io_read_bytes += x->io_read_bytes;
        into->io_write_bytes += x->io_write_bytes;
        into->io_ops += x->io_ops;
        for (size_t i = 0; i < _ACCT_STALL_MAX; i++)
                into->stall_usec[i] += x->stall_usec[i];
}

void usage_totals_from_charge(UsageTotals *ret, const JobCharge *c) {
        *ret = (UsageTotals) {
                .jobs = 1,
                .core_usec = (uint64_t) c->cpus * c->run_usec,
                .gpu_usec = acct_gpu_usec(c),
                .service_units = c->service_units,
                .cpu_usec = c->cpu_usec,
                .memory_peak = c->memory_peak,
                .io_read_bytes = c->io_read_bytes,
                .io_write_bytes = c->io_write_bytes,
                .io_ops = c->io_read_ops + c->io_write_ops,
        };
        if (c->has_pressure)
                memcpy(ret->stall_usec, c->stall_usec, sizeof ret->stall_usec);
}

char *acct_day(char *buf, size_t size, uint64_t t) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%d", &tm) == 0)
                snprintf(buf, size, "1970-01-01");
        return buf;
}

int acct_day_parse(const char *s, uint64_t *ret) {
        struct tm tm = {};
        const char *end;
        time_t t;

        if (!s || strlen(s) != 10)
                return -EINVAL;
        end = strptime(s, "%Y-%m-%d", &tm);
        if (!end || *end)
                return -EINVAL;
        t = timegm(&tm);
        if (t < 0)
                return -EINVAL;
        *ret = (uint64_t) t;
        return 0;
}
