/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which journal entries `corral logs` shows: the job's own, written by its scope, since
 * it was submitted; not those of an earlier job that had the same id (before the
 * database was purged), nor lines another unit wrote with the job's CORRAL_JOB_ID=. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>

#include "daemon/job-logs.h"

#define SUBMITTED UINT64_C(1700000000000000) /* usec */

static void test_match(void **state) {
        static const struct {
                JobLogEntry e;
                JobLogMatch want;
        } t[] = {
                { { "1", "corral-job-1.scope", SUBMITTED }, JOB_LOG_WANTED },
                { { "1", "corral-job-1.scope", SUBMITTED + 86400000000 }, JOB_LOG_WANTED }, /* a requeued run */
                /* The old job 1, before a purge and reinstall: same id, same unit. */
                { { "1", "corral-job-1.scope", SUBMITTED - 1 }, JOB_LOG_BEFORE },
                { { "1", "corral-job-1.scope", 0 }, JOB_LOG_BEFORE },
                /* Another job's scope writing CORRAL_JOB_ID=1, and job 11's own lines. */
                { { "1", "corral-job-2.scope", SUBMITTED + 5 }, JOB_LOG_SKIP },
                { { "11", "corral-job-11.scope", SUBMITTED + 5 }, JOB_LOG_SKIP },
                { { "1", "corral-job-11.scope", SUBMITTED + 5 }, JOB_LOG_SKIP },
                { { "01x", "corral-job-1.scope", SUBMITTED + 5 }, JOB_LOG_SKIP },
                { { NULL, "corral-job-1.scope", SUBMITTED + 5 }, JOB_LOG_SKIP },
                { { "1", NULL, SUBMITTED + 5 }, JOB_LOG_SKIP },
                /* Whatever its time, a line from elsewhere is skipped, not a reason to stop. */
                { { "1", "user@1000.service", SUBMITTED - 1 }, JOB_LOG_SKIP },
        };

        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                if (job_log_entry_match(1, SUBMITTED, &t[i].e) != t[i].want)
                        fail_msg("case %zu: got %d", i, job_log_entry_match(1, SUBMITTED, &t[i].e));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_match),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
