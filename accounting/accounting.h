/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Accounting arithmetic, pure: no clock, no store, no logging, so every rule is tested
 * against closed forms (tests/unit/test-accounting.c).
 *
 *   charge       allocated core-hours = CPUs × running time (suspended time excluded);
 *                GPU-hours = GPUs × running time;
 *                service units = (core-hours + GPU-hours × ChargePerGPUHour=) × the
 *                queue's ChargeFactor= (NCI's SU, with Slurm's TRESBillingWeights idea
 *                for GPUs);
 *                efficiency = used CPU time / allocated (seff's CPU efficiency)
 *   decay        a usage value stored with its timestamp, halved every half-life
 *                (IT4I: 168 h): value × 2^(−Δt/H) + charge, O(1) per job end
 *   fair-share   1e6 × (1 − usage_project / usage_total) (IT4I's MAX_FAIRSHARE form)
 *   grants       the period [begin, end) of GrantStart= + k × GrantPeriod= that holds now
 *   totals       the sums a report shows, merged over the per-day summary rows */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

#define ACCT_FAIRSHARE_MAX 1e6
#define ACCT_USEC_PER_HOUR 3600e6

/* Stall totals from the scope's pressure files (PSI), in this order. */
typedef enum AcctStall {
        ACCT_STALL_CPU_SOME,
        ACCT_STALL_CPU_FULL,
        ACCT_STALL_MEMORY_SOME,
        ACCT_STALL_MEMORY_FULL,
        ACCT_STALL_IO_SOME,
        ACCT_STALL_IO_FULL,
        _ACCT_STALL_MAX,
} AcctStall;

/* "cpu_some", ... : the names in JSON, CSV and the store's columns. */
const char *acct_stall_to_string(AcctStall s) _const_;

/* One run of one job: what it was charged and what it used. A requeued job is charged
 * for every run, each its own record (run = the job's requeue count then). */
typedef struct JobCharge {
        uint64_t job_id;
        uint32_t run;
        uid_t uid;
        const char *user, *project, *queue; /* borrowed */
        uint64_t start_time, end_time;      /* seconds since the epoch; end 0 while it runs */
        unsigned cpus;                      /* allocated */
        unsigned gpus;                      /* allocated */
        /* A shard job's K of its GPU's N shards (0 of 0: whole GPUs): charged K/N of the
         * GPU's hours, as Slurm bills gres/shard. */
        uint32_t shards, shards_of;
        uint64_t run_usec;                  /* running, suspended time excluded */
        double charge_factor;
        double charge_per_gpu_hour;         /* core-hours one GPU-hour counts as (ChargePerGPUHour=) */
        double core_hours, gpu_hours, service_units; /* acct_charge_compute() */
        uint64_t cpu_usec;                  /* used (cpu.stat usage_usec) */
        uint64_t memory_peak;
        uint64_t io_read_bytes, io_write_bytes, io_read_ops, io_write_ops;
        bool has_pressure;
        uint64_t stall_usec[_ACCT_STALL_MAX];
        bool live;                          /* read from a running job's cgroup: so far */
} JobCharge;

/* Running time: end − start − suspended, never below 0; 0 if end precedes start. */
uint64_t acct_run_usec(uint64_t start_usec, uint64_t end_usec, uint64_t suspended_usec) _const_;
/* GPUs × running time in µs, a shard job's at its K/N of its GPU's. */
uint64_t acct_gpu_usec(const JobCharge *c) _pure_;
/* Fills core_hours, gpu_hours and service_units from cpus, gpus, run_usec,
 * charge_per_gpu_hour and charge_factor. */
void acct_charge_compute(JobCharge *c);
/* What fair-share counts of a run: its core-hours and its GPU-hours at their weight, at
 * the queue's charge factor but never below 1 (acct_fairshare_weight()). */
double acct_fairshare_hours(const JobCharge *c) _pure_;
/* used / allocated, 0 when nothing was allocated. Above 1 only if the job had more CPU
 * time than its CPUs (accounting noise): not clamped, so such noise stays visible. */
double acct_efficiency(uint64_t cpu_usec, uint64_t core_usec) _const_;

/* ---- decay ---- */

typedef struct AcctDecayed {
        double value;   /* as of stamp */
        uint64_t stamp; /* seconds since the epoch */
} AcctDecayed;

/* 2^(−dt/half_life); 1 with half_life 0 (no decay). */
double acct_decay_factor(uint64_t dt, uint64_t half_life) _const_;
/* The value as of now (a stamp in the future, after the clock went back: as stored). */
double acct_decayed_value(const AcctDecayed *d, uint64_t now, uint64_t half_life) _pure_;
/* Decays to now and adds amount: O(1), whatever the history. */
void acct_decayed_add(AcctDecayed *d, double amount, uint64_t now, uint64_t half_life);
/* What amount, spread evenly over the span seconds that end now, is worth once each slice
 * has decayed from its own time: amount × (1 − 2^(−s/H)) / (s/H × ln 2). A job is added
 * so at its end, and a running job counts so at every reading, which makes its usage
 * continuous and exact for a job that never paused, without ticking running jobs. */
double acct_decay_credit(double amount, uint64_t span, uint64_t half_life) _const_;

/* What one core-hour of a queue with this ChargeFactor= adds to fair-share usage: the
 * factor, never below normal's 1. Express's 3 is what its precedence costs the users it
 * suspends or overtakes; a cheaper queue (bonus's 0) is a discount on the grant, not on
 * the CPUs its jobs held (corrald(8), QUEUES). */
double acct_fairshare_weight(double charge_factor) _const_;

/* 1e6 × (1 − usage / total), within [0, 1e6]; 1e6 when nothing was used. */
double acct_fairshare(double usage, double total) _const_;

/* ---- grants ---- */

/* The grant period holding now: [start + k × period, + period). false before start (no
 * grant in effect yet); period 0 is one period from start on (end UINT64_MAX). */
bool acct_grant_period(uint64_t start, uint64_t period, uint64_t now, uint64_t *ret_begin, uint64_t *ret_end);

/* ---- report totals ---- */

typedef struct UsageTotals {
        uint64_t jobs;          /* job runs */
        uint64_t core_usec;     /* allocated: CPUs × running µs */
        uint64_t gpu_usec;      /* allocated: GPUs × running µs */
        double service_units;
        uint64_t cpu_usec;      /* used */
        uint64_t memory_peak;   /* the largest of any one job */
        uint64_t io_read_bytes, io_write_bytes, io_ops;
        uint64_t stall_usec[_ACCT_STALL_MAX];
} UsageTotals;

void usage_totals_add(UsageTotals *into, const UsageTotals *x);
/* One job run as totals (jobs = 1). */
void usage_totals_from_charge(UsageTotals *ret, const JobCharge *c);

/* "YYYY-MM-DD" of t in UTC (the day a run is summarized under: the day it ended).
 * buf: at least 11 bytes. */
char *acct_day(char *buf, size_t size, uint64_t t);
/* The start of a UTC day "YYYY-MM-DD", -EINVAL for anything else. */
int acct_day_parse(const char *s, uint64_t *ret);
