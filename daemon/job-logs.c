/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-journal.h>

#include "job-logs.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"

JobLogMatch job_log_entry_match(uint64_t job_id, uint64_t since_usec, const JobLogEntry *e) {
        char unit[64];
        uint64_t id;

        /* Both fields of one entry: CORRAL_JOB_ID= is what the job's supervisor writes, but
         * any process may write it; _SYSTEMD_UNIT= is journald's own record of the
         * sender's cgroup, so another user's job cannot put lines here. */
        snprintf(unit, sizeof unit, "corral-job-%" PRIu64 ".scope", job_id);
        if (!e->corral_job_id || safe_atou64(e->corral_job_id, &id) < 0 || id != job_id || !e->unit ||
            !streq(e->unit, unit))
                return JOB_LOG_SKIP;
        /* Same id, same unit name, but from before the job was submitted: a job that had
         * the id before the database was purged. */
        if (e->realtime_usec < since_usec)
                return JOB_LOG_BEFORE;
        return JOB_LOG_WANTED;
}

/* The value of field in the current entry, cut to size; NULL when it has none. */
static const char *entry_field(sd_journal *jr, const char *field, char *buf, size_t size) {
        size_t fl = strlen(field), l;
        const void *d;

        if (sd_journal_get_data(jr, field, &d, &l) < 0 || l <= fl || ((const char *) d)[fl] != '=')
                return NULL;
        l -= fl + 1;
        if (l >= size)
                return NULL; /* longer than any value we look for */
        memcpy(buf, (const char *) d + fl + 1, l);
        buf[l] = 0;
        return buf;
}

#define LOGS_BUDGET (768U << 10)
json_object *job_logs_read(uint64_t job_id, uint64_t submit_time, uint64_t max_lines, bool *ret_truncated) {
        _cleanup_(sd_journal_closep) sd_journal *jr = NULL;
        uint64_t since_usec = submit_time * USEC_PER_SEC;
        json_object *lines;
        char match[64];
        size_t used = 0, n = 0;
        int r;

        *ret_truncated = false;
        if (sd_journal_open(&jr, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM) < 0)
                return NULL;
        /* The journal's index finds the candidates; job_log_entry_match() decides. */
        snprintf(match, sizeof match, "CORRAL_JOB_ID=%" PRIu64, job_id);
        if (sd_journal_add_match(jr, match, 0) < 0)
                return NULL;
        snprintf(match, sizeof match, "_SYSTEMD_UNIT=corral-job-%" PRIu64 ".scope", job_id);
        if (sd_journal_add_match(jr, match, 0) < 0 || sd_journal_seek_tail(jr) < 0)
                return NULL;
        lines = json_object_new_array();
        if (!lines)
                return NULL;
        while ((r = sd_journal_previous(jr)) > 0) {
                char id_buf[32], unit_buf[64];
                JobLogEntry e = {};
                JobLogMatch m;
                const void *d;
                size_t l;

                if (sd_journal_get_realtime_usec(jr, &e.realtime_usec) < 0)
                        continue;
                e.corral_job_id = entry_field(jr, "CORRAL_JOB_ID", id_buf, sizeof id_buf);
                e.unit = entry_field(jr, "_SYSTEMD_UNIT", unit_buf, sizeof unit_buf);
                m = job_log_entry_match(job_id, since_usec, &e);
                if (m == JOB_LOG_BEFORE)
                        break;
                if (m != JOB_LOG_WANTED)
                        continue;
                if (sd_journal_get_data(jr, "MESSAGE", &d, &l) < 0 || l < 8)
                        continue;
                if (used + l > LOGS_BUDGET || (max_lines && n >= max_lines)) {
                        *ret_truncated = true;
                        break;
                }
                used += l;
                n++;
                json_object_array_add(lines, json_object_new_string_len((const char *) d + 8, (int) (l - 8)));
        }
        /* Collected newest first. */
        for (size_t i = 0; i < n / 2; i++) {
                json_object *a = json_object_get(json_object_array_get_idx(lines, i));
                json_object *b = json_object_get(json_object_array_get_idx(lines, n - 1 - i));
                json_object_array_put_idx(lines, i, b);
                json_object_array_put_idx(lines, n - 1 - i, a);
        }
        return lines;
}
