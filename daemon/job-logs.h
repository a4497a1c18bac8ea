/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A job's journal output, read by corrald for its owner, who cannot read the system
 * journal. Job ids are not unique over time: a purged and reinstalled corrald starts
 * again at 1, and the old job 1's lines are still in the journal, with the same
 * CORRAL_JOB_ID= and the same unit name. So a line is the job's only if it was written
 * after the job was submitted (its output across requeues, none of an earlier job that
 * had the id). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct JobLogEntry {
        const char *corral_job_id;      /* CORRAL_JOB_ID='s value, the writer's word; NULL: none */
        const char *unit;               /* _SYSTEMD_UNIT='s, journald's record of the sender */
        uint64_t realtime_usec;         /* __REALTIME_TIMESTAMP */
} JobLogEntry;

typedef enum JobLogMatch {
        JOB_LOG_SKIP,           /* another job's, or a line forged by another unit */
        JOB_LOG_WANTED,
        JOB_LOG_BEFORE,         /* written before the job existed: an earlier job's with its id;
                                 * reading newest first, nothing older is wanted either */
} JobLogMatch;

/* Whether an entry is job job_id's output, the job having been submitted at since_usec
 * (CLOCK_REALTIME). Pure. */
JobLogMatch job_log_entry_match(uint64_t job_id, uint64_t since_usec, const JobLogEntry *e);

/* The lines of the job submitted at submit_time (seconds since the epoch), oldest first,
 * the newest max_lines (0: all) within a byte budget; NULL when the journal cannot be
 * read. */
json_object *job_logs_read(uint64_t job_id, uint64_t submit_time, uint64_t max_lines, bool *ret_truncated);
