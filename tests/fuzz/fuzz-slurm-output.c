/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The readers of the real Slurm client's output a forwarding queue runs (forward/): what
 * sbatch, squeue, sacct and scontrol print, which corrald parses as root. Input: one
 * selector byte ('p' sbatch --parsable, 'q' squeue, 'i' squeue of ids, 'a' sacct, 'c' scontrol, 't' a time,
 * 'r' a MaxRSS), then the text. Whatever parses is within what it claims: ids never 0,
 * states Corral knows or NULL, times that fit. */

#include <errno.h>

#include "forward/slurm.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SlurmJobStatus *st = NULL;
        SlurmJobRecord *rec = NULL;
        char *text, *cluster = NULL;
        uint64_t u, sid;
        size_t n = 0;
        int r;

        if (size < 1)
                return 0;
        text = fuzz_strndup(data + 1, size - 1);
        switch (data[0]) {
        case 'p':
                r = slurm_parse_parsable(text, &u, &cluster);
                fuzz_check(r == 0 || r == -EBADMSG);
                fuzz_check(r < 0 || u > 0);
                free(cluster);
                break;
        case 'q':
                r = slurm_parse_squeue(text, &st, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++) {
                        fuzz_check(st[i].job_id > 0 && st[i].array_job_id > 0);
                        fuzz_check(st[i].state && st[i].reason);
                        (void) slurm_state_to_corral(st[i].state, st[i].reason);
                }
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(st[i].user != NULL);
                if (r >= 0)
                        (void) slurm_find_key(st, n, "host", 1, "user", &sid);
                slurm_job_status_free_many(st, r >= 0 ? n : 0);
                break;
        case 'i':
                r = slurm_parse_squeue_ids(text, &st, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(st[i].job_id > 0 && st[i].array_job_id > 0 && st[i].user && !st[i].state &&
                                   !st[i].comment);
                slurm_job_status_free_many(st, r >= 0 ? n : 0);
                break;
        case 'a':
                r = slurm_parse_sacct(text, &rec, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(rec[i].job_id > 0 && rec[i].state && rec[i].exit_code >= 0);
                slurm_job_record_free_many(rec, r >= 0 ? n : 0);
                break;
        case 'c':
                r = slurm_parse_scontrol(text, &rec, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(rec[i].job_id > 0 && rec[i].state && rec[i].exit_code >= 0 && rec[i].user);
                slurm_job_record_free_many(rec, r >= 0 ? n : 0);
                break;
        case 't':
                r = slurm_parse_time(text, &u);
                fuzz_check(r == 0 || r == -EBADMSG);
                break;
        case 'r':
                r = slurm_parse_rss(text, &u);
                fuzz_check(r == 0 || r == -EBADMSG || r == -ERANGE);
                break;
        default:
                break;
        }
        free(text);
        return 0;
}
